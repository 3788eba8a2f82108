import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The root check of the `svc-ssh-key` header. Development accepts any value from this machine (a
 * loopback client address: a development server listening on a network, or attached to a host
 * server that does, is no open admin door); production only a key of `.svc/keys.json`, compared in constant time (hashes of equal length, so neither the
 * content nor the length of a key leaks through timing).
 */
export class RootKeys {
  private readonly source: () => readonly string[];
  private seen: readonly string[] | undefined;
  private digests: Buffer[] = [];

  /**
   * `keys` is a list, or a function asked at every production root check (the server's keys.json
   * is read again when it changes, so that a removed key stops working at once); it answers the
   * same array while nothing changed, and the digests are kept for it.
   */
  constructor(keys: readonly string[] | (() => readonly string[])) {
    this.source = typeof keys === 'function' ? keys : () => keys;
  }

  /**
   * `request` (its Host and Origin headers) narrows development's root further: the Host must be a
   * loopback name and a browser's Origin, when sent, that same host. Otherwise any web page open in
   * the developer's browser could be root on the development server, by a cross-origin call (CORS
   * admits any origin in development) or by pointing a name of its own at 127.0.0.1 (DNS rebinding).
   */
  isRoot(header: string | undefined, production: boolean, clientAddress?: string, request?: { host?: string | undefined; origin?: string | undefined }): boolean {
    if (header === undefined || header === '') return false;
    if (!production) {
      if (clientAddress !== undefined && !isLoopback(clientAddress)) return false;
      if (request === undefined) return true;
      const host = request.host ?? '';
      if (!isLocalHostName(host)) return false;
      return request.origin === undefined || originHost(request.origin) === host.toLowerCase();
    }
    const keys = this.source();
    if (keys !== this.seen) {
      this.digests = keys.map(digest);
      this.seen = keys;
    }
    const candidate = digest(header);
    let ok = false;
    for (const key of this.digests) ok = timingSafeEqual(key, candidate) || ok;
    return ok;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

/** A Host header naming this machine: localhost (and *.localhost), 127.x.x.x or [::1], any port. */
export function isLocalHostName(host: string): boolean {
  const lower = host.toLowerCase();
  const name = lower.startsWith('[') ? lower.slice(0, lower.indexOf(']') + 1) : lower.replace(/:\d+$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) || name === '[::1]';
}

function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return undefined;
  }
}
