import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import type { Logger } from '@svc/core';
import emailType from '@svc/type-email';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';
import { rawRequest } from './helpers/rawRequest.js';

const KEY = 'a'.repeat(64);
let running: { app: RunningApp; dir: string }[] = [];

async function start(env: 'development' | 'production', files: Record<string, string | object> = {}, logger: Logger = silentLogger): Promise<{ app: RunningApp; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-dash-api-'));
  const all: Record<string, string | object> = { 'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string', required: true } } }, ...files };
  if (env === 'production') all['.svc/keys.json'] = { [KEY]: true };
  for (const [path, content] of Object.entries(all)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
  }
  const app = await startApp({ appDir: dir, port: 0, env, host: '127.0.0.1', logger, resourceTypes: [emailType] });
  const t = { app, dir };
  running.push(t);
  return t;
}

afterEach(async () => {
  for (const t of running) {
    await t.app.close();
    await rm(t.dir, { recursive: true, force: true });
  }
  running = [];
});

async function api(app: RunningApp, method: string, path: string, body?: unknown, headers: Record<string, string> = { 'svc-ssh-key': 'dev' }) {
  const res = await fetch(`${app.url}${path}`, { method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // text
  }
  return { status: res.status, body: json as Record<string, unknown> & { errors?: Record<string, string>; message?: string }, headers: res.headers };
}

describe('dashboard API: who may use it', () => {
  it('production: the page is served to anyone, nothing of the app without the root key', async () => {
    const { app } = await start('production');
    const page = await fetch(`${app.url}/dashboard/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const html = await page.text();
    expect(html).not.toContain('todos');
    // The app's files: compressed, cached by ETag.
    const script = await fetch(`${app.url}/dashboard/app.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(script.headers.get('content-encoding')).toBe('gzip');
    const etag = script.headers.get('etag') as string;
    expect((await fetch(`${app.url}/dashboard/app.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await fetch(`${app.url}/dashboard/../.svc/keys.json`)).status).toBe(404);
    expect((await fetch(`${app.url}/dashboard/%2e%2e%2f.svc%2fkeys.json`)).status).toBe(404);
    expect((await api(app, 'GET', '/dashboard/api/session', undefined, {})).body).toMatchObject({ env: 'production', root: false });
    for (const [method, path, body] of [
      ['GET', '/dashboard/api/app'],
      ['GET', '/dashboard/api/stream'],
      ['GET', '/dashboard/api/types'],
      ['GET', '/dashboard/api/resources/todos'],
      ['GET', '/dashboard/api/resources/todos/events/post.js'],
      ['POST', '/dashboard/api/resources', { name: 'x', type: 'Collection' }],
      ['PUT', '/dashboard/api/resources/todos', { config: { type: 'Collection' } }],
      ['DELETE', '/dashboard/api/resources/todos'],
      ['POST', '/dashboard/api/try', { name: 'todos', event: 'post', source: 'cancel("x")' }],
    ] as const) {
      for (const headers of [{}, { 'svc-ssh-key': 'development' }, { 'svc-ssh-key': KEY.slice(1) }] as Record<string, string>[]) {
        const res = await api(app, method, path, body, headers);
        expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(JSON.stringify(res.body)).not.toContain('title');
      }
    }
    const ok = await api(app, 'GET', '/dashboard/api/app', undefined, { 'svc-ssh-key': KEY });
    expect(ok.status).toBe(200);
    expect(JSON.stringify(ok.body)).toContain('todos');
  });

  it('refuses pages of other sites and (development) other host names: no cross-site writes, no DNS rebinding', async () => {
    const { app, dir } = await start('development');
    const attempts: Record<string, string>[] = [
      { 'svc-ssh-key': 'x', origin: 'http://evil.example' },
      { 'svc-ssh-key': 'x', 'sec-fetch-site': 'cross-site' },
      { 'svc-ssh-key': 'x', 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of attempts) {
      const res = await api(app, 'POST', '/dashboard/api/resources', { name: 'pwned', type: 'Collection' }, headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
    }
    // fetch() cannot set Host: a DNS-rebinding page's requests carry its own name.
    for (const headers of [{ host: 'evil.example:2403' }, { host: 'evil.example', origin: 'http://evil.example' }] as Record<string, string>[]) {
      const status = await rawRequest(app.url, 'POST', '/dashboard/api/resources', { name: 'pwned', type: 'Collection' }, { 'svc-ssh-key': 'x', ...headers });
      expect(status, JSON.stringify(headers)).toBe(403);
    }
    expect(existsSync(join(dir, 'resources/pwned'))).toBe(false);
    // Its own page (same origin) may.
    const port = new URL(app.url).port;
    const own = await api(app, 'POST', '/dashboard/api/resources', { name: 'mine', type: 'Collection' }, { 'svc-ssh-key': 'x', origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin' });
    expect(own.status).toBe(201);
    // Without a key header it is not root, even from this machine.
    expect((await api(app, 'GET', '/dashboard/api/app', undefined, {})).status).toBe(401);
  });

  it('names cannot leave resources/, event files are only the type\'s events', async () => {
    const { app, dir } = await start('development');
    for (const name of ['../x', 'a/../../x', '.hidden', 'a b', '', 'dashboard', 'x/./y']) {
      const res = await api(app, 'POST', '/dashboard/api/resources', { name, type: 'Collection' });
      expect(res.status, name).toBe(400);
    }
    expect((await api(app, 'POST', '/dashboard/api/resources', { name: 'x', type: 'NoSuchType' })).status).toBe(400);
    for (const file of ['config.json', '..%2Fconfig.json', 'evil.js', 'login.js']) {
      const res = await api(app, 'PUT', `/dashboard/api/resources/todos/events/${file}`, { source: '1' });
      expect(res.status, file).toBe(404);
    }
    expect(await readdir(join(dir, 'resources/todos'))).toEqual(['config.json']);
  });

  it('paths are case-sensitive: /Dashboard/ is not the dashboard, /Todos not todos; names differing in case only are refused', async () => {
    const { app, dir } = await start('production', { 'public/Dashboard/index.html': '<p>the app\'s own page</p>' });
    // The app's public file, not the dashboard (nor its API, with or without a key).
    const page = await fetch(`${app.url}/Dashboard/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('<p>the app\'s own page</p>');
    for (const path of ['/DASHBOARD/api/app', '/Dashboard/api/session']) expect((await api(app, 'GET', path, undefined, { 'svc-ssh-key': KEY })).status, path).toBe(404);
    expect((await api(app, 'GET', '/Todos')).status).toBe(404);
    expect((await api(app, 'GET', '/todos')).status).toBe(200);
    for (const name of ['Todos', 'Dashboard', 'DASHBOARD/x']) {
      const res = await api(app, 'POST', '/dashboard/api/resources', { name, type: 'Collection' }, { 'svc-ssh-key': KEY, 'sec-fetch-site': 'same-origin' });
      expect(res.status, name).toBeGreaterThanOrEqual(400);
      expect(res.status, name).toBeLessThan(500);
    }
    expect(await readdir(join(dir, 'resources'))).toEqual(['todos']);
  });

  it('a name longer than 100 characters is refused with the limit, before the file system sees it (it was a 500 ENAMETOOLONG naming the server\'s folder)', async () => {
    const { app, dir } = await start('development');
    const long = 'a'.repeat(300);
    const nested = Array.from({ length: 30 }, () => 'abcd').join('/');
    for (const [method, path, body] of [
      ['POST', '/dashboard/api/resources', { name: long, type: 'Collection' }],
      ['POST', '/dashboard/api/resources', { name: nested, type: 'Collection' }],
      ['POST', '/dashboard/api/resources/todos/rename', { to: long }],
      ['GET', `/dashboard/api/resources/${long}`],
      ['DELETE', `/dashboard/api/resources/${long}`],
    ] as [string, string, unknown][]) {
      const res = await api(app, method, path, body);
      expect(res.status, `${method} ${path.slice(0, 40)}`).toBe(400);
      expect(res.body.message).toContain('at most 100 characters');
      expectNoServerPath(res.body, dir);
    }
    expect((await api(app, 'POST', '/dashboard/api/resources/todos/rename', { to: long })).body.errors).toEqual({ to: 'at most 100 characters' });
    // 100 characters work all the way: created, renamed, deleted to .svc/trash.
    const name = 'b'.repeat(100);
    expect((await api(app, 'POST', '/dashboard/api/resources', { name, type: 'Collection' })).status).toBe(201);
    expect((await api(app, 'POST', `/${name}`, {})).status).toBe(200);
    expect((await api(app, 'POST', `/dashboard/api/resources/${name}/rename`, { to: `c/${'d'.repeat(98)}` })).body.moved).toBe(1);
    expect((await api(app, 'DELETE', `/dashboard/api/resources/c/${'d'.repeat(98)}`)).status).toBe(200);
    expect(await readdir(join(dir, 'resources'))).toEqual(['c', 'todos']);
  });

  it('a failed write of the app folder answers without the server\'s paths; the log has them', async () => {
    const logged: string[] = [];
    const record = (message: string, fields?: Record<string, unknown>): void => void logged.push(`${message} ${String((fields?.cause as Error | undefined)?.message)}`);
    // A file where the dashboard needs a folder: mkdir fails (EEXIST) naming the full path.
    const { app, dir } = await start('development', { 'resources/blocker': 'a file' }, { info() {}, warn: record, error: record });
    for (const [method, path, body] of [
      ['POST', '/dashboard/api/resources', { name: 'blocker/inner', type: 'Collection' }],
      ['POST', '/dashboard/api/resources/todos/rename', { to: 'blocker/inner' }],
    ] as [string, string, unknown][]) {
      const res = await api(app, method, path, body);
      expect(res.status).toBe(500);
      expect(res.body.message).toMatch(/\((EEXIST|ENOTDIR)\); the server's log has the details/);
      expectNoServerPath(res.body, dir);
    }
    expect(logged.some((line) => line.includes(join(dir, 'resources', 'blocker')))).toBe(true);
    // Nothing half done: the resource is where it was, with no rename left to finish.
    expect((await api(app, 'GET', '/todos', undefined, {})).status).toBe(200);
    expect(existsSync(join(dir, '.svc', 'rename.json'))).toBe(false);
  });

  it('a user whose username is taken under the new name (by a deleted resource\'s users) stays behind, said so; the dashboard is not blocked', async () => {
    const { app } = await start('development', { 'resources/members/config.json': { type: 'UserCollection', properties: {} }, 'resources/people/config.json': { type: 'UserCollection', properties: {} } });
    expect((await api(app, 'POST', '/members', { username: 'alice', password: 'secret-1' }, {})).status).toBe(200);
    expect((await api(app, 'POST', '/people', { username: 'alice', password: 'secret-2' }, {})).status).toBe(200);
    const bob = await api(app, 'POST', '/people', { username: 'bob', password: 'secret-3' }, {});
    expect((await api(app, 'DELETE', '/dashboard/api/resources/members')).status).toBe(200);
    const renamed = await api(app, 'POST', '/dashboard/api/resources/people/rename', { to: 'members' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ moved: 1, notMoved: 1 });
    expect(renamed.body.message).toMatch(/1 objects stayed in the store under people: a unique property/);
    expect((await api(app, 'GET', `/members/${String(bob.body.id)}`, undefined, {})).body).toMatchObject({ username: 'bob' });
    // Finished: the next change of names is not held up by it.
    expect((await api(app, 'POST', '/dashboard/api/resources', { name: 'later', type: 'Collection' })).status).toBe(201);
  });

  it('renaming a folder renames the collections nested in it, objects included', async () => {
    const { app, dir } = await start('development', { 'resources/shop/config.json': { type: 'Collection', properties: {} }, 'resources/shop/items/config.json': { type: 'Collection', properties: { name: { type: 'string' } } } });
    const item = await api(app, 'POST', '/shop/items', { name: 'kettle' }, {});
    expect(item.status).toBe(200);
    await api(app, 'POST', '/shop', {}, {});
    const renamed = await api(app, 'POST', '/dashboard/api/resources/shop/rename', { to: 'store' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.moved).toBe(2);
    expect(existsSync(join(dir, 'resources/store/items/config.json'))).toBe(true);
    expect((await api(app, 'GET', `/store/items/${String(item.body.id)}`, undefined, {})).body).toMatchObject({ name: 'kettle' });
    expect((await api(app, 'GET', '/store', undefined, {})).body).toHaveLength(1);
  });
});

/** No absolute path of this machine in an answer: not the app folder, nor any other. */
function expectNoServerPath(body: unknown, dir: string): void {
  const text = JSON.stringify(body);
  expect(text).not.toContain(dir);
  expect(text).not.toContain(tmpdir());
  expect(text).not.toMatch(/(^|[^\w:/.])\/(tmp|work|home|root|usr|var|srv|opt|etc|app)\//);
}

describe('dashboard: off when asked, and out of the way of an app\'s own /dashboard', () => {
  it('app.json "dashboard": false serves no dashboard at all', async () => {
    const { app } = await start('development', { 'app.json': { dashboard: false } });
    expect((await fetch(`${app.url}/dashboard/`)).status).toBe(404);
    expect((await api(app, 'GET', '/dashboard/api/app')).status).toBe(404);
  });

  it('a Deployd app with its own dashboard resource keeps it', async () => {
    const { app } = await start('development', { 'resources/dashboard/config.json': { type: 'Collection', properties: { widget: { type: 'string' } } } });
    expect((await api(app, 'POST', '/dashboard', { widget: 'clock' }, {})).status).toBe(200);
    expect((await api(app, 'GET', '/dashboard/api/app')).status).toBe(404);
  });
});

describe('dashboard API: changes are written to the app folder and served at once', () => {
  it('create, configure, rename (objects follow) and delete (kept in .svc/trash)', async () => {
    const { app, dir } = await start('development');
    const created = await api(app, 'POST', '/dashboard/api/resources', { name: 'books', type: 'Collection' });
    expect(created.status).toBe(201);
    expect(JSON.parse(await readFile(join(dir, 'resources/books/config.json'), 'utf8'))).toEqual({ type: 'Collection', properties: {}, rules: { create: { '@me.id': { $exists: true } } } });
    const props = { title: { type: 'string', required: true }, pages: { type: 'number' } };
    expect((await api(app, 'PUT', '/dashboard/api/resources/books', { config: { type: 'Collection', properties: props } })).status).toBe(200);
    // Served at once: validation of the new properties.
    const bad = await api(app, 'POST', '/books', { pages: 3 });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toHaveProperty('title');
    const book = await api(app, 'POST', '/books', { title: 'Dune', pages: 412 });
    expect(book.status).toBe(200);

    const renamed = await api(app, 'POST', '/dashboard/api/resources/books/rename', { to: 'library/books' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.moved).toBe(1);
    expect(existsSync(join(dir, 'resources/books'))).toBe(false);
    expect((await api(app, 'GET', '/books', undefined, {})).status).toBe(404);
    expect((await api(app, 'GET', `/library/books/${String(book.body.id)}`, undefined, {})).body).toMatchObject({ title: 'Dune', pages: 412 });

    const deleted = await api(app, 'DELETE', '/dashboard/api/resources/library/books');
    expect(deleted.status).toBe(200);
    expect(String(deleted.body.trash)).toMatch(/^\.svc\/trash\/library__books-/);
    expect(existsSync(join(dir, String(deleted.body.trash), 'config.json'))).toBe(true);
    expect((await api(app, 'GET', '/library/books', undefined, {})).status).toBe(404);
  });

  it('a config that does not load is refused with the reason and undone; the app keeps serving', async () => {
    const { app, dir } = await start('development');
    const before = await readFile(join(dir, 'resources/todos/config.json'), 'utf8');
    const res = await api(app, 'PUT', '/dashboard/api/resources/todos', { config: { type: 'Collection', properties: { title: { type: 'text' } } } });
    expect(res.status).toBe(400);
    expect(res.body.message).toContain('title');
    expect(await readFile(join(dir, 'resources/todos/config.json'), 'utf8')).toBe(before);
    expect((await api(app, 'POST', '/todos', { title: 'still here' }, {})).status).toBe(200);
    // A type cannot be changed in place.
    expect((await api(app, 'PUT', '/dashboard/api/resources/todos', { config: { type: 'UserCollection' } })).status).toBe(400);
  });

  it('Email settings are checked against the type\'s schema before anything is written', async () => {
    const { app, dir } = await start('development');
    const missing = await api(app, 'POST', '/dashboard/api/resources', { name: 'mail', type: 'Email' });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toHaveProperty('host');
    expect(existsSync(join(dir, 'resources/mail'))).toBe(false);
    expect((await api(app, 'POST', '/dashboard/api/resources', { name: 'mail', type: 'Email', settings: { host: '127.0.0.1' } })).status).toBe(201);
    const config = JSON.parse(await readFile(join(dir, 'resources/mail/config.json'), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ type: 'Email', host: '127.0.0.1', port: 25 });
    const wrong = await api(app, 'PUT', '/dashboard/api/resources/mail', { config: { ...config, port: 'twenty-five', ssl: 'yes' } });
    expect(wrong.status).toBe(400);
    expect(Object.keys(wrong.body.errors ?? {}).sort()).toEqual(['port', 'ssl']);
    // The type's own check (the port's range) runs on reload: refused and undone.
    const range = await api(app, 'PUT', '/dashboard/api/resources/mail', { config: { ...config, port: 70000 } });
    expect(range.status).toBe(400);
    expect(range.body.errors).toHaveProperty('port');
    expect(JSON.parse(await readFile(join(dir, 'resources/mail/config.json'), 'utf8'))).toEqual(config);
  });

  it('event scripts: syntax errors with their line before saving, then the server runs the saved one', async () => {
    const { app, dir } = await start('development');
    const broken = 'var ok = 1;\nif (this.title === ) {\n}';
    const check = await api(app, 'POST', '/dashboard/api/check', { source: broken, event: 'post' });
    expect(check.body).toMatchObject({ ok: false, problem: { line: 2 } });
    const save = await api(app, 'PUT', '/dashboard/api/resources/todos/events/post.js', { source: broken });
    expect(save.status).toBe(400);
    expect(save.body.errors?.source).toMatch(/^line 2/);
    expect(existsSync(join(dir, 'resources/todos/post.js'))).toBe(false);

    const script = "if (this.title.length < 3) error('title', 'at least 3 characters');";
    expect((await api(app, 'PUT', '/dashboard/api/resources/todos/events/post.js', { source: script })).status).toBe(200);
    expect(await readFile(join(dir, 'resources/todos/post.js'), 'utf8')).toBe(script);
    const refused = await api(app, 'POST', '/todos', { title: 'ab' }, {});
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual({ title: 'at least 3 characters' });
    expect((await api(app, 'GET', '/dashboard/api/resources/todos/events/post.js')).body).toEqual({ source: script });
    // An empty text removes the file.
    expect((await api(app, 'PUT', '/dashboard/api/resources/todos/events/post.js', { source: '' })).status).toBe(200);
    expect(existsSync(join(dir, 'resources/todos/post.js'))).toBe(false);
    expect((await api(app, 'POST', '/todos', { title: 'ab' }, {})).status).toBe(200);
  });

  it('a trial run shows what a script would do, and writes nothing', async () => {
    const { app } = await start('development');
    await api(app, 'POST', '/todos', { title: 'existing' }, {});
    const source = [
      "console.log('checking', this.title);",
      "errorIf(this.title === 'bad', 'title', 'not that one');",
      'this.slug = this.title.toLowerCase();',
      "hide('secret');",
      "emit('todo:new', { title: this.title });",
      'const all = await svc.todos.get({});',
      "console.log('there are', all.length);",
      "await svc.todos.post({ title: 'sneaky' }).catch((e) => console.log('refused', e.status));",
    ].join('\n');
    const ok = await api(app, 'POST', '/dashboard/api/try', { name: 'todos', event: 'post', source, object: { title: 'Hello' } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ object: { title: 'Hello', slug: 'hello' }, hidden: ['secret'], logs: ['checking Hello', 'there are 1', 'refused 403'], emits: [['todo:new', { title: 'Hello' }]], refused: ['POST /todos'] });
    expect(ok.body.errors).toBeUndefined();
    const bad = await api(app, 'POST', '/dashboard/api/try', { name: 'todos', event: 'post', source, object: { title: 'bad' } });
    expect(bad.body.errors).toEqual({ title: 'not that one' });
    const thrown = await api(app, 'POST', '/dashboard/api/try', { name: 'todos', event: 'post', source: 'null.x;', object: {} });
    expect(thrown.body.failure).toMatchObject({ line: 1 });
    const loop = await api(app, 'POST', '/dashboard/api/try', { name: 'todos', event: 'post', source: 'for(;;){}', object: {} });
    expect(String((loop.body.failure as { message: string }).message)).toMatch(/time/i);
    // Nothing was stored by the trials.
    expect(((await api(app, 'GET', '/todos', undefined, {})).body as unknown as unknown[]).length).toBe(1);
  });

  it('the typed client\'s types download, and the live stream carries changes and log lines', async () => {
    const { app } = await start('development');
    const types = await api(app, 'GET', '/dashboard/api/types');
    expect(types.headers.get('content-disposition')).toContain('svc-types.ts');
    expect(String(types.body)).toContain('todos');

    const controller = new AbortController();
    const res = await fetch(`${app.url}/dashboard/api/stream`, { headers: { 'svc-ssh-key': 'dev' }, signal: controller.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    const seen: string[] = [];
    const collect = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        seen.push(value);
      }
    })().catch(() => undefined);
    await api(app, 'PUT', '/dashboard/api/resources/todos/events/post.js', { source: "console.log('saw', this.title);" });
    const created = await api(app, 'POST', '/todos', { title: 'live one' }, {});
    const deadline = Date.now() + 5000;
    while (!(seen.join('').includes('saw live one') && seen.join('').includes(String(created.body.id))) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    await collect;
    const text = seen.join('');
    expect(text).toContain(`"kind":"change","collection":"todos","op":"insert","id":"${String(created.body.id)}"`);
    expect(text).toContain('saw live one');
    expect(text).toContain('"kind":"reload"');
  });

  it('requests keep being answered while the dashboard saves changes', async () => {
    const { app } = await start('development');
    let stop = false;
    let failures = 0;
    let answered = 0;
    const loops = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const res = await fetch(`${app.url}/todos`);
        await res.arrayBuffer();
        if (res.status !== 200) failures++;
        answered++;
      }
    });
    for (let i = 0; i < 5; i++) {
      const res = await api(app, 'PUT', '/dashboard/api/resources/todos', { config: { type: 'Collection', properties: { title: { type: 'string', required: true }, [`p${i}`]: { type: 'number' } } } });
      expect(res.status).toBe(200);
    }
    stop = true;
    await Promise.all(loops);
    expect(failures).toBe(0);
    expect(answered).toBeGreaterThan(10);
  });
});
