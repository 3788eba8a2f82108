import type { Socket } from 'socket.io';
import { Collection, createRequestScope, isPlainObject } from '@svc/core';
import type { Context, Doc, Logger, SvcServer } from '@svc/core';
import { callerOf } from './socketCaller.js';
import { normalisePath, userRoom } from './rooms.js';

/** The server-side event carrying an emit of objects to the other processes (each filters for its own sockets). */
export const PEER_SHOWN = 'svc:shown';

/** An emit of a collection's objects, as processes pass it on. */
export interface ShownEmit {
  /** The collection's path. */
  p: string;
  /** The message name. */
  m: string;
  /** The object or objects, as the script emitted them. */
  d: unknown;
  /** Only these users' sockets; absent: every socket. */
  u?: string[];
}

/** Whether emitted data is objects of a collection: an object with a string id, or an array of only such. */
export function isObjectData(data: unknown): boolean {
  if (Array.isArray(data)) return data.length > 0 && data.every((d) => isPlainObject(d) && typeof d.id === 'string');
  return isPlainObject(data) && typeof data.id === 'string';
}

export function parseShownEmit(value: unknown): ShownEmit | undefined {
  if (!isPlainObject(value) || typeof value.p !== 'string' || typeof value.m !== 'string') return undefined;
  if (value.u !== undefined && !(Array.isArray(value.u) && value.u.every((u) => typeof u === 'string'))) return undefined;
  return { p: value.p, m: value.m, d: value.d, ...(value.u !== undefined ? { u: value.u as string[] } : {}) };
}

/**
 * Delivers an emit of objects to this process's sockets: grouped by who they are (one group of
 * anonymous sockets, one per user), each group gets the objects through `showTo` as that caller.
 */
export async function deliverShown(server: SvcServer, sockets: Iterable<Socket>, emit: ShownEmit, logger: Logger): Promise<void> {
  const collection = server.resources.find((r) => normalisePath(r.path) === normalisePath(emit.p));
  if (!(collection instanceof Collection)) return;
  const docs = (Array.isArray(emit.d) ? emit.d : [emit.d]) as Doc[];
  const groups = new Map<string, Socket[]>();
  for (const socket of sockets) {
    const { sid, uid } = socket.data as { sid?: string; uid?: string };
    const key = uid !== undefined && sid !== undefined ? `u:${uid}` : 'anonymous';
    const group = groups.get(key);
    if (group) group.push(socket);
    else groups.set(key, [socket]);
  }
  await Promise.all(
    [...groups.values()].map(async (group) => {
      try {
        const caller = await callerOf(server, group[0] as Socket);
        if (!caller) return;
        const ctx: Context = { ...caller, scope: createRequestScope(server.clientOf((group[0] as Socket).request).address) };
        const shown = await collection.showTo(ctx, docs);
        const payload = Array.isArray(emit.d) ? shown.filter((o) => o !== null) : shown[0];
        if (payload === null || payload === undefined || (Array.isArray(payload) && payload.length === 0)) return;
        for (const socket of group) socket.emit(emit.m, payload);
      } catch (err) {
        // A group's On Get failing must not keep the message from the others.
        logger.warn(`realtime: an emit of ${emit.p} objects could not be shown to some sockets`, { error: err });
      }
    }),
  );
}

/** This process's sockets an emit goes to: all, or those of the given users. */
export function recipientsOf(io: { of(name: string): { sockets: Map<string, Socket>; adapter: { rooms: Map<string, Set<string>> } } }, uids: readonly string[] | undefined): Socket[] {
  const nsp = io.of('/');
  if (uids === undefined) return [...nsp.sockets.values()];
  const out: Socket[] = [];
  for (const uid of uids) {
    for (const id of nsp.adapter.rooms.get(userRoom(uid)) ?? []) {
      const socket = nsp.sockets.get(id);
      if (socket) out.push(socket);
    }
  }
  return out;
}
