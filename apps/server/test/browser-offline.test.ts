import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { silentLogger } from '@svc/core';
import type { SvcClient } from '@svc/client';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';
import { BLANK_PAGE, chromiumAvailable, launchChromium, until } from './browser-helpers.js';

// Issue 42, "Show": the offline replica of /svc.js in chromium, the network cut by the browser's
// offline mode (context.setOffline) or by a server stopped and started again on the same port.
// Each page keeps its replica in the browser's IndexedDB (the default storage).

type Obj = Record<string, unknown> & { id: string };
type Coll = Record<string, (...args: unknown[]) => Promise<unknown>>;
declare const svc: SvcClient;

const PROPS = { title: { type: 'string' }, note: { type: 'string' }, n: { type: 'number' } };
const FILES: Record<string, object | string> = {
  'resources/sw/config.json': { type: 'Collection', properties: PROPS, offline: { conflicts: 'server-wins' } },
  'resources/lww/config.json': { type: 'Collection', properties: PROPS, offline: { conflicts: 'last-writer-wins' } },
  'resources/merge/config.json': { type: 'Collection', properties: PROPS, offline: { conflicts: 'app' } },
  'resources/guarded/config.json': { type: 'Collection', properties: PROPS, rules: { create: { title: { $ne: 'bad' } } } },
  'resources/policy/config.json': { type: 'Collection', properties: PROPS },
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'public/index.html': BLANK_PAGE,
};
const ROOT = { 'svc-ssh-key': 'k', 'content-type': 'application/json' };
const DAY = 86_400_000;

const run = chromiumAvailable('browser tests of the offline replica');

describe.skipIf(!run)('svc.offline in /svc.js, in chromium, with the network cut and restored', { timeout: 120_000 }, () => {
  let browser: Browser;
  let dir: string;
  let app: RunningApp;
  let port: number;
  let url: string;
  const contexts: BrowserContext[] = [];

  const start = async (): Promise<void> => {
    app = await startApp({ appDir: dir, port, host: '127.0.0.1', logger: silentLogger });
    url = app.url;
    port = Number(new URL(url).port);
  };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-browser-offline-'));
    for (const [path, content] of Object.entries(FILES)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
    }
    port = 0;
    await start();
    browser = await launchChromium();
  });
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const rest = async (method: string, path: string, body?: object): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`${url}${path}`, { method, headers: ROOT, ...(body ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
  };
  const serverGet = async (path: string, id: string): Promise<unknown> => {
    const res = await rest('GET', `/${path}/${id}`);
    return res.status === 200 ? res.body : res.status;
  };

  /** A new browser profile (its own IndexedDB and cookies) on the app's page, its events recorded. */
  const newContext = async (options: { clockShift?: number } = {}): Promise<BrowserContext> => {
    const context = await browser.newContext();
    contexts.push(context);
    if (options.clockShift !== undefined) {
      // The page's clock (Date and Date.now) wrong by this much; the browser's own clock is not.
      await context.addInitScript({
        content: `(() => { const Real = Date; const shift = ${options.clockShift};
          class Shifted extends Real { constructor(...a) { if (a.length === 0) super(Real.now() + shift); else super(...a); } static now() { return Real.now() + shift; } }
          globalThis.Date = Shifted; })();`,
      });
    }
    return context;
  };
  const openPage = async (context: BrowserContext, app = 'todo', clearOnLogout = false): Promise<Page> => {
    const page = await context.newPage();
    await page.goto(`${url}/`);
    await page.evaluate(
      async ([name, clear]) => {
        const g = globalThis as unknown as { events: [string, unknown][] };
        g.events = [];
        for (const e of ['status', 'queued', 'conflict', 'rejected', 'storage'] as const) svc.offline.on(e, (v) => g.events.push([e, JSON.parse(JSON.stringify(v)) as unknown]));
        await svc.offline.start({
          app: name,
          clearOnLogout: clear,
          resolve: ({ local, server }) => ({ ...server, note: `${String(local?.note)}+${String(server.title)}` }),
        });
      },
      [app, clearOnLogout] as const,
    );
    return page;
  };
  /** svc.<path>.<method>(...args) in the page: its answer, or the error it rejected with. */
  const call = (page: Page, path: string, method: string, ...args: unknown[]): Promise<{ ok?: unknown; error?: { status: number; message: string } }> =>
    page.evaluate(
      async ([p, m, a]) => {
        const c = (svc as unknown as Record<string, Coll>)[p] as Coll;
        try {
          return { ok: await (c[m] as (...x: unknown[]) => Promise<unknown>).apply(c, a) };
        } catch (e) {
          return { error: JSON.parse(JSON.stringify(e)) as { status: number; message: string } };
        }
      },
      [path, method, args] as const,
    );
  const ok = async (page: Page, path: string, method: string, ...args: unknown[]): Promise<Obj> => {
    const answer = await call(page, path, method, ...args);
    if (answer.error !== undefined) throw new Error(`${path}.${method}: ${JSON.stringify(answer.error)}`);
    return answer.ok as Obj;
  };
  const login = (page: Page, username: string, password: string): Promise<unknown> =>
    page.evaluate(([u, p]) => (svc as unknown as { users: Coll }).users.login?.({ username: u, password: p }), [username, password] as const);
  const state = (page: Page) => page.evaluate(() => ({ status: svc.offline.status, queued: svc.offline.queued, persisted: svc.offline.persisted }));
  const flags = (page: Page, path: string, id: string) => page.evaluate(([p, i]) => svc.offline.flags(p, i), [path, id] as const);
  const events = (page: Page, name: string): Promise<unknown[]> =>
    page.evaluate((n) => (globalThis as unknown as { events: [string, unknown][] }).events.filter(([e]) => e === n).map(([, v]) => v), name);
  /** Polls `get` until it equals `expected`; past 20 s, fails showing the last value. */
  const eventually = async (get: () => Promise<unknown>, expected: unknown): Promise<void> => {
    let last: unknown;
    await until(async () => JSON.stringify((last = await get())) === JSON.stringify(expected), 20_000).catch(() => undefined);
    expect(last).toEqual(expected);
  };
  const drained = (page: Page): Promise<void> => eventually(async () => (await state(page)).queued, 0);

  /** Two profiles change one object while the browser is offline; A comes back first, then B. */
  const race = async (path: string) => {
    const made = (await rest('POST', `/${path}`, { title: 't', note: 'n' })).body as Obj;
    const a = await openPage(await newContext());
    const b = await openPage(await newContext());
    await ok(a, path, 'get', made.id);
    await ok(b, path, 'get', made.id);
    await a.context().setOffline(true);
    await b.context().setOffline(true);
    await ok(a, path, 'put', made.id, { title: 'A', n: 1 });
    await ok(b, path, 'put', made.id, { note: 'B' });
    expect(await flags(b, path, made.id)).toEqual({ pending: true, conflicted: false });
    expect(await serverGet(path, made.id)).toEqual(made);
    await a.context().setOffline(false);
    await drained(a);
    expect(await serverGet(path, made.id)).toEqual({ ...made, title: 'A', n: 1 });
    await b.context().setOffline(false);
    await drained(b);
    return { id: made.id, b, server: await serverGet(path, made.id), conflicts: (await events(b, 'conflict')) as { policy: string }[] };
  };

  it('server-wins: the later profile\'s offline write is dropped, it shows the server\'s object, flagged conflicted', async () => {
    const { id, b, server, conflicts } = await race('sw');
    expect(server).toEqual({ id, title: 'A', note: 'n', n: 1 });
    expect(await ok(b, 'sw', 'get', id)).toEqual(server);
    expect(conflicts.map((c) => c.policy)).toEqual(['server-wins']);
    expect(await flags(b, 'sw', id)).toEqual({ pending: false, conflicted: true });
  });

  it('last-writer-wins: the later profile\'s changed properties go over the server\'s object, the others kept', async () => {
    const { id, b, server, conflicts } = await race('lww');
    expect(server).toEqual({ id, title: 'A', note: 'B', n: 1 });
    expect(await ok(b, 'lww', 'get', id)).toEqual(server);
    expect(conflicts.map((c) => c.policy)).toEqual(['last-writer-wins']);
  });

  it('app: the page\'s resolve callback merges the local and the server object, and its merge is written', async () => {
    const { id, b, server, conflicts } = await race('merge');
    expect(server).toEqual({ id, title: 'A', note: 'B+A', n: 1 });
    expect(await ok(b, 'merge', 'get', id)).toEqual(server);
    expect(conflicts.map((c) => c.policy)).toEqual(['app']);
  });

  it('a write the rules refuse while offline is rolled back in the page (its live query too) and reported with the server\'s error', async () => {
    const page = await openPage(await newContext());
    await page.evaluate(() => {
      const g = globalThis as unknown as { titles: string[] };
      (svc as unknown as { guarded: { subscribe(q: object, h: (e: unknown, o: Obj[]) => void): void } }).guarded.subscribe({ $sort: { title: 1 } }, (_e, objects) => {
        g.titles = objects.map((o) => String(o.title));
      });
    });
    const titles = (): Promise<string[] | undefined> => page.evaluate(() => (globalThis as unknown as { titles?: string[] }).titles);
    await page.context().setOffline(true);
    const bad = await ok(page, 'guarded', 'post', { title: 'bad' });
    const good = await ok(page, 'guarded', 'post', { title: 'good' });
    await eventually(titles, ['bad', 'good']);
    expect(await ok(page, 'guarded', 'get', bad.id)).toEqual(bad);
    await page.context().setOffline(false);
    await drained(page);
    const rejected = (await events(page, 'rejected')) as { write: { id: string }; error: { status: number; message: string } }[];
    expect(rejected).toHaveLength(1);
    expect(rejected[0]?.write.id).toBe(bad.id);
    expect(rejected[0]?.error.status).toBe(403);
    expect(typeof rejected[0]?.error.message).toBe('string');
    expect((await call(page, 'guarded', 'get', bad.id)).error?.status).toBe(404);
    await eventually(titles, ['good']);
    expect(await serverGet('guarded', bad.id)).toBe(404);
    expect(await serverGet('guarded', good.id)).toEqual(good);
  });

  it('offline across a server restart and a password change: the queued write waits for its user, never sent as the old session or another user', async () => {
    const username = `alice${Date.now()}`;
    const alice = (await rest('POST', '/users', { username, password: 'first-pass-1' })).body as Obj;
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${url}/`);
    await login(page, username, 'first-pass-1');
    await page.close();
    const first = await openPage(context, 'session');
    await context.setOffline(true);
    const note = await ok(first, 'sw', 'post', { title: 'as alice' });
    expect((await state(first)).queued).toBe(1);
    // Meanwhile the server restarts and her password is changed (by root: every session ends).
    await app.close();
    await start();
    expect((await rest('PUT', `/users/${alice.id}`, { password: 'second-pass-2' })).status).toBe(200);
    await context.setOffline(false);
    await eventually(async () => (await state(first)).status, 'signed-out');
    expect((await state(first)).queued).toBe(1);
    // The collection takes anonymous creates: sent as the session it has now, it would have landed.
    expect(await serverGet('sw', note.id)).toBe(404);
    // Another user signs in on this browser: alice's replica stays sealed, her write unsent and unseen.
    const bob = `bob${Date.now()}`;
    await rest('POST', '/users', { username: bob, password: 'bob-pass-1' });
    await login(first, bob, 'bob-pass-1');
    await eventually(async () => (await state(first)).status, 'online');
    expect((await state(first)).queued).toBe(0);
    expect((await call(first, 'sw', 'get', note.id)).error?.status).toBe(404);
    expect(await serverGet('sw', note.id)).toBe(404);
    // Alice again, with her new password: her write is sent, as her.
    await login(first, username, 'second-pass-2');
    await drained(first);
    expect(await serverGet('sw', note.id)).toEqual(note);
    expect(await ok(first, 'sw', 'get', note.id)).toEqual(note);
    expect((await state(first)).status).toBe('online');
  });

  it('logging out with clearOnLogout deletes the user\'s replica: the next user of the browser, and a reload, see none of it', async () => {
    const username = `carol${Date.now()}`;
    await rest('POST', '/users', { username, password: 'carol-pass-1' });
    const made = (await rest('POST', '/sw', { title: 'carol saw this' })).body as Obj;
    const context = await newContext();
    const page = await openPage(context, 'clearing', true);
    await login(page, username, 'carol-pass-1');
    expect(await ok(page, 'sw', 'get', made.id)).toEqual(made);
    await page.evaluate(() => (svc as unknown as { users: Coll }).users.logout?.());
    await page.reload();
    await context.setOffline(true);
    const dump = await page.evaluate(
      () =>
        new Promise<string>((resolve, reject) => {
          // Typed here: the tests compile without the DOM types.
          interface Req<T> { result: T; error: unknown; onsuccess: (() => void) | null; onerror: (() => void) | null }
          interface Db { transaction(name: string, mode: string): { objectStore(name: string): { getAll(): Req<unknown[]> } } }
          const idb = (globalThis as unknown as { indexedDB: { open(name: string, v: number): Req<Db> } }).indexedDB;
          const open = idb.open('svc-replica', 1);
          open.onerror = () => reject(new Error(String(open.error)));
          open.onsuccess = () => {
            const all = open.result.transaction('replicas', 'readonly').objectStore('replicas').getAll();
            all.onsuccess = () => resolve(JSON.stringify(all.result));
          };
        }),
    );
    expect(dump).not.toContain('carol saw this');
  });

  it('a reload while writes are queued: the page shows them from IndexedDB before any network, then sends each once', async () => {
    const context = await newContext();
    const page = await openPage(context, 'reload');
    // The app's requests fail as with no network; the page and /svc.js still load (no service worker here).
    const cut = (route: { abort(code: string): Promise<void> }) => route.abort('internetdisconnected');
    const api = (u: URL): boolean => /^\/(sw|users|socket\.io)(\/|$)/.test(u.pathname);
    await context.route(api, cut);
    const a = await ok(page, 'sw', 'post', { title: 'before reload 1' });
    const b = await ok(page, 'sw', 'post', { title: 'before reload 2' });
    await ok(page, 'sw', 'put', a.id, { note: 'changed' });
    expect((await state(page)).queued).toBe(3);
    await page.reload();
    await page.evaluate(() => svc.offline.start({ app: 'reload' }));
    expect((await state(page)).queued).toBe(3);
    expect((await state(page)).status).toBe('offline');
    expect(await ok(page, 'sw', 'get', a.id)).toEqual({ ...a, note: 'changed' });
    expect(await ok(page, 'sw', 'get', b.id)).toEqual(b);
    expect(await serverGet('sw', a.id)).toBe(404);
    await context.unroute(api, cut);
    await page.evaluate(() => svc.offline.flush());
    await drained(page);
    expect(await serverGet('sw', a.id)).toEqual({ ...a, note: 'changed' });
    expect(await serverGet('sw', b.id)).toEqual(b);
    const list = (await rest('GET', `/sw?${new URLSearchParams({ title: 'before reload 1' })}`)).body as Obj[];
    expect(list).toHaveLength(1);
  });

  it('storage quota exceeded: the page is told (storage event, persisted false), goes on in memory, and its writes are still sent', async () => {
    const context = await newContext();
    // The origin's quota is set (to 1 byte) before its storage is first used: chromium applies it then.
    const blank = await context.newPage();
    const cdp = await context.newCDPSession(blank);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: new URL(url).origin, quotaSize: 1 });
    const page = await openPage(context, 'quota');
    await context.setOffline(true);
    const made = await ok(page, 'sw', 'post', { title: 'x'.repeat(100_000) });
    expect((await state(page)).persisted).toBe(false);
    const told = (await events(page, 'storage')) as { saved: boolean; error?: string }[];
    expect(told[0]?.saved).toBe(false);
    expect(told[0]?.error).toMatch(/quota/i);
    expect(await ok(page, 'sw', 'get', made.id)).toEqual(made);
    await context.setOffline(false);
    await drained(page);
    expect(await serverGet('sw', made.id)).toEqual(made);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: new URL(url).origin });
  });

  it('a page whose clock is a day behind: its write synced last still wins under last-writer-wins, and its offline ids and ETags hold', async () => {
    const made = (await rest('POST', '/lww', { title: 't', note: 'n' })).body as Obj;
    const late = await openPage(await newContext({ clockShift: -DAY }));
    const right = await openPage(await newContext());
    expect(await late.evaluate(() => Date.now())).toBeLessThan(Date.now() - DAY / 2);
    await ok(late, 'lww', 'get', made.id);
    await ok(right, 'lww', 'get', made.id);
    await late.context().setOffline(true);
    await right.context().setOffline(true);
    await ok(late, 'lww', 'put', made.id, { title: 'from the late clock' });
    const created = await ok(late, 'lww', 'post', { title: 'made by the late clock' });
    await ok(right, 'lww', 'put', made.id, { title: 'from the right clock', note: 'R' });
    await right.context().setOffline(false);
    await drained(right);
    await late.context().setOffline(false);
    await drained(late);
    expect(await serverGet('lww', made.id)).toEqual({ id: made.id, title: 'from the late clock', note: 'R' });
    expect(await serverGet('lww', created.id)).toEqual(created);
    expect(await ok(late, 'lww', 'get', made.id)).toEqual({ id: made.id, title: 'from the late clock', note: 'R' });
    // A further write of the late page is based on the ETag it holds now: no conflict.
    await ok(late, 'lww', 'put', made.id, { n: 2 });
    await drained(late);
    expect(await serverGet('lww', made.id)).toEqual({ id: made.id, title: 'from the late clock', note: 'R', n: 2 });
    expect((await events(late, 'conflict')).length).toBe(1);
  });

  it('an object the page knows only from a live query is edited offline and synced without a conflict (its ETag is the server\'s)', async () => {
    const made = (await rest('POST', '/sw', { note: 'n', title: 'live-known' })).body as Obj;
    await rest('PUT', `/sw/${made.id}`, { n: 1 });
    await rest('PUT', `/sw/${made.id}`, { title: 'live-known', note: 'n2' });
    const page = await openPage(await newContext(), 'live-known');
    await page.evaluate(() => {
      const g = globalThis as unknown as { seen: Obj[] };
      (svc as unknown as { sw: { subscribe(q: object, h: (e: unknown, o: Obj[]) => void): void } }).sw.subscribe({ title: 'live-known' }, (_e, objects) => {
        g.seen = objects;
      });
    });
    await eventually(async () => ((await page.evaluate(() => (globalThis as unknown as { seen?: Obj[] }).seen)) ?? []).length, 1);
    await page.context().setOffline(true);
    await ok(page, 'sw', 'put', made.id, { note: 'edited offline' });
    await page.context().setOffline(false);
    await drained(page);
    expect(await events(page, 'conflict')).toEqual([]);
    expect(await serverGet('sw', made.id)).toEqual({ id: made.id, title: 'live-known', note: 'edited offline', n: 1 });
    expect(await flags(page, 'sw', made.id)).toEqual({ pending: false, conflicted: false });
  });

  it('the dashboard shows each collection\'s declared conflict policy (config.json offline.conflicts), server-wins by default', async () => {
    const page = await (await newContext()).newPage();
    const shown = async (name: string): Promise<[string | null, string, boolean]> => {
      await page.goto(`${url}/dashboard/#/r/${name}/properties`);
      const el = page.locator('[data-test=offline-conflicts]');
      await el.waitFor({ timeout: 20_000 });
      // The policy chosen in its select (the dashboard edits it: the next test), and whether it is the default.
      const chosen = await page.locator('#offline-conflicts').evaluate((s) => (s as unknown as { selectedOptions: { textContent: string | null }[] }).selectedOptions[0]?.textContent ?? '');
      return [await el.getAttribute('data-policy'), chosen, ((await el.textContent()) ?? '').endsWith('(default)')];
    };
    expect(await shown('lww')).toEqual(['last-writer-wins', 'the last writer wins, per property', false]);
    expect(await shown('merge')).toEqual(['app', 'the app decides (its resolve callback)', false]);
    expect(await shown('sw')).toEqual(['server-wins', 'the server wins', false]);
    expect(await shown('guarded')).toEqual(['server-wins', 'the server wins', true]);
  });

  it('the conflict policy is chosen in the dashboard: written to config.json, told to clients by /svc.js; a value the server does not know is refused', async () => {
    const page = await (await newContext()).newPage();
    await page.goto(`${url}/dashboard/#/r/policy/properties`);
    const el = page.locator('[data-test=offline-conflicts]');
    await el.waitFor({ timeout: 20_000 });
    expect(await el.getAttribute('data-policy')).toBe('server-wins');
    expect(await el.textContent()).toContain('(default)');
    await page.selectOption('#offline-conflicts', 'last-writer-wins');
    await page.locator('[data-test=offline-conflicts][data-policy=last-writer-wins]').waitFor({ timeout: 20_000 });
    expect(await el.textContent()).not.toContain('(default)');
    const file = JSON.parse(await readFile(join(dir, 'resources/policy/config.json'), 'utf8')) as Record<string, unknown>;
    expect(file).toEqual({ type: 'Collection', properties: PROPS, offline: { conflicts: 'last-writer-wins' } });
    const script = await (await fetch(`${url}/svc.js`)).text();
    expect(script).toContain('{"path":"/policy","kind":"collection","conflicts":"last-writer-wins"}');
    // Through the same API, a policy that is not one of the three: refused with the server's message, nothing changed.
    const bad = await rest('PUT', '/dashboard/api/resources/policy', { config: { ...file, offline: { conflicts: 'client-wins' } } });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(JSON.stringify(bad.body)).toContain('offline.conflicts must be one of');
    expect(JSON.parse(await readFile(join(dir, 'resources/policy/config.json'), 'utf8'))).toEqual(file);
    expect(await (await fetch(`${url}/svc.js`)).text()).toContain('"conflicts":"last-writer-wins"');
    // And back to the server, from the page.
    await page.reload();
    await page.locator('[data-test=offline-conflicts][data-policy=last-writer-wins]').waitFor({ timeout: 20_000 });
    await page.selectOption('#offline-conflicts', 'server-wins');
    await page.locator('[data-test=offline-conflicts][data-policy=server-wins]').waitFor({ timeout: 20_000 });
    expect(JSON.parse(await readFile(join(dir, 'resources/policy/config.json'), 'utf8'))).toMatchObject({ offline: { conflicts: 'server-wins' } });
  });

  it('a write whose answer is lost (the connection drops after the server applied it) is sent again and settled as done: no refusal, no conflict', async () => {
    const made = (await rest('POST', '/sw', { title: 'base' })).body as Obj;
    const context = await newContext();
    const page = await openPage(context, 'lost-answer');
    await ok(page, 'sw', 'get', made.id);
    const dropped: string[] = [];
    // The first POST and the first PUT reach the server, then their answers are cut.
    await context.route(
      (u) => u.pathname.startsWith('/sw'),
      async (route) => {
        const method = route.request().method();
        if ((method === 'POST' || method === 'PUT') && !dropped.includes(method)) {
          dropped.push(method);
          await route.fetch();
          return route.abort('connectionreset');
        }
        return route.fallback();
      },
    );
    const created = await ok(page, 'sw', 'post', { title: 'created once' });
    await ok(page, 'sw', 'put', made.id, { note: 'changed once' });
    await drained(page);
    expect(dropped).toEqual(['POST', 'PUT']);
    expect(await events(page, 'rejected')).toEqual([]);
    expect(await events(page, 'conflict')).toEqual([]);
    expect(await flags(page, 'sw', made.id)).toEqual({ pending: false, conflicted: false });
    expect(await serverGet('sw', created.id)).toEqual(created);
    expect(await serverGet('sw', made.id)).toEqual({ ...made, note: 'changed once' });
    expect(await ok(page, 'sw', 'get', created.id)).toEqual(created);
    expect((await rest('GET', `/sw?${new URLSearchParams({ title: 'created once' })}`)).body).toHaveLength(1);
  });

  it('a live query keeps an offline write once it is sent, before (or without) the server\'s live message for it', async () => {
    const context = await newContext();
    // No realtime socket at all (a proxy that refuses it): lists come from the replica and HTTP.
    await context.route((u) => u.pathname.startsWith('/socket.io'), (route) => route.abort('connectionrefused'));
    const page = await openPage(context, 'no-socket');
    await page.evaluate(() => {
      const g = globalThis as unknown as { mine: string[] };
      (svc as unknown as { merge: { subscribe(q: object, h: (e: unknown, o: Obj[]) => void): void } }).merge.subscribe({ note: 'no-socket' }, (_e, objects) => {
        g.mine = objects.map((o) => String(o.title)).sort();
      });
    });
    const mine = (): Promise<string[] | undefined> => page.evaluate(() => (globalThis as unknown as { mine?: string[] }).mine);
    await context.setOffline(true);
    const kept = await ok(page, 'merge', 'post', { title: 'kept', note: 'no-socket' });
    const moved = await ok(page, 'merge', 'post', { title: 'moved', note: 'no-socket' });
    await ok(page, 'merge', 'put', moved.id, { note: 'elsewhere' });
    await eventually(mine, ['kept']);
    await context.setOffline(false);
    await drained(page);
    expect(await serverGet('merge', kept.id)).toEqual(kept);
    await new Promise((r) => setTimeout(r, 500));
    expect(await mine()).toEqual(['kept']);
  });
});
