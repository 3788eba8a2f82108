/**
 * Keeps the cookies of one server between calls, for Node (a browser keeps them itself). Enough
 * for the sid cookie: name=value, removed by Max-Age<=0 or an Expires in the past.
 */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  /** Takes the Set-Cookie headers of a response. */
  store(setCookies: readonly string[]): void {
    for (const line of setCookies) {
      const [pair = '', ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || attributes.some(isExpired)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  /** The Cookie header to send, or undefined when there is none. */
  header(): string | undefined {
    if (this.cookies.size === 0) return undefined;
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

function isExpired(attribute: string): boolean {
  const eq = attribute.indexOf('=');
  if (eq === -1) return false;
  const key = attribute.slice(0, eq).trim().toLowerCase();
  const value = attribute.slice(eq + 1).trim();
  if (key === 'max-age') return Number(value) <= 0;
  if (key === 'expires') return Date.parse(value) <= Date.now();
  return false;
}
