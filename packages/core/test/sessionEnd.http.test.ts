import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEmbeddedStore, UserCollection } from '@svc/core';
import type { Store } from '@svc/core';
import { startTestServer } from './helpers/http.js';
import type { TestClient, TestServer } from './helpers/http.js';

// Issue 21 (4): every path that removes a stored session tells SessionManager.onEnd (realtime
// unbinds the session's sockets with it), and the request that ended it answers only after.

let dir: string;
let store: Store;
let t: TestServer;
const ended: string[] = [];
const root = { 'svc-ssh-key': 'dev' };
let n = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-end-'));
  store = await createEmbeddedStore({ dir });
  t = await startTestServer(store, [new UserCollection({ path: '/users', properties: {}, store: store.collection('users'), passwordCost: 4 })], { sessions: { idleSeconds: 60 } });
  t.server.sessions.onEnd(async (ids) => {
    // A slow listener: the ending request must still wait for it.
    await new Promise((r) => setTimeout(r, 20));
    ended.push(...ids);
  });
});
afterAll(async () => {
  await t.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  ended.length = 0;
});

async function user(): Promise<{ id: string; name: string }> {
  const name = `u${++n}`;
  const made = await t.client().request('POST', '/users', { body: { username: name, password: 'pw' }, headers: root });
  return { id: (made.body as { id: string }).id, name };
}

async function loggedIn(name: string, password = 'pw'): Promise<TestClient> {
  const c = t.client();
  expect((await c.request('POST', '/users/login', { body: { username: name, password } })).status).toBe(200);
  return c;
}

describe('SessionManager.onEnd', () => {
  it('logout', async () => {
    const { name } = await user();
    const c = await loggedIn(name);
    const sid = c.sid!;
    await c.request('POST', '/users/logout');
    expect(ended).toEqual([sid]);
  });

  it('a password change: the other sessions, not the one that changed it', async () => {
    const { id, name } = await user();
    const [a, b, me] = [await loggedIn(name), await loggedIn(name), await loggedIn(name)];
    expect((await me.request('PUT', `/users/${id}`, { body: { password: 'new' } })).status).toBe(200);
    expect(ended.sort()).toEqual([a.sid!, b.sid!].sort());
  });

  it('a deleted user, by id and by a condition on id', async () => {
    const [u1, u2] = [await user(), await user()];
    const [c1, c2] = [await loggedIn(u1.name), await loggedIn(u2.name)];
    expect((await t.client().request('DELETE', `/users/${u1.id}`, { headers: root })).status).toBe(204);
    expect(ended).toEqual([c1.sid!]);
    const query = encodeURIComponent(JSON.stringify({ $in: [u2.id] }));
    expect((await t.client().request('DELETE', `/users?id=${query}`, { headers: root })).status).toBe(204);
    expect(ended).toEqual([c1.sid!, c2.sid!]);
    expect(await t.server.sessions.load(c2.sid)).toBeNull();
  });

  it('idle expiry noticed by a request, by check() and by the sweep', async () => {
    const { name } = await user();
    const [a, b, c] = [await loggedIn(name), await loggedIn(name), await loggedIn(name)];
    const sessions = store.collection('_sessions');
    const sids = [a.sid!, b.sid!, c.sid!];
    for (const sid of sids) await sessions.update({ id: sid }, { $set: { lastSeen: Date.now() - 61_000 } });
    // The request goes on with a new anonymous session.
    await a.request('GET', '/users/me');
    expect(ended).toEqual([sids[0]]);
    expect(await t.server.sessions.check(sids[1]!)).toBeNull();
    expect(ended).toEqual(sids.slice(0, 2));
    expect(await t.server.sessions.sweep()).toBe(1);
    expect(ended).toEqual(sids);
  });

  it('many sessions end in batches of 1000 (one removal and one notice each)', async () => {
    const batches: number[] = [];
    const stop = t.server.sessions.onEnd((ids) => void batches.push(ids.length));
    const sessions = store.collection('_sessions');
    const now = Date.now();
    for (let i = 0; i < 2500; i++) await sessions.insert({ id: randomBytes(64).toString('hex'), uid: 'many', path: '/users', createdAt: now, lastSeen: now });
    expect(await t.server.sessions.endUserSessions('many')).toBe(2500);
    stop();
    expect(batches).toEqual([1000, 1000, 500]);
    expect(await sessions.count({ uid: 'many' })).toBe(0);
  });

  it('check() does not count as a visit; a login replaces the previous session without ending it', async () => {
    const { name } = await user();
    const c = await loggedIn(name);
    const sessions = store.collection('_sessions');
    const old = Date.now() - 30_000;
    await sessions.update({ id: c.sid! }, { $set: { lastSeen: old } });
    expect((await t.server.sessions.check(c.sid!))?.lastSeen).toBe(old);
    expect((await sessions.findOne({ id: c.sid! }))?.lastSeen).toBe(old);
    await c.request('POST', '/users/login', { body: { username: name, password: 'pw' } });
    expect(ended).toEqual([]);
  });
});
