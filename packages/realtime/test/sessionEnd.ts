import { expect } from 'vitest';
import type { Socket } from 'socket.io-client';
import { SESSION_ENDED_EVENT, SESSION_EVENT } from '@svc/realtime';
import { HttpClient, collect, login, settle, signUpAndLogin, until } from './helpers.js';
import type { RtServer } from './helpers.js';

/**
 * The ways a session ends, each checked the same way: right after the end (the HTTP answer, or
 * the call that ended it) a message emitted to the user, by id and by query, reaches the sockets
 * of the user's sessions still valid and none of the ended one's. `a` holds the sockets, the end
 * goes through `b` (the same server, or another process over Redis).
 */
export type Handshake = 'cookie' | 'bearer';

let counter = 0;
const fresh = (what: string) => `${what}-${process.pid}-${++counter}`;

/** A client of the same session on another server (processes share sessions through the store). */
function sameSessionOn(client: HttpClient, url: string): HttpClient {
  const other = new HttpClient(url);
  other.sid = client.sid;
  return other;
}

const root = { 'content-type': 'application/json', 'svc-ssh-key': 'dev' };

export interface Scenario {
  sockets: { close(): void }[];
  a: RtServer;
  b: RtServer;
  handshake: Handshake;
}

async function open(s: Scenario, client: HttpClient, url = s.a.url): Promise<Socket> {
  const socket = await client.socket(url, s.handshake);
  s.sockets.push(socket);
  return socket;
}

/** Emits to the user by id (from A) and by username (from B), and waits for `valid` to get both. */
async function emitAndCheck(s: Scenario, id: string, username: string, ended: Socket[], valid: Socket[]): Promise<void> {
  const gotEnded = ended.map((socket) => collect(socket, 'dm'));
  const gotValid = valid.map((socket) => collect(socket, 'dm'));
  await s.a.realtime.emitToUsers('/users', { id }, 'dm', 'by id');
  await s.b.realtime.emitToUsers('/users', { username }, 'dm', 'by query');
  await until(() => gotValid.every((got) => got.length === 2));
  await settle();
  // From two processes: the two may arrive in either order.
  expect(gotValid.map((got) => [...got].sort())).toEqual(valid.map(() => ['by id', 'by query']));
  expect(gotEnded).toEqual(ended.map(() => []));
}

export async function logoutEnds(s: Scenario): Promise<void> {
  const name = fresh('logout');
  const old = new HttpClient(s.a.url);
  const kept = new HttpClient(s.a.url);
  const id = await signUpAndLogin(old, name);
  await login(kept, name);
  const [oldSocket, keptSocket] = [await open(s, old), await open(s, kept, s.b.url)];
  const notices = collect(oldSocket, SESSION_ENDED_EVENT);
  expect((await sameSessionOn(old, s.b.url).request('POST', '/users/logout')).status).toBe(204);
  await emitAndCheck(s, id, name, [oldSocket], [keptSocket]);
  expect(notices).toHaveLength(1);
}

export async function passwordChangeEnds(s: Scenario): Promise<void> {
  const name = fresh('password');
  const first = new HttpClient(s.a.url);
  const second = new HttpClient(s.a.url);
  const changer = new HttpClient(s.a.url);
  const id = await signUpAndLogin(first, name);
  await login(second, name);
  await login(changer, name);
  const [s1, s2, s3] = [await open(s, first), await open(s, second, s.b.url), await open(s, changer)];
  const changed = await sameSessionOn(changer, s.b.url).request('PUT', `/users/${id}`, { password: 'new password' });
  expect(changed.status).toBe(200);
  await emitAndCheck(s, id, name, [s1, s2], [s3]);
  // The old sessions are gone: their ids bind nothing any more.
  expect(await s1.timeout(2000).emitWithAck(SESSION_EVENT, first.sid)).toEqual({ ok: false });
}

export async function userDeletionEnds(s: Scenario): Promise<void> {
  const name = fresh('deleted');
  const client = new HttpClient(s.a.url);
  const id = await signUpAndLogin(client, name);
  const socket = await open(s, client);
  const notices = collect(socket, SESSION_ENDED_EVENT);
  const got = collect(socket, 'dm');
  const removed = await fetch(`${s.b.url}/users/${id}`, { method: 'DELETE', headers: root });
  expect(removed.status).toBe(204);
  // The user is gone, so no query finds it: the user room itself must not reach the socket.
  s.a.realtime.io!.to(`u:${id}`).emit('dm', 'to the room');
  s.b.realtime.io!.to(`u:${id}`).emit('dm', 'to the room from b');
  await until(() => notices.length === 1);
  await settle();
  expect(got).toEqual([]);
  expect(await s.a.server.sessions.load(client.sid)).toBeNull();
}

export async function sweepEnds(s: Scenario): Promise<void> {
  const name = fresh('swept');
  const old = new HttpClient(s.a.url);
  const id = await signUpAndLogin(old, name);
  const oldSocket = await open(s, old);
  // Every session of the shared store is idle past its time from the sweep's point of view.
  expect(await s.b.server.sessions.sweep(Date.now() + s.b.server.sessions.idleSeconds * 1000 + 60_000)).toBeGreaterThan(0);
  const later = new HttpClient(s.a.url);
  await login(later, name);
  await emitAndCheck(s, id, name, [oldSocket], [await open(s, later, s.b.url)]);
}
