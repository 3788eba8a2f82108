import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SVC_BIN, runSvc, startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';

let dir: string;
const running: SvcProcess[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-cli-'));
});
afterEach(async () => {
  for (const p of running.splice(0)) await p.stop('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

async function start(args: string[], env: Record<string, string> = {}): Promise<SvcProcess> {
  const p = await startSvc(args, env);
  running.push(p);
  return p;
}

if (!process.env.SVC_TEST_MONGODB_URL) process.stderr.write('SKIPPED svc --db on MongoDB (cli.test.ts): SVC_TEST_MONGODB_URL is not set\n');

/** Root in development (any key from this machine): the durability tests write past the scaffolded rules. */
const ROOT = { 'svc-ssh-key': 'development' };

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

describe('svc command line', () => {
  it('svc create scaffolds an app that runs, serves public/ and its collection, and keeps data across a restart', async () => {
    const app = join(dir, 'app');
    const created = await runSvc(['create', app]);
    expect(created.code).toBe(0);
    expect(existsSync(join(app, 'resources/todos/config.json'))).toBe(true);
    // The data and the root keys stay out of the app's repository; the app has a package.json.
    expect((await readFile(join(app, '.gitignore'), 'utf8')).split('\n')).toEqual(expect.arrayContaining(['data/', '.svc/', 'node_modules/']));
    expect(JSON.parse(await readFile(join(app, 'package.json'), 'utf8'))).toMatchObject({ name: 'app', private: true, scripts: { start: 'svc .' }, dependencies: { '@svc/server': expect.stringMatching(/^file:\/.*apps\/server$/) as unknown } });
    let p = await start([app]);
    expect(p.stderr()).toContain('listens on 127.0.0.1 only');
    const page = await fetch(`${p.url}/`);
    expect(page.headers.get('content-type')).toContain('text/html');
    // The scaffolded rules: sign-up is open; a todo is made by a logged-in user, as its owner.
    const user = (await json(`${p.url}/users`, { method: 'POST', body: JSON.stringify({ username: 'ann', password: 'pw-ann-1' }) })).body as { id: string };
    const login = await fetch(`${p.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ann', password: 'pw-ann-1' }) });
    const cookie = (login.headers.getSetCookie().find((c) => c.startsWith('sid=')) ?? '').split(';')[0] as string;
    const made = await json(`${p.url}/todos`, { method: 'POST', headers: { cookie }, body: JSON.stringify({ title: 'persist me', owner: user.id }) });
    expect(made.status).toBe(200);
    // Nobody creates without a login, nor in another user's name.
    expect((await json(`${p.url}/todos`, { method: 'POST', body: JSON.stringify({ title: 'anonymous' }) })).status).toBe(403);
    expect((await json(`${p.url}/todos`, { method: 'POST', headers: { cookie }, body: JSON.stringify({ title: 'forged', owner: 'someone-else' }) })).status).toBe(403);
    expect(await p.stop('SIGTERM')).toBe(0);
    expect(p.stderr()).toContain('shutting down');
    p = await start([app]);
    const list = await json(`${p.url}/todos`);
    expect(list.body).toEqual([made.body]);
    expect((await runSvc(['create', app])).code).not.toBe(0);
  });

  it('a second svc on the same app folder refuses to start, naming the first; the first keeps every write (issue 11, 4)', async () => {
    const app = join(dir, 'app');
    await runSvc(['create', app]);
    const first = await start([app]);
    const second = await runSvc([app, '--port', '0']);
    expect(second.code).not.toBe(0);
    expect(second.stderr).toMatch(new RegExp(`data folder .* is in use by process ${first.child.pid}`));
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(((await json(`${first.url}/todos`, { method: 'POST', headers: ROOT, body: JSON.stringify({ title: `t${i}` }) })).body as { id: string }).id);
    expect(await first.stop('SIGTERM')).toBe(0);
    const again = await start([app]);
    const list = (await json(`${again.url}/todos`)).body as { id: string }[];
    expect(list.map((t) => t.id).sort()).toEqual([...ids].sort());
  });

  it('every acknowledged write survives kill -9', async () => {
    const app = join(dir, 'app');
    await runSvc(['create', app]);
    let p = await start([app]);
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) {
      const res = await json(`${p.url}/todos`, { method: 'POST', headers: ROOT, body: JSON.stringify({ title: `t${i}` }) });
      ids.push((res.body as { id: string }).id);
    }
    await p.stop('SIGKILL');
    p = await start([app]);
    const list = (await json(`${p.url}/todos`)).body as { id: string }[];
    expect(list.map((o) => o.id).sort()).toEqual(ids.sort());
  });

  it('keygen and showkey manage .svc/keys.json; production accepts only that key', async () => {
    const app = join(dir, 'app');
    await runSvc(['create', app]);
    expect((await runSvc(['showkey', app])).code).toBe(1);
    expect((await runSvc(['keygen', app])).code).toBe(0);
    const shown = await runSvc(['showkey', app]);
    const key = shown.stdout.trim();
    expect(key).toMatch(/^[0-9a-f]{256}$/);
    const keys = JSON.parse(await readFile(join(app, '.svc/keys.json'), 'utf8')) as Record<string, boolean>;
    expect(keys[key]).toBe(true);
    const p = await start([app, '--env', 'production', '--host', '127.0.0.1']);
    expect((await json(`${p.url}/todos/count`, { headers: { 'svc-ssh-key': key } })).status).toBe(200);
    // One character off (a key that ends in 0 gets a 1: the test failed 1 time in 16 before).
    const offByOne = `${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}`;
    expect((await json(`${p.url}/todos/count`, { headers: { 'svc-ssh-key': offByOne } })).status).toBe(403);
  });

  it('a production start says it is production, whoever chose it; a finished drain says so before the exit (issue 38, 18)', async () => {
    const app = join(dir, 'app');
    await runSvc(['create', app]);
    const key = 'k'.repeat(40);
    const byFlag = await start([app, '--env', 'production', '--host', '127.0.0.1'], { SVC_ROOT_KEYS: key, NODE_ENV: '', SVC_ENV: '' });
    expect(byFlag.stderr()).toMatch(/ info production \(--env\)/);
    expect((await json(`${byFlag.url}/todos`)).status).toBe(200);
    expect(await byFlag.stop('SIGTERM')).toBe(0);
    expect(byFlag.stderr()).toMatch(/ info shutdown: drained in \d+ ms, no request cut; exiting\n/);
    const byVariable = await start([app, '--host', '127.0.0.1'], { SVC_ROOT_KEYS: key, NODE_ENV: '', SVC_ENV: 'production' });
    expect(byVariable.stderr()).toMatch(/ info production \(SVC_ENV\)/);
    expect(await byVariable.stop('SIGTERM')).toBe(0);
    // Development says so as before, and Ctrl-C's quick drain is reported too.
    const dev = await start([app], { NODE_ENV: '', SVC_ENV: '' });
    expect(dev.stderr()).not.toMatch(/ info production/);
    expect(dev.stderr()).toMatch(/development mode/);
    expect(await dev.stop('SIGINT')).toBe(0);
    expect(dev.stderr()).toMatch(/shutdown: drained in \d+ ms/);
  }, 120_000);

  it('a config naming a type that is not installed stops start-up with a clear message', async () => {
    await mkdir(join(dir, 'resources/mail'), { recursive: true });
    await writeFile(join(dir, 'resources/mail/config.json'), JSON.stringify({ type: 'Mailer' }));
    const res = await runSvc([dir, '--port', '0']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('resource mail: type Mailer is not installed; add its package');
  });

  it('bad flags answer usage and exit 2', async () => {
    expect((await runSvc([dir, '--env', 'staging'])).code).toBe(2);
    expect((await runSvc([dir, '--port', 'x'])).code).toBe(2);
    expect((await runSvc(['--bogus'])).code).toBe(2);
    expect((await runSvc(['--help'])).stdout).toContain('usage:');
  });

  // Issue 15 (6, 7, 10): one line, an exit code and what to do next, never a stack trace.
  const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at |node:internal|\{\s*"/);

  it('PORT sets the port when --port is not given', async () => {
    const app = join(dir, 'app');
    await runSvc(['create', app]);
    const child = spawn(process.execPath, ['--no-node-snapshot', SVC_BIN, app], { env: { ...process.env, PORT: '0', SVC_WATCH: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(out)), 15_000);
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /listening on port (\d+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        });
      });
      expect(port).not.toBe(2403);
      expect((await fetch(`http://127.0.0.1:${port}/todos`)).status).toBe(200);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('an old Node is told what to install before anything else runs', async () => {
    const old = await runSvc(['--help'], { NODE_OPTIONS: "--import=data:text/javascript,Object.defineProperty(process,'versions',{value:{...process.versions,node:'22.11.0'}})" });
    expect(old.code).toBe(1);
    expect(old.stderr).toContain('svc needs Node.js 22.12 or newer');
    expect(old.stderr).toContain('this is Node 22.11.0');
  });

  it('help, per-command help, unknown options and extra arguments', async () => {
    const all = await runSvc(['help']);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain('svc migrate-deployd <dir>');
    const one = await runSvc(['help', 'create']);
    expect(one.stdout).toMatch(/^usage: svc create <dir>\n/);
    expect((await runSvc(['create', '--help'])).stdout).toMatch(/^usage: svc create <dir>\n/);
    const unknown = await runSvc(['--bogus']);
    expect(unknown.stderr).toMatch(/^svc: unknown option --bogus\n/);
    expect(unknown.stderr).not.toContain('positional');
    const extra = await runSvc(['create', join(dir, 'a'), join(dir, 'b')]);
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain(`svc create: unexpected argument ${join(dir, 'b')}`);
    const foreign = await runSvc(['create', join(dir, 'c'), '--port', '1']);
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toContain('--port does not apply to svc create');
    expect(existsSync(join(dir, 'c'))).toBe(false);
  });

  it('missing, non-app and non-empty folders are refused in one line; nothing is created', async () => {
    await writeFile(join(dir, 'file.txt'), 'x');
    const create = await runSvc(['create', dir]);
    expect(create.code).toBe(1);
    expect(create.stderr).toBe(`svc: ${dir} already exists and is not empty\n`);
    const types = await runSvc(['types', join(dir, 'missing')]);
    expect(types.code).toBe(1);
    expect(types.stderr).toMatch(/missing: no such folder; create an app with: svc create/);
    const keygen = await runSvc(['keygen', join(dir, 'typo')]);
    expect(keygen.code).toBe(1);
    expect(existsSync(join(dir, 'typo'))).toBe(false);
    const serve = await runSvc([dir, '--port', '0']);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toMatch(/is not an svc app folder/);
    expect(existsSync(join(dir, 'data'))).toBe(false);
    const asApp = await runSvc(['help', 'nonsense']);
    expect(asApp.code).toBe(2);
    for (const out of [create.stderr, types.stderr, keygen.stderr, serve.stderr]) noStack(out);
  });

  it('an unreachable --db or --redis, a script syntax error in production and a missing root key say so', async () => {
    const app = join(dir, 'app');
    await runSvc(['create', app]);
    // It gives up after its 5 s connect budget (the message says so); a start that hung would fail
    // by the test's own timeout, not by a clock measured here (no timing assertions).
    const db = await runSvc([app, '--port', '0', '--db', 'mongodb://127.0.0.1:1/x'], {});
    expect(db.code).toBe(1);
    expect(db.stderr).toMatch(/svc: cannot reach MongoDB at mongodb:\/\/127\.0\.0\.1:1\/x within 5000 ms/);
    const redis = await runSvc([app, '--port', '0', '--redis', 'redis://127.0.0.1:1']);
    expect(redis.code).toBe(1);
    // Log lines of the start (CORS), then one line that says what failed.
    expect(redis.stderr.trim().split('\n').at(-1)).toMatch(/^svc: cannot connect to redis at redis:\/\/127\.0\.0\.1:1/);
    noStack(redis.stderr);
    const noKey = await start([app, '--env', 'production', '--host', '127.0.0.1']);
    await noKey.stop();
    expect(noKey.stdout() + noKey.stderr()).toContain('production without a root key');
    await writeFile(join(app, 'resources/todos/post.js'), 'var ok = 1;\nthis.x = ;\n');
    const syntax = await runSvc([app, '--port', '0', '--env', 'production']);
    expect(syntax.code).toBe(1);
    expect(syntax.stderr).toMatch(/resources\/todos\/post\.js:2: /);
  }, 30_000);

  it('runs a Deployd app folder: unknown keys warned, date type, users without properties, nested resources', async () => {
    await writeFile(join(dir, 'app.dpd'), '');
    await mkdir(join(dir, 'resources/users'), { recursive: true });
    await writeFile(join(dir, 'resources/users/config.json'), JSON.stringify({ type: 'UserCollection' }));
    await mkdir(join(dir, 'resources/shop/items'), { recursive: true });
    await writeFile(
      join(dir, 'resources/shop/items/config.json'),
      JSON.stringify({ type: 'Collection', typeLabel: 'Collection', order: 1, path: '/shop/items', sortBy: 'name', properties: { name: { name: 'name', type: 'string', typeLabel: 'string', required: false, id: 'name', order: 0 }, when: { type: 'date' } } }),
    );
    const p = await start([dir]);
    expect(p.stderr()).toContain('resource shop/items: ignoring config keys sortBy\n');
    const item = await json(`${p.url}/shop/items`, { method: 'POST', body: JSON.stringify({ name: 'x', when: '2024-01-02' }) });
    expect(item.body).toMatchObject({ name: 'x', when: '2024-01-02T00:00:00.000Z' });
    const user = await json(`${p.url}/users`, { method: 'POST', body: JSON.stringify({ username: 'u', password: 'p' }) });
    expect(user.status).toBe(200);
  });

  it.runIf(process.env.SVC_TEST_MONGODB_URL)('--db runs the app on MongoDB', async () => {
    const app = join(dir, 'app');
    await runSvc(['create', app]);
    const url = `${(process.env.SVC_TEST_MONGODB_URL ?? '').replace(/\/$/, '')}/svc_cli_${Date.now()}`;
    const p = await start([app, '--db', url]);
    const made = await json(`${p.url}/todos`, { method: 'POST', headers: ROOT, body: JSON.stringify({ title: 'in mongo' }) });
    expect((await json(`${p.url}/todos/${(made.body as { id: string }).id}`)).body).toEqual(made.body);
    expect(existsSync(join(app, 'data'))).toBe(false);
  });
});
