import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { CollectionDef, CustomDef, SvcClient, UserCollectionDef } from '@svc/client';
import { BLANK_PAGE, chromiumAvailable, launchChromium, startBrowserApp, until } from './browser-helpers.js';
import type { BrowserApp, Echo } from './browser-helpers.js';

// What the page's global `svc` is (the code inside page.evaluate runs in chromium).
interface Todo {
  id: string;
  title: string;
  done: boolean;
  n?: number;
  for?: string;
}
interface User {
  id: string;
  username: string;
  displayName?: string;
}
interface Types {
  resources: { todos: CollectionDef<Todo>; users: UserCollectionDef<User>; addfollower: CustomDef<'shout'> };
}
declare const svc: SvcClient<Types>;
declare const _svc: { ajax: { headers: Record<string, string> } };
/** Messages a page collected (see `listen`). */
declare const got: Record<string, unknown[]>;

const APP = {
  'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string', required: true }, done: { type: 'boolean' }, n: { type: 'number' }, for: { type: 'string' } } },
  'resources/todos/post.js': "emit('todos:create', this);\nif (this.for) emit('users', { username: this.for }, 'assigned', { title: this.title });\n",
  'resources/users/config.json': { type: 'UserCollection', properties: { displayName: { type: 'string' } } },
  'resources/add-follower/config.json': { type: 'Echo' },
  'resources/a/b/config.json': { type: 'Collection', properties: { x: { type: 'number' } } },
  'public/index.html': BLANK_PAGE,
  // The SDK's browser bundle, for a page that imports it as an ES module (needs pnpm build).
  'public/sdk.js': readFileSync(fileURLToPath(new URL('../../../packages/client/dist/svc-client.browser.js', import.meta.url)), 'utf8'),
  'public/sdk.html': '<!doctype html><html><body><script type="module">import { createClient } from "/sdk.js"; globalThis.createClient = createClient;</script></body></html>',
};

const run = chromiumAvailable('browser tests of /svc.js');

describe.skipIf(!run)('/svc.js in chromium against a real server', () => {
  let browser: Browser;
  let t: BrowserApp;

  beforeAll(async () => {
    t = await startBrowserApp(APP);
    browser = await launchChromium();
    const res = await fetch(`${t.url}/users`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': 'k' }, body: JSON.stringify({ username: 'alice', password: 'pw' }) });
    expect(res.status).toBe(200);
    await fetch(`${t.url}/users`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': 'k' }, body: JSON.stringify({ username: 'bob', password: 'pw' }) });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A page in a fresh context (its own cookies), svc.js loaded and its socket connected. */
  async function openPage(): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    page.on('pageerror', (err) => process.stderr.write(`page error: ${err.message}\n`));
    await page.goto(`${t.url}/`);
    await page.evaluate(() => new Promise<void>((resolve) => svc.socketReady(resolve)));
    return page;
  }

  /** Makes the page collect messages into `got[message]`, with svc.on. */
  async function listen(page: Page, ...messages: string[]): Promise<void> {
    await page.evaluate((names) => {
      const g = globalThis as unknown as { got: Record<string, unknown[]> };
      g.got ??= {};
      for (const name of names) {
        g.got[name] = [];
        svc.on(name, (data) => g.got[name]!.push(data));
      }
    }, messages);
  }

  const received = (page: Page, message: string) => page.evaluate((m) => got[m] ?? [], message);

  it('defines svc and _svc; svc.<r> per top-level resource with dashes removed; nested ones through svc()', async () => {
    const page = await openPage();
    const shape = await page.evaluate(() => ({
      svc: typeof svc,
      ajax: typeof _svc.ajax.headers,
      names: Object.keys(svc).sort(),
      todos: Object.keys(svc.todos).sort(),
      users: Object.keys(svc.users).sort(),
      custom: Object.keys(svc.addfollower).sort(),
      byName: Object.keys(svc('todos')).sort(),
    }));
    expect(shape).toEqual({
      svc: 'function',
      ajax: 'object',
      names: ['addfollower', 'ajax', 'close', 'off', 'offline', 'on', 'once', 'setBaseUrl', 'socketReady', 'todos', 'users'],
      todos: ['del', 'exec', 'get', 'off', 'on', 'once', 'post', 'put', 'removeFile', 'subscribe', 'upload'],
      // The account calls answer 404 on a collection whose config.json turns no flow on (docs/accounts.md).
      users: ['confirmPasswordReset', 'confirmVerification', 'del', 'exec', 'get', 'login', 'loginWithCode', 'loginWithProvider', 'logout', 'me', 'mfa', 'off', 'on', 'once', 'post', 'providerLoginResult', 'put', 'removeFile', 'requestCode', 'requestPasswordReset', 'requestVerification', 'subscribe', 'upload'],
      custom: ['del', 'exec', 'get', 'off', 'on', 'once', 'post', 'put', 'shout'],
      byName: ['del', 'exec', 'get', 'post', 'put'],
    });
    await page.context().close();
  });

  it('every generic call sends the request of the spec table (through a custom resource that echoes it)', async () => {
    const page = await openPage();
    const echoes = (await page.evaluate(() => {
      const r = svc.addfollower;
      return Promise.all([
        r.get(),
        r.get('f'),
        r.get('f', 'p', { a: 1, b: { $gt: 2 }, s: 'x y' }),
        r.get({ q: 'v' }),
        r.post({ a: 1 }),
        r.post('p', { q: 1 }, { a: 1 }),
        r.put('p', { q: 1 }, { a: 1 }),
        r.del('p', { q: 1 }),
        r.exec('f', 'p', { a: 1 }),
        r.shout('p', { loud: true }),
        svc('add-follower').get('f', 7),
      ]);
    })) as Echo[];
    const shape = echoes.map((e) => [e.method, e.url, e.query, e.body ?? null]);
    expect(shape).toEqual([
      ['GET', '/', {}, null],
      ['GET', '/f', {}, null],
      ['GET', '/f/p', { a: '1', b: { $gt: 2 }, s: 'x y' }, null],
      ['GET', '/', { q: 'v' }, null],
      ['POST', '/', {}, { a: 1 }],
      ['POST', '/p', { q: '1' }, { a: 1 }],
      ['PUT', '/p', { q: 1 }, { a: 1 }],
      ['DELETE', '/p', { q: 1 }, null],
      ['POST', '/f/p', {}, { a: 1 }],
      ['POST', '/shout/p', {}, { loud: true }],
      ['GET', '/f/7', {}, null],
    ]);
    await page.context().close();
  });

  it('callbacks fn(result, error) run asynchronously, result null on failure; fail() also on what then() answers; _svc.ajax.headers', async () => {
    const page = await openPage();
    const out = await page.evaluate(async () => {
      let sync = true;
      const ok = await new Promise<unknown[]>((resolve) => {
        void svc.addfollower.get('x', (result, error) => resolve([result !== null, error, sync]));
        sync = false;
      });
      const failed = await new Promise<unknown[]>((resolve) => {
        svc.addfollower.post({ fail: 418 }, (result, error) => resolve([result, error])).fail(() => undefined);
      });
      const chained = await svc.addfollower
        .get({ fail: 409 })
        .then(() => 'not reached')
        .fail((e) => (e as { status: number }).status);
      const thenFail = typeof svc.todos.get().then(() => 1).fail;
      const plain = (await svc.addfollower.get()) as { isRoot: boolean };
      _svc.ajax.headers = { 'svc-ssh-key': 'any key in development' };
      const root = (await svc.addfollower.get()) as { isRoot: boolean };
      _svc.ajax.headers = {};
      return { ok, failed, chained, thenFail, plainRoot: plain.isRoot, root: root.isRoot };
    });
    expect(out).toEqual({
      ok: [true, undefined, false],
      failed: [null, { status: 418, statusCode: 418, message: 'asked to fail' }],
      chained: 409,
      thenFail: 'function',
      plainRoot: false,
      root: true,
    });
    await page.context().close();
  });

  it('an exception thrown in a callback is an ordinary uncaught error of the page, not an unhandled rejection', async () => {
    const page = await (await browser.newContext()).newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(`${t.url}/`);
    const out = await page.evaluate(
      () =>
        new Promise<{ errors: string[]; rejections: number }>((resolve) => {
          const seen = { errors: [] as string[], rejections: 0 };
          const page = globalThis as unknown as { addEventListener(type: string, fn: (e: { message: string }) => void): void };
          page.addEventListener('error', (e) => seen.errors.push(e.message));
          page.addEventListener('unhandledrejection', () => seen.rejections++);
          void svc.todos.get(() => {
            throw new Error('thrown in a callback');
          });
          void svc.addfollower.get({ fail: 500 }, () => {
            throw new Error('thrown in an error callback');
          });
          setTimeout(() => resolve(seen), 500);
        }),
    );
    expect(out.rejections).toBe(0);
    expect(out.errors.sort()).toEqual(['Uncaught Error: thrown in a callback', 'Uncaught Error: thrown in an error callback']);
    expect(pageErrors.sort()).toEqual(['thrown in a callback', 'thrown in an error callback']);
    await page.context().close();
  });

  it('Collection shorthands: get(fn)/get(query)/get(id), post(object)/post(id, object), put forms, del forms', async () => {
    const page = await openPage();
    const out = await page.evaluate(async () => {
      const a = await svc.todos.post({ title: 'a', done: false, n: 1 });
      const b = await svc.todos.post({ title: 'b', done: true, n: 2 });
      const byId = await svc.todos.get(a.id);
      const filtered = (await svc.todos.get({ n: { $gte: 2 } })).map((x) => x.title);
      const all = await new Promise<number>((resolve) => svc.todos.get((list) => resolve(list?.length ?? -1)));
      const putId = await svc.todos.put(a.id, { title: 'a2' });
      const putObj = await svc.todos.put({ id: a.id, n: { $inc: 10 } });
      const putQuery = await svc.todos.put({ id: b.id, done: true }, { title: 'b2' });
      const noMatch = await svc.todos.put({ id: b.id, done: false }, { title: 'x' }).then(() => null, (e: unknown) => e);
      const postId = await svc.todos.post(b.id, { title: 'b3' });
      const delId = await svc.todos.del(a.id);
      const delQuery = await svc.todos.del({ id: b.id });
      const left = await svc.todos.get();
      return { byId: byId.title, filtered, all, putId: putId.title, putObj: putObj.n, putQuery: putQuery.title, noMatch, postId: postId.title, delId, delQuery, left };
    });
    expect(out).toEqual({
      byId: 'a',
      filtered: ['b'],
      all: 2,
      putId: 'a2',
      putObj: 11,
      putQuery: 'b2',
      noMatch: { status: 400, statusCode: 400, message: 'No object exists that matches that query' },
      postId: 'b3',
      delId: null,
      delQuery: null,
      left: [],
    });
    await page.context().close();
  });

  it("login, me, logout on svc.users, and through svc('users') with exec/get", async () => {
    const page = await openPage();
    const out = await page.evaluate(async () => {
      const bad = await svc.users.login({ username: 'alice', password: 'wrong' }).then(() => null, (e: unknown) => [(e as { status: number }).status, (e as { message: string }).message]);
      const session = await svc.users.login({ username: 'alice', password: 'pw' });
      const me = await svc.users.me();
      const loggedOut = await svc.users.logout();
      const meAfter = await svc.users.me();
      const users = svc('users');
      await users.exec('login', { username: 'bob', password: 'pw' });
      const meByName = (await users.get('me')) as { username: string };
      await users.exec('logout');
      const none = await users.get('me');
      return { bad, session: [session.path, session.uid === me?.id], me: me?.username, hasPassword: me !== null && 'password' in me, loggedOut, meAfter, meByName: meByName.username, none };
    });
    expect(out).toEqual({ bad: [401, 'bad credentials'], session: ['/users', true], me: 'alice', hasPassword: false, loggedOut: null, meAfter: null, meByName: 'bob', none: null });
    await page.context().close();
  });

  it("svc('a/b') reaches a nested resource and svc('/') the root", async () => {
    const page = await openPage();
    const out = await page.evaluate(async () => {
      const made = (await svc('a/b').post({ x: 5 })) as { id: string; x: number };
      const again = (await svc('a/b').get(made.id)) as { x: number };
      const root = await svc('/').get();
      return { x: again.x, root: typeof root === 'string' && root.includes('/svc.js') };
    });
    expect(out).toEqual({ x: 5, root: true });
    await page.context().close();
  });

  it('socketReady runs at once when connected; on/once/off and collection-namespaced on/once/off', async () => {
    const page = await openPage();
    await page.evaluate(() => {
      const g = globalThis as unknown as { got: Record<string, unknown[]>; drop: (d: unknown) => void; immediate: boolean };
      g.got = { on: [], once: [], dropped: [], create: [], createOnce: [], ns: [] };
      g.immediate = false;
      svc.socketReady(() => (g.immediate = true));
      svc.on('ping', (d) => g.got.on!.push(d));
      svc.once('ping', (d) => g.got.once!.push(d));
      g.drop = (d) => g.got.dropped!.push(d);
      svc.on('ping', g.drop);
      svc.off('ping', g.drop);
      svc.todos.on('create', (d) => g.got.create!.push(d));
      svc.todos.once('create', (d) => g.got.createOnce!.push(d));
      svc.on('todos:create', (d) => g.got.ns!.push(d));
    });
    expect(await page.evaluate(() => (globalThis as unknown as { immediate: boolean }).immediate)).toBe(true);
    t.realtime.emit('ping', 1);
    t.realtime.emit('ping', 2);
    t.realtime.emit('todos:create', { n: 1 });
    t.realtime.emit('todos:create', { n: 2 });
    await until(async () => (await received(page, 'on')).length === 2 && (await received(page, 'create')).length === 2);
    expect(await page.evaluate(() => got)).toEqual({ on: [1, 2], once: [1], dropped: [], create: [{ n: 1 }, { n: 2 }], createOnce: [{ n: 1 }], ns: [{ n: 1 }, { n: 2 }] });
    await page.evaluate(() => {
      svc.off('ping');
      // The collection's off('create') is off('todos:create'): every listener of that name goes.
      svc.todos.off('create');
    });
    await listen(page, 'sync');
    t.realtime.emit('ping', 3);
    t.realtime.emit('todos:create', { n: 3 });
    t.realtime.emit('sync', true);
    await until(async () => (await received(page, 'sync')).length === 1);
    expect(await page.evaluate(() => [got.on!.length, got.create!.length, got.ns!.length])).toEqual([2, 2, 2]);
    await page.context().close();
  });

  it('a user-targeted emit reaches only the page whose user matches (logged in from the page)', async () => {
    const [alice, bob, anon] = [await openPage(), await openPage(), await openPage()];
    await alice.evaluate(() => svc.users.login({ username: 'alice', password: 'pw' }));
    await bob.evaluate(() => svc.users.login({ username: 'bob', password: 'pw' }));
    for (const p of [alice, bob, anon]) await listen(p, 'dm');
    await t.realtime.emitToUsers('/users', { username: 'alice' }, 'dm', { text: 'for alice' });
    await until(async () => (await received(alice, 'dm')).length === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect([await received(alice, 'dm'), await received(bob, 'dm'), await received(anon, 'dm')]).toEqual([[{ text: 'for alice' }], [], []]);
    // A page reloaded while logged in is bound by its cookie at the handshake.
    await bob.reload();
    await bob.evaluate(() => new Promise<void>((resolve) => svc.socketReady(resolve)));
    await listen(bob, 'dm');
    await t.realtime.emitToUsers('/users', { username: 'bob' }, 'dm', 'for bob');
    await until(async () => (await received(bob, 'dm')).length === 1);
    for (const p of [alice, bob, anon]) await p.context().close();
  });

  it('a page on another origin uses /svc.js of the server: calls with its cookie, and realtime', async () => {
    const other = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><html><body><script src="${t.url}/svc.js"></script></body></html>`);
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const page = await (await browser.newContext()).newPage();
    try {
      await page.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
      await page.evaluate(() => new Promise<void>((resolve) => svc.socketReady(resolve)));
      const me = await page.evaluate(async () => {
        await svc.users.login({ username: 'alice', password: 'pw' });
        return (await svc.users.me())?.username;
      });
      expect(me).toBe('alice');
      await listen(page, 'dm');
      await t.realtime.emitToUsers('/users', { username: 'alice' }, 'dm', 'cross-origin');
      await until(async () => (await received(page, 'dm')).length === 1);
    } finally {
      await page.context().close();
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('the SDK browser bundle (@svc/client/browser) works from a module script: calls, cookies, realtime', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${t.url}/sdk.html`);
    await page.waitForFunction('typeof globalThis.createClient === "function"');
    const out = await page.evaluate(async () => {
      const make = (globalThis as unknown as { createClient: (url: string, o?: object) => SvcClient<Types> }).createClient;
      const client = make('', { resources: [{ path: '/todos', kind: 'collection' }, { path: '/users', kind: 'users' }] });
      await client.users.login({ username: 'bob', password: 'pw' });
      const me = await client.users.me();
      await new Promise<void>((resolve) => client.socketReady(resolve));
      const got = new Promise((resolve) => client.todos.once('create', resolve));
      const made = await client.todos.post({ title: 'from the sdk', done: false });
      return { me: me?.username, made: made.title, event: await got };
    });
    expect(out).toMatchObject({ me: 'bob', made: 'from the sdk', event: { title: 'from the sdk' } });
    await page.context().close();
  });

  // The next two need the server's event scripts (emit from On Post).
  it('a message emitted by an On Post script reaches a second browser context', async () => {
    const [writer, reader] = [await openPage(), await openPage()];
    await listen(reader, 'todos:create');
    const made = await writer.evaluate(() => svc.todos.post({ title: 'from the writer', done: false }));
    await until(async () => (await received(reader, 'todos:create')).length === 1);
    expect(await received(reader, 'todos:create')).toEqual([{ id: made.id, title: 'from the writer', done: false }]);
    for (const p of [writer, reader]) await p.context().close();
  });

  it("a script's user-targeted emit (emit('users', query, ...)) reaches only that user's page", async () => {
    const [alice, bob, anon] = [await openPage(), await openPage(), await openPage()];
    await alice.evaluate(() => svc.users.login({ username: 'alice', password: 'pw' }));
    await bob.evaluate(() => svc.users.login({ username: 'bob', password: 'pw' }));
    for (const p of [alice, bob, anon]) await listen(p, 'assigned');
    await alice.evaluate(() => svc.todos.post({ title: 'review', done: false, for: 'bob' }));
    await until(async () => (await received(bob, 'assigned')).length === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect([await received(alice, 'assigned'), await received(bob, 'assigned'), await received(anon, 'assigned')]).toEqual([[], [{ title: 'review' }], []]);
    for (const p of [alice, bob, anon]) await p.context().close();
  });
});
