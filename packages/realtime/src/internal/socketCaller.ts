import type { Socket } from 'socket.io';
import { isUserResource } from '@svc/core';
import type { Context, Doc, SvcServer } from '@svc/core';

/** A request context without its scope: who a socket's caller is, as a GET of theirs would carry it. */
export type Caller = Omit<Context, 'scope'>;

/**
 * The caller of a socket, as a GET of theirs would be: its session and user (loaded now), never
 * root, never a script; an anonymous visitor when the socket has no session. Undefined when its
 * session ended or the socket was bound to another one meanwhile. `showing` marks the contexts
 * realtime shows objects with (their On Get cannot emit).
 */
export async function callerOf(server: SvcServer, socket: Socket): Promise<Caller | undefined> {
  const sid = (socket.data as { sid?: string }).sid;
  let me: Doc | undefined;
  let session: Context['session'] = { id: '', isNew: true };
  if (sid !== undefined) {
    const record = await server.sessions.load(sid);
    if (record === null) return undefined;
    session = { id: record.id, uid: record.uid, path: record.path, isNew: false };
    if (record.uid !== undefined && record.path !== undefined) {
      const users = server.resources.find((r) => r.path === record.path);
      const user = users && isUserResource(users) ? await users.findUser(record.uid) : null;
      if (user === null) return undefined;
      me = user as Doc;
    }
    if ((socket.data as { sid?: string }).sid !== sid) return undefined;
  }
  return {
    method: 'GET',
    originalMethod: 'GET',
    url: '/',
    parts: [],
    query: {},
    body: undefined,
    bodyKind: 'none',
    headers: socket.request.headers,
    session,
    me,
    isRoot: false,
    internal: false,
    showing: true,
  };
}
