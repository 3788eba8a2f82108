import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Collection, createEmbeddedStore, SessionManager, UserCollection } from '@svc/core';
import type { Store } from '@svc/core';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 11 (5): every request without a cookie stored a new 30-day session (752,622 in 60 s of
// plain GETs, RSS 126 -> 474 MB and rising).

let dir: string;
let store: Store;
let t: TestServer;

const sidOf = (res: Response) => /(?:^|, )sid=([0-9a-f]*)/.exec(res.headers.getSetCookie().join(', '))?.[1];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-anon-'));
  store = await createEmbeddedStore({ dir });
  t = await startTestServer(store, [
    new UserCollection({ path: '/users', properties: {}, store: store.collection('users'), passwordCost: 4 }),
    new Collection({ path: '/todos', properties: { title: { type: 'string' } }, store: store.collection('todos') }),
  ]);
  await t.client().request('POST', '/users', { body: { username: 'ann', password: 'pw-ann' } });
});

afterAll(async () => {
  await t.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('anonymous visitors', () => {
  it('1,000 requests without a cookie each get a sid cookie, and the store gets no session', async () => {
    const before = await store.collection('_sessions').count({});
    const sids = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const res = await fetch(`${t.url}/todos`);
      await res.arrayBuffer();
      const sid = sidOf(res);
      expect(sid).toMatch(/^[0-9a-f]{128}$/);
      sids.add(sid as string);
    }
    expect(sids.size).toBe(1000);
    expect(await store.collection('_sessions').count({})).toBe(before);
  });

  it('an anonymous sid sent back is kept (no new cookie); a forged or altered one is replaced', async () => {
    const first = await fetch(`${t.url}/todos`);
    const sid = sidOf(first) as string;
    const again = await fetch(`${t.url}/todos`, { headers: { cookie: `sid=${sid}` } });
    expect(sidOf(again)).toBeUndefined();
    const forged = 'ab'.repeat(64);
    expect(sidOf(await fetch(`${t.url}/todos`, { headers: { cookie: `sid=${forged}` } }))).toMatch(/^[0-9a-f]{128}$/);
    const altered = sid.slice(0, 127) + (sid.endsWith('0') ? '1' : '0');
    const replaced = sidOf(await fetch(`${t.url}/todos`, { headers: { cookie: `sid=${altered}` } }));
    expect(replaced).toMatch(/^[0-9a-f]{128}$/);
    expect(replaced).not.toBe(altered);
  });

  it('a login stores a session under a new id; logout removes it', async () => {
    const anon = sidOf(await fetch(`${t.url}/todos`)) as string;
    const before = await store.collection('_sessions').count({});
    const login = await fetch(`${t.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json', cookie: `sid=${anon}` }, body: '{"username":"ann","password":"pw-ann"}' });
    const session = (await login.json()) as { id: string };
    expect(session.id).not.toBe(anon);
    expect(await store.collection('_sessions').count({})).toBe(before + 1);
    const me = await fetch(`${t.url}/users/me`, { headers: { cookie: `sid=${session.id}` } });
    expect(await me.json()).toMatchObject({ username: 'ann' });
    await fetch(`${t.url}/users/logout`, { method: 'POST', headers: { cookie: `sid=${session.id}` } });
    expect(await store.collection('_sessions').count({})).toBe(before);
  });
});

describe('a new visitor (no cookie, no token)', () => {
  it('is a new anonymous visitor at once: its GET by id is answered without the full path, with its new id in Set-Cookie, as a returning visitor is answered', async () => {
    const made = await fetch(`${t.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'one' }) });
    const { id } = (await made.json()) as { id: string };
    const handled = vi.spyOn(Collection.prototype, 'handle');
    try {
      const first = await fetch(`${t.url}/todos/${id}`);
      const sid = sidOf(first) as string;
      expect(sid).toMatch(/^[0-9a-f]{128}$/);
      const body = await first.text();
      expect(JSON.parse(body)).toEqual({ id, title: 'one' });
      // Answered at once (the server's answerNow), as a returning visitor's GET is: no context, no handle().
      expect(handled).not.toHaveBeenCalled();
      // The id is a signed anonymous one: sent back, it is kept, and the answer is the same.
      const again = await fetch(`${t.url}/todos/${id}`, { headers: { cookie: `sid=${sid}` } });
      expect(sidOf(again)).toBeUndefined();
      expect(await again.text()).toBe(body);
      expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
      // What the full path answers (a list) gets a new id too, and a bearer token (even one that
      // names nothing) is an id sent: no new cookie beside it.
      expect(sidOf(await fetch(`${t.url}/todos`))).toMatch(/^[0-9a-f]{128}$/);
      expect(handled).toHaveBeenCalledTimes(1);
      expect(sidOf(await fetch(`${t.url}/todos/${id}`, { headers: { authorization: `Bearer ${'ab'.repeat(64)}` } }))).toBeUndefined();
    } finally {
      handled.mockRestore();
    }
  });
});

describe('anonymous ids as made', () => {
  it('are HMAC-SHA256 of fresh random parts under the stored key, across many draws of the random pool', async () => {
    const sessions = new SessionManager(store.collection('_sessions'));
    await sessions.init();
    const doc = (await store.collection('_sessions').findOne({ id: 'svc:anonymous-session-key' })) as unknown as { key: string };
    const key = Buffer.from(doc.key, 'hex');
    const randoms = new Set<string>();
    // 1,000 ids: the random parts are drawn 64 at a time, so this spans 16 draws.
    for (let i = 0; i < 1000; i++) {
      const { id } = await sessions.create();
      expect(id).toMatch(/^[0-9a-f]{128}$/);
      const random = id.slice(0, 96);
      randoms.add(random);
      expect(id.slice(96)).toBe(createHmac('sha256', key).update(Buffer.from(random, 'hex')).digest('hex').slice(0, 32));
      expect(sessions.anonymous(id)?.anonymous).toBe(true);
    }
    expect(randoms.size).toBe(1000);
    // Verifying an id in between does not disturb the next one's signature (the same buffers sign both).
    const a = (await sessions.create()).id;
    const altered = a.slice(0, 10) + (a[10] === '0' ? '1' : '0') + a.slice(11);
    expect(sessions.anonymous(altered)).toBeUndefined();
    const b = (await sessions.create()).id;
    expect(sessions.anonymous(b)?.anonymous).toBe(true);
    expect(b.slice(96)).toBe(createHmac('sha256', key).update(Buffer.from(b.slice(0, 96), 'hex')).digest('hex').slice(0, 32));
    // Per connection: the id it presented last is known, any other is checked again.
    const connection = {};
    const other = {};
    for (let round = 0; round < 2; round++) {
      expect(sessions.anonymous(altered, connection)).toBeUndefined();
      expect(sessions.anonymous(a, connection)?.id).toBe(a);
      expect(sessions.anonymous(a.slice(0, 127) + (a[127] === '0' ? '1' : '0'), connection)).toBeUndefined();
      expect(sessions.anonymous(`${a.slice(0, 64)}${a.slice(64)}`, connection)?.id).toBe(a);
      expect(sessions.anonymous(altered, connection)).toBeUndefined();
      expect(sessions.anonymous(altered, other)).toBeUndefined();
      expect(sessions.anonymous(b, other)?.id).toBe(b);
    }
    // A forged id never verified, presented on a connection first: refused each time.
    const forged = 'f'.repeat(128);
    const third = {};
    expect(sessions.anonymous(forged, third)).toBeUndefined();
    expect(sessions.anonymous(forged, third)).toBeUndefined();
  });
});

describe('whether an id is anonymous, remembered by the id', () => {
  it("a stored session's id, or a forged one, is hashed once whatever connection presents it; an anonymous one stays one", async () => {
    const sessions = new SessionManager(store.collection('_sessions'));
    await sessions.init();
    const signs = vi.spyOn(sessions as unknown as { sign: (random: Buffer) => Buffer }, 'sign');
    // The login found the new id not anonymous: its hashes are made there, once.
    const stored = await sessions.login(undefined, 'user-9', '/users');
    expect(signs).toHaveBeenCalledTimes(1);
    for (const connection of [{}, {}, undefined, {}]) {
      expect(sessions.anonymous(stored.id, connection)).toBeUndefined();
      expect(await sessions.load(stored.id, connection)).toMatchObject({ id: stored.id, uid: 'user-9' });
      expect(await sessions.check(stored.id)).toMatchObject({ uid: 'user-9' });
    }
    expect(signs).toHaveBeenCalledTimes(1);
    const anon = (await sessions.create()).id;
    const forged = `${anon.slice(0, 96)}${'0'.repeat(32)}`;
    signs.mockClear();
    for (const connection of [{}, {}, undefined]) {
      expect(sessions.anonymous(forged, connection)).toBeUndefined();
      expect(await sessions.load(forged, connection)).toBeNull();
      expect(sessions.anonymous(anon, connection)?.anonymous).toBe(true);
    }
    // Each id once: the forged one, and the anonymous one (verified at its first presentation).
    expect(signs).toHaveBeenCalledTimes(2);
    signs.mockClear();
    // Not well-formed: never remembered, refused by the pattern each time (no hash made).
    const malformed = `${'g'.repeat(128)}`;
    for (let i = 0; i < 2; i++) {
      expect(sessions.anonymous(malformed, {})).toBeUndefined();
      expect(await sessions.load(malformed, {})).toBeNull();
    }
    expect(signs).toHaveBeenCalledTimes(0);
    // Ended: the store says so, not the memory.
    await sessions.destroy(stored.id);
    expect(await sessions.load(stored.id, {})).toBeNull();
  });
});

describe('a stored session on a keep-alive connection', () => {
  it('is found not anonymous once per connection, and still read from the store at every request', async () => {
    const sessions = new SessionManager(store.collection('_sessions'));
    await sessions.init();
    const connection = {};
    const stored = await sessions.login(undefined, 'user-1', '/users');
    for (let round = 0; round < 2; round++) {
      expect(sessions.anonymous(stored.id, connection)).toBeUndefined();
      expect(await sessions.load(stored.id, connection)).toMatchObject({ id: stored.id, uid: 'user-1' });
    }
    // Known on the connection as not anonymous, but ended: the store says so, not the memory.
    await sessions.destroy(stored.id);
    expect(sessions.anonymous(stored.id, connection)).toBeUndefined();
    expect(await sessions.load(stored.id, connection)).toBeNull();
    // Another id on the same connection is checked anew: an anonymous one is one, a forged one is nothing.
    const anon = (await sessions.create()).id;
    expect(sessions.anonymous(anon, connection)?.anonymous).toBe(true);
    expect((await sessions.load(anon, connection))?.anonymous).toBe(true);
    const forged = `${anon.slice(0, 96)}${'0'.repeat(32)}`;
    expect(sessions.anonymous(forged, connection)).toBeUndefined();
    expect(await sessions.load(forged, connection)).toBeNull();
    // A session stored later under an id this connection already presented is found (nothing negative is kept).
    const again = await sessions.login(undefined, 'user-2', '/users');
    expect(sessions.anonymous(again.id, connection)).toBeUndefined();
    expect(await sessions.load(again.id, connection)).toMatchObject({ uid: 'user-2' });
    // And the anonymous id presented after it is still anonymous there.
    expect(sessions.anonymous(anon, connection)?.anonymous).toBe(true);
  });
});
