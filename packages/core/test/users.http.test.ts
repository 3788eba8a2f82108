import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, UserCollection } from '@svc/core';
import type { Context, Resource } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

type Obj = Record<string, unknown> & { id: string };
const FAST_COST = 4;

function users(store: TestStore, options: { max?: number } = {}): UserCollection {
  return new UserCollection({
    path: '/users',
    properties: { displayName: { type: 'string' }, age: { type: 'number' } },
    store: store.store.collection('users'),
    passwordCost: FAST_COST,
    loginRateLimit: { max: options.max ?? 1000 },
  });
}

describe.each(storeKinds())('users and sessions ($name store)', { concurrent: true }, (kind) => {
  // The stores side by side (their apps are apart); each store's tests one at a time, in order.
  describe('one test at a time', { concurrent: false }, () => {
    let store: TestStore;
    let t: TestServer;

    beforeAll(async () => {
      store = await kind.make();
      // 1,000 concurrent sign-ups come from one address: no per-address connection cap here.
      t = await startTestServer(store.store, [users(store), new Collection({ path: '/todos', properties: { title: { type: 'string' } }, store: store.store.collection('todos') })], {
        http: { maxConnectionsPerAddress: 0 },
      });
    });
    afterAll(async () => {
      await t.close();
      await store.dispose();
    });

    async function signUp(username: string, password = 'secret', extra: Record<string, unknown> = {}): Promise<Obj> {
      const res = await t.client().request('POST', '/users', { body: { username, password, ...extra } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body as Obj;
    }

    describe('the session state table', () => {
      it('no sid cookie: a session is created and set as an HttpOnly, SameSite=Lax cookie', async () => {
        const c = t.client();
        const res = await c.request('GET', '/todos');
        const cookie = res.headers.getSetCookie()[0] ?? '';
        expect(cookie).toMatch(/^sid=[0-9a-f]{128}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
        const again = await c.request('GET', '/todos');
        expect(again.headers.getSetCookie()).toEqual([]);
      });

      it('the cookie is Secure behind HTTPS (x-forwarded-proto from a trusted proxy) and SameSite=None; Secure for cross-site apps', async () => {
        // Issue 23 (1): only a proxy that trustProxy names says how the client connected.
        const untrusted = await t.client().request('GET', '/todos', { headers: { 'x-forwarded-proto': 'https' } });
        expect(untrusted.headers.getSetCookie()[0]).toMatch(/; HttpOnly; SameSite=Lax$/);
        const behindProxy = await startTestServer(store.store, [new Collection({ path: '/y', properties: {}, store: store.store.collection('y') })], { trustProxy: ['loopback'] });
        try {
          const https = await behindProxy.request('GET', '/y', { headers: { 'x-forwarded-proto': 'https' } });
          expect(https.headers.getSetCookie()[0]).toMatch(/; HttpOnly; Secure; SameSite=Lax$/);
        } finally {
          behindProxy.server.httpServer.close();
        }
        const cross = await startTestServer(store.store, [], { crossSiteCookies: true });
        try {
          const res = await cross.request('GET', '/nothing');
          expect(res.headers.getSetCookie()).toEqual([]);
          const withResource = await startTestServer(store.store, [new Collection({ path: '/x', properties: {}, store: store.store.collection('x') })], { crossSiteCookies: true });
          const ok = await withResource.request('GET', '/x');
          expect(ok.headers.getSetCookie()[0]).toMatch(/; HttpOnly; Secure; SameSite=None$/);
          await withResource.server.httpServer.close();
        } finally {
          cross.server.httpServer.close();
        }
      });

      it('a forged sid is treated as no session', async () => {
        const forged = randomBytes(32).toString('hex');
        const res = await t.client().request('GET', '/todos', { headers: { cookie: `sid=${forged}` } });
        const cookie = res.headers.getSetCookie()[0] ?? '';
        expect(cookie).toMatch(/^sid=[0-9a-f]{128}/);
        expect(cookie).not.toContain(forged);
        const junk = await t.client().request('GET', '/todos', { headers: { cookie: 'sid=../../etc; other=1' } });
        expect(junk.status).toBe(200);
      });

      it('login with valid credentials answers the session record under a fresh session id', async () => {
        const user = await signUp('ada');
        const c = t.client();
        await c.request('GET', '/todos');
        const before = c.sid;
        const res = await c.request('POST', '/users/login', { body: { username: 'ada', password: 'secret' } });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ id: c.sid, path: '/users', uid: user.id });
        expect(c.sid).not.toBe(before);
        const me = await c.request('GET', '/users/me');
        expect(me.status).toBe(200);
        expect(me.body).toEqual({ id: user.id, username: 'ada' });
        // The pre-login id is worthless now (no session fixation).
        const old = await t.client().request('GET', '/users/me', { headers: { cookie: `sid=${before}` } });
        expect(old.status).toBe(204);
      });

      it('wrong username and wrong password both answer 401 "bad credentials"', async () => {
        await signUp('bob');
        for (const body of [{ username: 'bob', password: 'nope' }, { username: 'nobody', password: 'secret' }]) {
          const res = await t.client().request('POST', '/users/login', { body });
          expect(res.status).toBe(401);
          expect(res.body).toEqual({ status: 401, statusCode: 401, message: 'bad credentials' });
        }
      });

      it('logout destroys the session, clears the cookie and answers an empty body', async () => {
        await signUp('cy');
        const c = t.client();
        await c.request('POST', '/users/login', { body: { username: 'cy', password: 'secret' } });
        const sid = c.sid;
        const res = await c.request('POST', '/users/logout');
        expect(res.status).toBe(204);
        expect(res.text).toBe('');
        expect(res.headers.getSetCookie()[0]).toMatch(/^sid=; Path=\/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT/);
        const reuse = await t.client().request('GET', '/users/me', { headers: { cookie: `sid=${sid}` } });
        expect(reuse.status).toBe(204);
        expect(reuse.headers.getSetCookie()[0]).toMatch(/^sid=[0-9a-f]{128}/);
      });

      it('login accepts a form body too', async () => {
        await signUp('formy');
        const c = t.client();
        const res = await c.request('POST', '/users/login', { raw: 'username=formy&password=secret', contentType: 'application/x-www-form-urlencoded' });
        expect(res.status).toBe(200);
        expect((await c.request('GET', '/users/me')).body).toMatchObject({ username: 'formy' });
      });

      it('GET /me without a user answers 204 with a blank body', async () => {
        const res = await t.client().request('GET', '/users/me');
        expect(res.status).toBe(204);
        expect(res.text).toBe('');
      });
    });

    describe('passwords are never answered and never queryable', () => {
      let user: Obj;
      let root: Record<string, string>;
      beforeAll(async () => {
        user = await signUp('dee', 'hunter2', { displayName: 'Dee' });
        root = { 'svc-ssh-key': 'dev' };
      });

      it('create, list, one, $fields, root, /me and update answers hold no password', async () => {
        expect(user).not.toHaveProperty('password');
        const answers = [
          await t.request('GET', '/users'),
          await t.request('GET', `/users/${user.id}`),
          await t.request('GET', '/users', { headers: root }),
          await t.request('GET', `/users?${encodeURIComponent(JSON.stringify({ $skipEvents: true }))}`, { headers: root }),
          await t.request('PUT', `/users/${user.id}`, { body: { displayName: 'D' }, headers: root }),
        ];
        for (const res of answers) {
          expect(res.status).toBe(200);
          expect(res.text).not.toContain('password');
          expect(res.text).not.toContain('$2');
        }
      });

      it('password filters, regexes and sorts are refused (400), for root too: no answer depends on the hash; $fields leaves it out', async () => {
        const probes = [
          { username: 'dee', password: { $regex: '^\\$2' } },
          { username: 'dee', password: 'x' },
          { username: 'dee', $or: [{ password: { $regex: '^\\$2b' } }] },
          { username: 'dee', $sort: { password: 1 } },
          { 'password.x': 1 },
        ];
        for (const q of probes) {
          for (const headers of [{}, root]) {
            const res = await t.request('GET', `/users?${encodeURIComponent(JSON.stringify(q))}`, { headers });
            expect(res.status).toBe(400);
            expect(res.body).toMatchObject({ message: 'password may not be queried' });
          }
        }
        // Issue 38: $fields naming it answers as without it (200), the hash never in the answer.
        for (const headers of [{}, root]) {
          const res = await t.request('GET', `/users?${encodeURIComponent(JSON.stringify({ username: 'dee', $fields: { password: 1, username: 1 } }))}`, { headers });
          expect([res.status, res.body]).toEqual([200, [{ id: user.id, username: 'dee' }]]);
        }
      });
    });

    describe('usernames', () => {
      it('a duplicate username answers errors {username: "is already in use"}', async () => {
        await signUp('eve');
        const res = await t.client().request('POST', '/users', { body: { username: 'eve', password: 'x' } });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ status: 400, statusCode: 400, errors: { username: 'is already in use' } });
      });

      it('username and password are required on create', async () => {
        const res = await t.client().request('POST', '/users', { body: { displayName: 'x' } });
        expect(res.status).toBe(400);
        expect((res.body as { errors: Record<string, string> }).errors.password).toBe('is required');
        const noName = await t.client().request('POST', '/users', { body: { password: 'x' } });
        expect((noName.body as { errors: Record<string, string> }).errors.username).toBe('is required');
      });

      it('1,000 concurrent sign-ups of 100 names create exactly 100 users', async () => {
        const names = Array.from({ length: 100 }, (_, i) => `crowd${i}`);
        const results = await Promise.all(
          Array.from({ length: 1000 }, (_, i) => t.client().request('POST', '/users', { body: { username: names[i % 100], password: 'p' } })),
        );
        expect(results.filter((r) => r.status === 200)).toHaveLength(100);
        for (const r of results.filter((r) => r.status !== 200)) expect(r.body).toMatchObject({ status: 400, errors: { username: 'is already in use' } });
        const count = await t.request('GET', `/users/count?${encodeURIComponent(JSON.stringify({ username: { $regex: '^crowd' } }))}`, { headers: { 'svc-ssh-key': 'x' } });
        expect(count.body).toEqual({ count: 100 });
      }, 120_000);
    });

    describe('who may change credentials', () => {
      it("another user's username and password are dropped silently and the rest is saved; I and root may change them", async () => {
        const mine = await signUp('fay');
        await signUp('gus');
        const fay = t.client();
        await fay.request('POST', '/users/login', { body: { username: 'fay', password: 'secret' } });
        const gus = t.client();
        await gus.request('POST', '/users/login', { body: { username: 'gus', password: 'secret' } });
        // Deployd 1.2 answers 200 and saves the rest (a 403 here before).
        const hijack = await gus.request('PUT', `/users/${mine.id}`, { body: { password: 'owned', displayName: 'by gus' } });
        expect(hijack.status, JSON.stringify(hijack.body)).toBe(200);
        expect(hijack.body).toMatchObject({ id: mine.id, username: 'fay', displayName: 'by gus' });
        const anon = await t.client().request('PUT', `/users/${mine.id}`, { body: { username: 'fay2', age: 3 } });
        expect(anon.body).toMatchObject({ username: 'fay', age: 3 });
        // POST with the id in the body, and `id` in the body does not make gus "self" (Deployd's `|| body.id`).
        const posted = await gus.request('POST', '/users', { body: { id: mine.id, username: 'fay4', password: 'owned2', age: 4 } });
        expect(posted.body).toMatchObject({ id: mine.id, username: 'fay', age: 4 });
        // The dropped passwords were never hashed nor stored, and fay's session did not end.
        expect((await t.client().request('POST', '/users/login', { body: { username: 'fay', password: 'owned' } })).status).toBe(401);
        expect((await t.client().request('POST', '/users/login', { body: { username: 'fay', password: 'owned2' } })).status).toBe(401);
        expect((await t.client().request('POST', '/users/login', { body: { username: 'fay', password: 'secret' } })).status).toBe(200);
        expect((await fay.request('GET', '/users/me')).body).toMatchObject({ id: mine.id });
        expect((await fay.request('PUT', `/users/${mine.id}`, { body: { password: 'new' } })).status).toBe(200);
        expect((await t.client().request('POST', '/users/login', { body: { username: 'fay', password: 'new' } })).status).toBe(200);
        const asRoot = await t.client().request('PUT', `/users/${mine.id}`, { body: { username: 'fay3' }, headers: { 'svc-ssh-key': 'k' } });
        expect((asRoot.body as Obj).username).toBe('fay3');
      });

      it("a changed password ends the user's other sessions but not the one that changed it", async () => {
        const user = await signUp('hal');
        const a = t.client();
        const b = t.client();
        await a.request('POST', '/users/login', { body: { username: 'hal', password: 'secret' } });
        await b.request('POST', '/users/login', { body: { username: 'hal', password: 'secret' } });
        expect((await b.request('GET', '/users/me')).status).toBe(200);
        await a.request('PUT', `/users/${user.id}`, { body: { password: 'changed' } });
        expect((await a.request('GET', '/users/me')).status).toBe(200);
        expect((await b.request('GET', '/users/me')).status).toBe(204);
      });
    });

    describe('attacks on login', () => {
      it.each([
        [{ username: { $ne: null }, password: 'secret' }],
        [{ username: { $gt: '' }, password: { $gt: '' } }],
        [{ username: 'ada', password: { $ne: null } }],
        [{ username: ['ada'], password: 'secret' }],
        [{ username: 'ada' }],
        [{}],
      ])('%j is refused with 400 "username or password not specified"', async (body) => {
        const res = await t.client().request('POST', '/users/login', { body });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ status: 400, statusCode: 400, message: 'username or password not specified' });
      });

      it('a user brought over from Deployd logs in with the old hash, which is replaced by bcrypt', async () => {
        const salt = randomBytes(128).toString('hex');
        const hash = salt + createHmac('sha256', salt).update('legacy-pw').digest('hex');
        await store.store.collection('users').insert({ id: randomBytes(8).toString('hex'), username: 'old-timer', password: hash });
        expect((await t.client().request('POST', '/users/login', { body: { username: 'old-timer', password: 'wrong' } })).status).toBe(401);
        expect((await t.client().request('POST', '/users/login', { body: { username: 'old-timer', password: 'legacy-pw' } })).status).toBe(200);
        const stored = await store.store.collection('users').findOne({ username: 'old-timer' });
        expect(String(stored?.password)).toMatch(/^\$2[aby]\$/);
        expect((await t.client().request('POST', '/users/login', { body: { username: 'old-timer', password: 'legacy-pw' } })).status).toBe(200);
      });
    });
  });
});

describe.each(storeKinds())('login rate limit, expiry, root, CORS, forms ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let seen: Context | undefined;
  const probe: Resource = {
    path: '/probe',
    type: 'Probe',
    handle(ctx) {
      seen = ctx;
      return Promise.resolve({ status: 200, body: { isRoot: ctx.isRoot, method: ctx.method, originalMethod: ctx.originalMethod, body: ctx.body } });
    },
  };

  beforeAll(async () => {
    store = await kind.make();
    t = await startTestServer(
      store.store,
      [
        users(store, { max: 3 }),
        probe,
        new Collection({ path: '/things', properties: { n: { type: 'number' }, ok: { type: 'boolean' }, s: { type: 'string' } }, store: store.store.collection('things') }),
      ],
      { env: 'production', rootKeys: ['a'.repeat(64)], sessions: { idleSeconds: 1 }, cors: { origins: ['https://app.example'] } },
    );
    await t.client().request('POST', '/users', { body: { username: 'ida', password: 'secret' } });
  });
  afterAll(async () => {
    await t.close();
    await store.dispose();
  });

  it('failed logins are limited per username: 429 with Retry-After', async () => {
    for (let i = 0; i < 3; i++) expect((await t.client().request('POST', '/users/login', { body: { username: 'ida', password: 'x' } })).status).toBe(401);
    const limited = await t.client().request('POST', '/users/login', { body: { username: 'ida', password: 'secret' } });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('a session idle longer than the configured time expires', async () => {
    // Anonymous ids are not stored (nothing to expire); a logged-in session is.
    const c = t.client();
    await c.request('POST', '/users', { body: { username: 'idle', password: 'pw-idle' } });
    expect((await c.request('POST', '/users/login', { body: { username: 'idle', password: 'pw-idle' } })).status).toBe(200);
    const sid = c.sid;
    expect((await c.request('GET', '/users/me')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1200));
    const res = await c.request('GET', '/users/me');
    expect(res.status).toBe(204);
    expect(c.sid).not.toBe(sid);
    expect(res.headers.getSetCookie()[0]).toMatch(/^sid=/);
  });

  it('production root: only the exact key; one character off is refused', async () => {
    const ok = await t.request('GET', '/probe', { headers: { 'svc-ssh-key': 'a'.repeat(64) } });
    expect((ok.body as { isRoot: boolean }).isRoot).toBe(true);
    for (const key of [`${'a'.repeat(63)}b`, 'a'.repeat(63), `${'a'.repeat(64)}a`, 'anything']) {
      const res = await t.request('GET', '/probe', { headers: { 'svc-ssh-key': key } });
      expect((res.body as { isRoot: boolean }).isRoot).toBe(false);
    }
    const count = await t.request('GET', '/things/count', { headers: { 'svc-ssh-key': 'b'.repeat(64) } });
    expect(count.status).toBe(403);
  });

  it('cross-origin: an allowed Origin is echoed with credentials; preflight lists exactly the allowed headers', async () => {
    const res = await t.request('GET', '/probe', { headers: { origin: 'https://app.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    const pre = await t.request('OPTIONS', '/probe', { headers: { origin: 'https://app.example', 'access-control-request-method': 'PUT' } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')).toBe('Origin, Accept, Accept-Language, Content-Language, Content-Type, Last-Event-ID, If-Match, If-None-Match');
    expect(pre.headers.get('access-control-allow-methods')).toContain('PUT');
    const other = await t.request('GET', '/probe', { headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('method override sets originalMethod', async () => {
    const res = await t.request('POST', '/probe?_method=DELETE');
    expect(res.body).toMatchObject({ method: 'DELETE', originalMethod: 'POST' });
    expect(seen?.originalMethod).toBe('POST');
  });

  it('form bodies: strings, read as numbers and booleans where the property says so', async () => {
    const res = await t.request('POST', '/things', { raw: 'n=5&ok=true&s=7', contentType: 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ n: 5, ok: true, s: '7' });
    const bad = await t.request('POST', '/things', { raw: 'n=five&ok=maybe', contentType: 'application/x-www-form-urlencoded' });
    expect(bad.body).toMatchObject({ ok: false });
    expect(bad.body).not.toHaveProperty('n');
  });

  it('a 500 in production answers a generic message, never the error or its stack', async () => {
    const boom: Resource = { path: '/boom', type: 'Boom', handle: () => Promise.reject(new Error(`secret detail at ${process.cwd()}/app.js:12`)) };
    const s2 = await kind.make();
    const prod = await startTestServer(s2.store, [boom], { env: 'production' });
    const res = await prod.request('GET', '/boom');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ status: 500, statusCode: 500, message: 'internal server error' });
    await prod.close();
    await s2.dispose();
    const s3 = await kind.make();
    const dev = await startTestServer(s3.store, [boom], { env: 'development' });
    const devRes = await dev.request('GET', '/boom');
    // Development shows the message, without the server's paths (issue 21).
    expect(devRes.body).toEqual({ status: 500, statusCode: 500, message: 'secret detail at …:12' });
    await dev.close();
    await s3.dispose();
  });
});
