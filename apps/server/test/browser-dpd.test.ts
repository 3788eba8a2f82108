import { createServer as createHttpServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { CollectionDef, SvcClient, UserCollectionDef } from '@svc/client';
import { BLANK_PAGE, chromiumAvailable, launchChromium, startBrowserApp, until } from './browser-helpers.js';
import type { BrowserApp } from './browser-helpers.js';

// Issue 22 (8): /svc.js as Deployd's dpd.js for pages not rewritten: globals `dpd` (= svc), `_dpd`
// (= _svc) and `io`; HTTP through XMLHttpRequest; the socket opened at the first on(); dpd.js's
// setBaseUrl forms; /socket.io/socket.io.js. Pages on another origin, as Deployd front ends often were.

interface Todo {
  id: string;
  title: string;
  hdr?: string;
}
interface Types {
  resources: { todos: CollectionDef<Todo>; users: UserCollectionDef<{ id: string; username: string }> };
}
type Dpd = SvcClient<Types> & {
  setBaseUrl(options?: string | { hostname?: string; port?: string | number; protocol?: string }): void;
  getBaseUrl(): string;
  socket?: unknown;
};
declare const dpd: Dpd;
declare const svc: Dpd;
declare const _dpd: { ajax: { headers: Record<string, string> } };
declare const _svc: { ajax: { headers: Record<string, string> } };
declare const io: ((url?: string, options?: object) => { on(event: string, fn: () => void): void; disconnect(): void }) & { connect: unknown };
/** What the page's wrappers counted (see PAGE_HEAD). */
declare const counted: { xhr: number; fetch: number };
declare const got: unknown[];

// Counts what the page sends by each API; in the page before svc.js loads, as a page's own code would be.
const PAGE_HEAD = `<script>
window.counted = { xhr: 0, fetch: 0 };
(function () {
  var X = window.XMLHttpRequest;
  window.XMLHttpRequest = function () { window.counted.xhr++; return new X(); };
  window.XMLHttpRequest.prototype = X.prototype;
  var F = window.fetch;
  window.fetch = function () { window.counted.fetch++; return F.apply(this, arguments); };
})();
</script>`;

const APP = {
  'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string', required: true }, hdr: { type: 'string' } } },
  // What the request's x-app header was, to see _dpd.ajax.headers reach the server.
  'resources/todos/get.js': "if (ctx.headers['x-app']) this.hdr = ctx.headers['x-app'];\n",
  'resources/users/config.json': { type: 'UserCollection', properties: { note: { type: 'string' } } },
  // GET /users/me runs On BeforeRequest and On Get with the query (issue 22, item 5).
  'resources/users/beforerequest.js': "if (event === 'GET' && query.deny) cancel('denied', 401);\n",
  'resources/users/get.js': "if (query.tag) this.note = 'got ' + query.tag;\n",
  'public/index.html': BLANK_PAGE.replace('<body>', `<body>${PAGE_HEAD}`),
};

const run = chromiumAvailable('browser tests of /svc.js as dpd.js');

describe.skipIf(!run)('/svc.js as dpd.js in chromium', () => {
  let browser: Browser;
  let t: BrowserApp;
  let other: Server;
  let otherUrl: string;

  beforeAll(async () => {
    t = await startBrowserApp(APP);
    browser = await launchChromium();
    const key = { 'content-type': 'application/json', 'svc-ssh-key': 'k' };
    expect((await fetch(`${t.url}/users`, { method: 'POST', headers: key, body: JSON.stringify({ username: 'alice', password: 'pw' }) })).status).toBe(200);
    expect((await fetch(`${t.url}/todos`, { method: 'POST', headers: key, body: JSON.stringify({ title: 'first' }) })).status).toBe(200);
    // The page's own server, on another port: another origin than the svc server.
    other = createHttpServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      if (req.url === '/io.html') res.end(`<!doctype html><html><body><script src="${t.url}/socket.io/socket.io.js"></script></body></html>`);
      else res.end(`<!doctype html><html><head>${PAGE_HEAD}</head><body><script src="${t.url}/svc.js"></script></body></html>`);
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (other) await new Promise((resolve) => other.close(resolve));
  });

  /** A page in a fresh context, and the Socket.IO requests it sent (its handshakes). */
  async function openPage(url: string): Promise<{ page: Page; sockets: string[] }> {
    const page = await (await browser.newContext()).newPage();
    page.on('pageerror', (err) => process.stderr.write(`page error: ${err.message}\n`));
    const sockets: string[] = [];
    page.on('request', (req) => {
      if (req.url().includes('/socket.io/?')) sockets.push(req.url());
    });
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await page.goto(url);
    return { page, sockets };
  }

  it('defines dpd (the same object as svc), _dpd (= _svc) and io; calls go through XMLHttpRequest; no socket before the first on()', async () => {
    const { page, sockets } = await openPage(`${otherUrl}/`);
    try {
      const shape = await page.evaluate(async () => {
        const before = counted.xhr;
        const list = await dpd.todos.get();
        const byCallback = await new Promise<unknown>((resolve) => {
          void dpd.todos.get({ title: 'first' }, (result) => resolve(result));
        });
        return {
          same: dpd === svc,
          internals: _dpd === _svc && typeof _dpd.ajax.headers,
          io: typeof io,
          ioConnect: typeof io.connect,
          titles: list.map((todo) => todo.title),
          byCallback: (byCallback as Todo[]).length,
          xhr: counted.xhr - before,
          fetch: counted.fetch,
          socket: dpd.socket === undefined,
        };
      });
      expect(shape).toEqual({ same: true, internals: 'object', io: 'function', ioConnect: 'function', titles: ['first'], byCallback: 1, xhr: 2, fetch: 0, socket: true });
      expect(sockets).toEqual([]);
      expect(t.realtime.io?.engine.clientsCount).toBe(0);

      // The first on() opens the socket; dpd.todos.on('x') is the message 'todos:x'.
      await page.evaluate(() => {
        (globalThis as unknown as { got: unknown[] }).got = [];
        dpd.todos.on('x', (data) => got.push(data));
      });
      await page.evaluate(() => new Promise<void>((resolve) => dpd.socketReady(resolve)));
      expect(sockets.length).toBeGreaterThan(0);
      t.realtime.emit('todos:x', { n: 1 });
      await until(async () => (await page.evaluate(() => got.length)) === 1);
      expect(await page.evaluate(() => got)).toEqual([{ n: 1 }]);
    } finally {
      await page.context().close();
    }
  });

  it('withCredentials: a login from another origin keeps its cookie for the next calls', async () => {
    const { page } = await openPage(`${otherUrl}/`);
    try {
      const me = await page.evaluate(async () => {
        await dpd.users.login({ username: 'alice', password: 'pw' });
        return (await dpd.users.me())?.username;
      });
      expect(me).toBe('alice');
    } finally {
      await page.context().close();
    }
  });

  it('dpd.users.me takes the arguments of get: me(fn), me(query, fn), me(query) as a promise; the query reaches On BeforeRequest and On Get', async () => {
    const { page } = await openPage(`${otherUrl}/`);
    try {
      const seen = await page.evaluate(async () => {
        type Me = { username: string; note?: string } | null;
        const users = dpd.users as unknown as {
          login(c: object): Promise<unknown>;
          logout(): Promise<unknown>;
          me(...args: unknown[]): Promise<Me>;
        };
        // A callback never called (me(query, fn) once dropped fn) shows as 'no callback', not a test timeout.
        const byCallback = (...query: unknown[]) =>
          new Promise<{ result: Me | 'no callback'; error: unknown }>((resolve) => {
            setTimeout(() => resolve({ result: 'no callback', error: null }), 5000);
            void users.me(...query, (result: Me, error: unknown) => resolve({ result, error }));
          });
        const anonymous = await byCallback();
        await users.login({ username: 'alice', password: 'pw' });
        const fn = await byCallback();
        const queryFn = await byCallback({ tag: 'q' });
        const promise = await users.me({ tag: 'p' });
        const denied = await byCallback({ deny: 1 });
        await users.logout();
        const after = await users.me();
        return {
          anonymous: anonymous.result,
          fn: fn.result === 'no callback' ? fn.result : fn.result?.username,
          queryFn: queryFn.result === 'no callback' ? queryFn.result : [queryFn.result?.username, queryFn.result?.note, queryFn.error ?? null],
          promise: [promise?.username, promise?.note],
          denied: denied.result,
          after,
        };
      });
      expect(seen).toEqual({ anonymous: null, fn: 'alice', queryFn: ['alice', 'got q', null], promise: ['alice', 'got p'], denied: null, after: null });
    } finally {
      await page.context().close();
    }
  });

  it('a page sending Authorization: Bearer <session id> gets the user from /users/me and no sid cookie', async () => {
    const login = await fetch(`${t.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'alice', password: 'pw' }) });
    const { id } = (await login.json()) as { id: string };
    // Same origin: the spec's CORS headers do not include Authorization (a page on another origin sends its cookie).
    const { page } = await openPage(`${t.url}/`);
    try {
      const cookies: string[] = [];
      page.on('response', (res) => {
        if (res.url().includes('/users/me')) void res.allHeaders().then((h) => cookies.push(h['set-cookie'] ?? ''));
      });
      const name = await page.evaluate(async (sid) => {
        _dpd.ajax.headers = { authorization: `Bearer ${sid}` };
        const users = dpd.users as unknown as { me(query?: object): Promise<{ username: string } | null> };
        return [(await users.me())?.username, (await users.me({ tag: 'b' }))?.username];
      }, id);
      expect(name).toEqual(['alice', 'alice']);
      await until(() => cookies.length === 2);
      expect(cookies).toEqual(['', '']);
      expect((await page.context().cookies(t.url)).filter((c) => c.name === 'sid')).toEqual([]);
    } finally {
      await page.context().close();
    }
  });

  it('setBaseUrl(): from the script src (not the page), {hostname, port, protocol}, a string; the socket follows the root', async () => {
    const { page } = await openPage(`${otherUrl}/`);
    const port = new URL(t.url).port;
    try {
      const roots = await page.evaluate(
        ({ port }) => {
          const seen: string[] = [dpd.getBaseUrl()];
          dpd.setBaseUrl('http://127.0.0.1:1');
          seen.push(dpd.getBaseUrl());
          dpd.setBaseUrl();
          seen.push(dpd.getBaseUrl());
          dpd.setBaseUrl({ hostname: 'localhost', port });
          seen.push(dpd.getBaseUrl());
          dpd.setBaseUrl({ hostname: '127.0.0.1', port: Number(port), protocol: 'http:' });
          seen.push(dpd.getBaseUrl());
          return seen;
        },
        { port },
      );
      expect(roots).toEqual([`${t.url}/`, 'http://127.0.0.1:1/', `${t.url}/`, `http://localhost:${port}/`, `${t.url}/`]);
      expect(roots.join()).not.toContain('undefined');
      expect(await page.evaluate(async () => (await dpd.todos.get()).length)).toBe(1);

      // An open socket moves with the root, its listeners with it.
      await page.evaluate(async () => {
        (globalThis as unknown as { got: unknown[] }).got = [];
        dpd.on('moved', (data) => got.push(data));
        await new Promise<void>((resolve) => dpd.socketReady(resolve));
        dpd.setBaseUrl('http://127.0.0.1:1');
        dpd.setBaseUrl();
        await new Promise<void>((resolve) => dpd.socketReady(resolve));
      });
      await until(async () => {
        t.realtime.emit('moved', 1);
        return (await page.evaluate(() => got.length)) > 0;
      });
    } finally {
      await page.context().close();
    }
  });

  it('_dpd.ajax.headers (and _svc.ajax.headers, the same object) reach the server', async () => {
    const { page } = await openPage(`${t.url}/`);
    try {
      const seen = await page.evaluate(async () => {
        // Less those made at load (Socket.IO's client tries one to see what the browser has).
        const before = counted.xhr;
        _dpd.ajax.headers['x-app'] = 'one';
        const first = (await dpd.todos.get())[0]?.hdr;
        _svc.ajax.headers = { 'x-app': 'two' };
        const second = (await dpd.todos.get())[0]?.hdr;
        return { first, second, xhr: counted.xhr - before, fetch: counted.fetch };
      });
      expect(seen).toEqual({ first: 'one', second: 'two', xhr: 2, fetch: 0 });
    } finally {
      await page.context().close();
    }
  });

  it('GET /socket.io/socket.io.js from another origin gives a working io()', async () => {
    const { page } = await openPage(`${otherUrl}/io.html`);
    try {
      expect(await page.evaluate(() => typeof io)).toBe('function');
      const connected = await page.evaluate(
        (url) =>
          new Promise<boolean>((resolve) => {
            const socket = io(url);
            socket.on('connect', () => {
              socket.disconnect();
              resolve(true);
            });
          }),
        t.url,
      );
      expect(connected).toBe(true);
    } finally {
      await page.context().close();
    }
  });
});
