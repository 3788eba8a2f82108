import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbeddedStore, silentLogger } from '@svc/core';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';
import { runSvc } from './cli.js';

// Issue 23 (6): the dashboard's Backups page API: list, take (online), download; root only.

const KEY = 'b'.repeat(64);
const ROOT = { 'svc-ssh-key': KEY };
let cleanup: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function start(): Promise<{ app: RunningApp; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-dash-backups-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const files: Record<string, object> = {
    'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
    '.svc/keys.json': { [KEY]: true },
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
    ] as const) {
      for (const headers of [{}, { 'svc-ssh-key': 'development' }, { 'svc-ssh-key': KEY.slice(1) }] as Record<string, string>[]) {
        const res = await fetch(`${app.url}${path}`, { method, headers });
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
    const store = await createEmbeddedStore({ dir: join(fresh, 'data') });
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
});
