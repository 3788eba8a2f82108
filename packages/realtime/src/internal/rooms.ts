/** The room of every socket of a session. */
export function sessionRoom(sessionId: string): string {
  return `s:${sessionId}`;
}

/** The room of every socket of a logged-in user (ids are unique across user collections). */
export function userRoom(uid: string): string {
  return `u:${uid}`;
}

/** True for the rooms that tie a socket to a session or a user. */
export function isBindingRoom(room: string): boolean {
  return room.startsWith('s:') || room.startsWith('u:');
}

/** Reads one cookie's value from a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue;
    const raw = part.slice(eq + 1).trim();
    try {
      return decodeURIComponent(raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** '/Users/' -> '/users': resource paths compare case-insensitively, without a trailing slash. */
export function normalisePath(path: string): string {
  const withSlash = path.startsWith('/') ? path : `/${path}`;
  return (withSlash.length > 1 && withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash).toLowerCase();
}
