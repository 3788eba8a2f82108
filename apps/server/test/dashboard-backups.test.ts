import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngineStore, silentLogger } from '@svc/core';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';
import { runSvc } from './cli.js';

// Issue 23 (6): the dashboard's Backups page API: list, take (online), download; root only.

const KEY = 'b'.repeat(64);
const ROOT = { 'svc-ssh-key': KEY };
let cleanup: (() => Promise<void>)[] = [];
if (!process.env.SVC_TEST_MONGODB_URL) process.stderr.write('SKIPPED the dashboard backups on MongoDB: SVC_TEST_MONGODB_URL is not set\n');

afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function start(extra: Record<string, object> = {}): Promise<{ app: RunningApp; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-dash-backups-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const files: Record<string, object> = {
    'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
    '.svc/keys.json': { [KEY]: true },
    ...extra,
  };
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), JSON.stringify(content));
  }
  const app = await startApp({ appDir: dir, port: 0, env: 'production', host: '127.0.0.1', logger: silentLogger });
  cleanup.push(() => app.close().then(() => undefined));
  return { app, dir };
}

/** A raw request: fetch would resolve `..` in the path before sending it. */
function raw(app: RunningApp, path: string, headers: Record<string, string> = ROOT): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${app.url}/`, { method: 'GET', path, headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('dashboard Backups API', () => {
  it('answers root only: every route is 401 without the root key', async () => {
    const { app, dir } = await start();
    await mkdir(join(dir, 'backups'));
    await writeFile(join(dir, 'backups/backup-2026-01-01T00-00-00Z.jsonl'), 'secret');
    for (const [method, path] of [
      ['GET', '/dashboard/api/backups'],
      ['POST', '/dashboard/api/backups'],
      ['GET', '/dashboard/api/backups/backup-2026-01-01T00-00-00Z.jsonl'],
      ['HEAD', '/dashboard/api/backups/backup-2026-01-01T00-00-00Z.jsonl'],
      ['POST', '/dashboard/api/backups/backup-2026-01-01T00-00-00Z.jsonl/restore'],
    ] as const) {
      for (const headers of [{}, { 'svc-ssh-key': 'development' }, { 'svc-ssh-key': KEY.slice(1) }] as Record<string, string>[]) {
        const res = await fetch(`${app.url}${path}`, { method, headers: { ...headers, 'content-type': 'application/json' }, ...(method === 'POST' ? { body: JSON.stringify({ confirm: 'backup-2026-01-01T00-00-00Z.jsonl' }) } : {}) });
        expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(await res.text()).not.toContain('secret');
      }
    }
    // Nothing was taken by the refused POSTs.
    expect(await readdir(join(dir, 'backups'))).toEqual(['backup-2026-01-01T00-00-00Z.jsonl']);
  });

  it('takes a backup while writers write; lists it; the download imports into a fresh app with svc import --from', async () => {
    const { app, dir } = await start();
    expect((await (await fetch(`${app.url}/dashboard/api/backups`, { headers: ROOT })).json()) as unknown).toEqual({ store: 'embedded', backups: [] });
    const acknowledged: string[] = [];
    let stop = false;
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; i < 2000 && !stop; i++) {
        const res = await fetch(`${app.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: `w${w}-${i}` }) });
        if (res.status !== 200) throw new Error(`write answered ${res.status}`);
        acknowledged.push(((await res.json()) as { id: string }).id);
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    while (acknowledged.length < 50) await new Promise((r) => setTimeout(r, 10));
    const before = [...acknowledged];
    const taken = await fetch(`${app.url}/dashboard/api/backups`, { method: 'POST', headers: ROOT });
    expect(taken.status).toBe(201);
    const made = (await taken.json()) as { name: string; size: number; objects: number };
    stop = true;
    await Promise.all(writers);
    expect(made.name).toMatch(/^backup-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.jsonl$/);
    expect(made.objects).toBeGreaterThanOrEqual(before.length);

    const listed = (await (await fetch(`${app.url}/dashboard/api/backups`, { headers: ROOT })).json()) as { backups: { name: string; size: number; time: string }[] };
    expect(listed.backups).toEqual([{ name: made.name, size: made.size, time: expect.any(String) as string }]);

    const res = await fetch(`${app.url}/dashboard/api/backups/${made.name}`, { headers: ROOT });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${made.name}"`);
    const text = await res.text();
    expect(text.length).toBe(made.size);
    const file = join(dir, '..', `${made.name}-downloaded`);
    await writeFile(file, text);
    cleanup.push(() => rm(file, { force: true }));

    const parent = await mkdtemp(join(tmpdir(), 'svc-dash-backups-fresh-'));
    cleanup.push(() => rm(parent, { recursive: true, force: true }));
    const fresh = join(parent, 'app');
    expect((await runSvc(['create', fresh])).code).toBe(0);
    const cli = await runSvc(['import', fresh, '--from', file]);
    expect(cli.code, cli.stderr).toBe(0);
    const store = await createEngineStore({ dir: join(fresh, 'data') });
    try {
      const ids = new Set((await store.collection('todos').find({})).map((d) => d.id));
      expect(ids.size).toBe(text.split('\n').filter((l) => l.startsWith('{"collection":"todos"')).length);
      // Every write answered before the backup was asked for is in it.
      for (const id of before) expect(ids.has(id), id).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('serves backup files only: no traversal, no symbolic link, no other file of the folder', async () => {
    const { app, dir } = await start();
    await mkdir(join(dir, 'backups'));
    await writeFile(join(dir, 'backups/notes.txt'), 'not a backup');
    await writeFile(join(dir, 'backups/backup-2026-01-01T00-00-00Z.jsonl.partial'), 'half');
    // A link in backups/ pointing out, under a backup's name.
    await symlink(join(dir, '.svc/keys.json'), join(dir, 'backups/backup-2026-01-02T00-00-00Z.jsonl'));
    await symlink('../.svc/keys.json', join(dir, 'backups/scheduled-2026-01-03T00-00-00Z.jsonl'));
    const listed = (await (await fetch(`${app.url}/dashboard/api/backups`, { headers: ROOT })).json()) as { backups: unknown[] };
    expect(listed.backups).toEqual([]);
    for (const path of [
      '/dashboard/api/backups/../../.svc/keys.json',
      '/dashboard/api/backups/..%2f.svc%2fkeys.json',
      '/dashboard/api/backups/%2e%2e%2f.svc%2fkeys.json',
      '/dashboard/api/backups/%2e%2e/.svc/keys.json',
      '/dashboard/api/backups/%2fetc%2fpasswd',
      `/dashboard/api/backups/${encodeURIComponent(join(dir, '.svc/keys.json'))}`,
      '/dashboard/api/backups/notes.txt',
      '/dashboard/api/backups/backup-2026-01-01T00-00-00Z.jsonl.partial',
      '/dashboard/api/backups/backup-2026-01-02T00-00-00Z.jsonl',
      '/dashboard/api/backups/scheduled-2026-01-03T00-00-00Z.jsonl',
      '/dashboard/api/backups/backup-2026-01-01T00-00-00Z.jsonl%00.txt',
    ]) {
      const res = await raw(app, path);
      expect(res.status, path).not.toBe(200);
      expect(res.body, path).not.toContain(KEY);
      expect(res.body, path).not.toContain('root:');
    }
  });

  it('two takes at once: each answers a complete backup or 409, never two writers of one file', async () => {
    const { app, dir } = await start();
    await fetch(`${app.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":"x"}' });
    const answers = await Promise.all([0, 1, 2].map(() => fetch(`${app.url}/dashboard/api/backups`, { method: 'POST', headers: ROOT })));
    const statuses = answers.map((r) => r.status);
    expect(statuses).toContain(201);
    for (const s of statuses) expect([201, 409]).toContain(s);
    const files = (await readdir(join(dir, 'backups'))).sort();
    expect(files.filter((f) => f.endsWith('.partial'))).toEqual([]);
    expect(files).toHaveLength(statuses.filter((s) => s === 201).length);
  });

  it('restores a backup while writers write: 200 or 503 (Retry-After) to them, the backup exactly afterwards, the rest saved; sessions end', async () => {
    const users = { 'resources/users/config.json': { type: 'UserCollection', properties: { name: { type: 'string' } } } };
    const { app, dir } = await start(users);
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    expect((await post('/users', { username: 'alice', password: 'a long secret' })).status).toBe(200);
    for (let i = 0; i < 300; i++) expect((await post('/todos', { title: `old-${i}` })).status).toBe(200);
    const backup = (await (await fetch(`${app.url}/dashboard/api/backups`, { method: 'POST', headers: ROOT })).json()) as { name: string };
    const later = (await (await post('/todos', { title: 'after the backup' })).json()) as { id: string };
    expect((await post('/users', { username: 'bob', password: 'another secret' })).status).toBe(200);
    const login = await post('/users/login', { username: 'alice', password: 'a long secret' });
    expect(login.status).toBe(200);
    const cookie = (login.headers.get('set-cookie') as string).split(';')[0] as string;
    expect(((await (await fetch(`${app.url}/users/me`, { headers: { cookie } })).json()) as { username: string }).username).toBe('alice');

    const endedSeen: string[] = [];
    app.server.sessions.onEnd((ids) => void endedSeen.push(...ids));
    const acked: string[] = [];
    const statuses = new Map<number, number>();
    let retryAfterMissing = 0;
    let stop = false;
    const writer = async (): Promise<void> => {
      for (let i = 0; i < 3000 && !stop; i++) {
        const res = await post('/todos', { title: 'during' });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 503 && res.headers.get('retry-after') === null) retryAfterMissing++;
        const body = (await res.json()) as { id?: string };
        if (res.status === 200) acked.push(body.id as string);
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    while (acked.length < 20) await new Promise((r) => setTimeout(r, 10));
    const restored = await fetch(`${app.url}/dashboard/api/backups/${backup.name}/restore`, { method: 'POST', headers: { ...ROOT, 'content-type': 'application/json' }, body: JSON.stringify({ confirm: backup.name }) });
    const answer = (await restored.json()) as { objects: number; safetyFile: string; sessionsEnded: number };
    expect(restored.status, JSON.stringify(answer)).toBe(200);
    // A little more writing after the restore, then stop.
    const afterCount = acked.length + 20;
    for (let i = 0; i < 500 && acked.length < afterCount; i++) await new Promise((r) => setTimeout(r, 10));
    stop = true;
    await Promise.all(writers);
    expect([...statuses.keys()].filter((s) => s !== 200 && s !== 503)).toEqual([]);
    expect(retryAfterMissing).toBe(0);
    expect(answer.safetyFile).toMatch(/^before-restore-.*\.jsonl$/);
    expect(answer.sessionsEnded).toBeGreaterThanOrEqual(1);

    const ids = async (file: string): Promise<Set<string>> => {
      const text = await (await import('node:fs/promises')).readFile(file, 'utf8');
      return new Set(text.split('\n').filter((l) => l.startsWith('{"collection":"todos"')).map((l) => (JSON.parse(l) as { object: { id: string } }).object.id));
    };
    const inBackup = await ids(join(dir, 'backups', backup.name));
    const inSafety = await ids(join(dir, 'backups', answer.safetyFile));
    const final = new Set(((await (await fetch(`${app.url}/todos`)).json()) as { id: string }[]).map((t) => t.id));
    expect(inBackup.size).toBe(300);
    // Everything of the backup is back; what was written after it is only in the saved file.
    for (const id of inBackup) expect(final.has(id)).toBe(true);
    expect(final.has(later.id)).toBe(false);
    expect(inSafety.has(later.id)).toBe(true);
    // Each write answered 200 was either before the restore (saved, then replaced) or after it (kept): never lost, never both.
    for (const id of acked) expect(Number(final.has(id)) + Number(inSafety.has(id)), id).toBe(1);
    for (const id of final) expect(inBackup.has(id) || acked.includes(id), id).toBe(true);

    // Users are the backup's: bob is gone; alice's session ended, she signs in again.
    expect((await post('/users/login', { username: 'bob', password: 'another secret' })).status).toBe(401);
    const me = await fetch(`${app.url}/users/me`, { headers: { cookie } });
    expect(me.status).not.toBe(200);
    // Realtime (a session listener) was told: it closes the sockets of those sessions.
    expect(endedSeen).toContain(cookie.slice(cookie.indexOf('=') + 1));
    expect((await post('/users/login', { username: 'alice', password: 'a long secret' })).status).toBe(200);
  });

  it('a restore that fails midway puts back what the store held; a damaged file or a missing confirm changes nothing', async () => {
    const users = { 'resources/users/config.json': { type: 'UserCollection', properties: {} } };
    const { app, dir } = await start(users);
    const post = (path: string, body: unknown) => fetch(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    for (let i = 0; i < 10; i++) expect((await post('/todos', { title: `kept-${i}` })).status).toBe(200);
    expect((await post('/users', { username: 'carol', password: 'a long secret' })).status).toBe(200);
    const before = ((await (await fetch(`${app.url}/todos`)).json()) as { id: string }[]).map((t) => t.id).sort();
    await mkdir(join(dir, 'backups'), { recursive: true });
    // A valid export whose second user repeats the first one's username: the unique index refuses it midway.
    const line = (o: unknown) => `${JSON.stringify(o)}\n`;
    const clash = 'backup-2026-02-01T00-00-00Z.jsonl';
    await writeFile(
      join(dir, 'backups', clash),
      line({ format: 'svc-export', version: 1, store: 'embedded', exportedAt: new Date().toISOString() }) +
        line({ collection: 'todos', object: { id: 'from-backup', title: 'x' } }) +
        line({ collection: 'users', object: { id: 'u1', username: 'dave', password: 'x' } }) +
        line({ collection: 'users', object: { id: 'u2', username: 'dave', password: 'x' } }) +
        line({ end: true, objects: 3 }),
    );
    const cut = 'backup-2026-02-02T00-00-00Z.jsonl';
    await writeFile(join(dir, 'backups', cut), line({ format: 'svc-export', version: 1, store: 'embedded', exportedAt: new Date().toISOString() }) + line({ collection: 'todos', object: { id: 'a', title: 'x' } }));
    const restore = (name: string, confirm: unknown = name) => fetch(`${app.url}/dashboard/api/backups/${name}/restore`, { method: 'POST', headers: { ...ROOT, 'content-type': 'application/json' }, body: JSON.stringify({ confirm }) });

    expect((await restore(clash, 'something else')).status).toBe(400);
    const damaged = await restore(cut);
    expect(damaged.status).toBe(400);
    expect(((await damaged.json()) as { message: string }).message).toContain('without its end line');
    const failed = await restore(clash);
    expect(failed.status).toBe(500);
    expect(((await failed.json()) as { message: string }).message).toContain('the store holds what it held before');
    // The store serves again, holding what it held.
    expect(((await (await fetch(`${app.url}/todos`)).json()) as { id: string }[]).map((t) => t.id).sort()).toEqual(before);
    expect((await post('/users/login', { username: 'carol', password: 'a long secret' })).status).toBe(200);
    expect((await post('/users/login', { username: 'dave', password: 'x' })).status).toBe(401);
    // A link under a backup's name is not restored from.
    await symlink(join(dir, 'backups', clash), join(dir, 'backups', 'backup-2026-02-03T00-00-00Z.jsonl'));
    expect((await restore('backup-2026-02-03T00-00-00Z.jsonl')).status).toBe(404);
    expect((await restore('..%2f.svc%2fkeys.json')).status).toBe(404);
  });

  it.runIf(process.env.SVC_TEST_MONGODB_URL)('on MongoDB: takes a backup through the store; a restore is refused (409) for svc restore', async () => {
    const url = `${(process.env.SVC_TEST_MONGODB_URL ?? '').replace(/\/$/, '')}/svc_dash_backups_${Date.now()}_${process.pid}`;
    const dir = await mkdtemp(join(tmpdir(), 'svc-dash-backups-mongo-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await mkdir(join(dir, 'resources/todos'), { recursive: true });
    await mkdir(join(dir, '.svc'), { recursive: true });
    await writeFile(join(dir, 'resources/todos/config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' } } }));
    await writeFile(join(dir, '.svc/keys.json'), JSON.stringify({ [KEY]: true }));
    const app = await startApp({ appDir: dir, port: 0, env: 'production', host: '127.0.0.1', logger: silentLogger, db: url });
    cleanup.push(async () => {
      const { MongoClient } = await import('mongodb');
      const client = await MongoClient.connect(url);
      await client.db().dropDatabase().catch(() => undefined);
      await client.close();
    });
    cleanup.push(() => app.close().then(() => undefined));
    expect((await fetch(`${app.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":"x"}' })).status).toBe(200);
    const taken = await fetch(`${app.url}/dashboard/api/backups`, { method: 'POST', headers: ROOT });
    expect(taken.status).toBe(201);
    const made = (await taken.json()) as { name: string; objects: number };
    expect(made.objects).toBeGreaterThanOrEqual(1);
    expect(((await (await fetch(`${app.url}/dashboard/api/backups`, { headers: ROOT })).json()) as { store: string }).store).toBe('mongodb');
    const restore = await fetch(`${app.url}/dashboard/api/backups/${made.name}/restore`, { method: 'POST', headers: { ...ROOT, 'content-type': 'application/json' }, body: JSON.stringify({ confirm: made.name }) });
    expect(restore.status).toBe(409);
    expect(((await restore.json()) as { message: string }).message).toContain('svc restore');
  });
});
