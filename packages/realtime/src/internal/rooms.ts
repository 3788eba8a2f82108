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

/** '/Users/' -> '/users': resource paths compare case-insensitively, without a trailing slash. */
export function normalisePath(path: string): string {
  const withSlash = path.startsWith('/') ? path : `/${path}`;
  return (withSlash.length > 1 && withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash).toLowerCase();
}
