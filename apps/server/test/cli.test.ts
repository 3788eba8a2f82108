import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runSvc, startSvc } from './cli.js';
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
    let p = await start([app]);
    expect(p.stderr()).toContain('listens on 127.0.0.1 only');
    const page = await fetch(`${p.url}/`);
    expect(page.headers.get('content-type')).toContain('text/html');
    const made = await json(`${p.url}/todos`, { method: 'POST', body: JSON.stringify({ title: 'persist me' }) });
    expect(made.status).toBe(200);
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
    for (let i = 0; i < 50; i++) ids.push(((await json(`${first.url}/todos`, { method: 'POST', body: JSON.stringify({ title: `t${i}` }) })).body as { id: string }).id);
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
      const res = await json(`${p.url}/todos`, { method: 'POST', body: JSON.stringify({ title: `t${i}` }) });
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

  it('runs a Deployd app folder: unknown keys warned, date type, users without properties, nested resources', async () => {
    await writeFile(join(dir, 'app.dpd'), '');
    await mkdir(join(dir, 'resources/users'), { recursive: true });
    await writeFile(join(dir, 'resources/users/config.json'), JSON.stringify({ type: 'UserCollection' }));
    await mkdir(join(dir, 'resources/shop/items'), { recursive: true });
    await writeFile(
      join(dir, 'resources/shop/items/config.json'),
      JSON.stringify({ type: 'Collection', typeLabel: 'Collection', properties: { name: { name: 'name', type: 'string', typeLabel: 'string', required: false, id: 'name', order: 0 }, when: { type: 'date' } } }),
    );
    const p = await start([dir]);
    expect(p.stderr()).toContain('ignoring config keys typeLabel');
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
    const made = await json(`${p.url}/todos`, { method: 'POST', body: JSON.stringify({ title: 'in mongo' }) });
    expect((await json(`${p.url}/todos/${(made.body as { id: string }).id}`)).body).toEqual(made.body);
    expect(existsSync(join(app, 'data'))).toBe(false);
  });
});
