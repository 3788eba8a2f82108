import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSvc, startSvc } from '../apps/server/test/cli.js';
import type { SvcProcess } from '../apps/server/test/cli.js';

// Issue 23 (6): `svc backup` of a running app (a second process reading the embedded store's
// files while the server writes them) during 50 concurrent writers, restored with `svc restore`
// into a fresh app folder: every write acknowledged before the backup began is there, and the
// server went on answering writes throughout. On both embedded stores (issue 41: the engine's
// backup reads one SQLite read transaction on a connection of its own); each backup is restored
// into an app on the other store too.

let dir: string;
const running: SvcProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-backup-'));
});

afterAll(async () => {
  for (const p of running) await p.stop('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

async function start(app: string): Promise<SvcProcess> {
  const p = await startSvc([app]);
  running.push(p);
  return p;
}

async function post(url: string, body: unknown, sid?: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown>; sid?: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(sid ? { cookie: `sid=${sid}` } : {}), ...headers }, body: JSON.stringify(body) });
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('sid='));
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, ...(cookie ? { sid: cookie.slice(4, cookie.indexOf(';')) } : {}) };
}

/** A new app folder whose embedded store is `engine`. */
async function create(app: string, engine: string): Promise<void> {
  expect((await runSvc(['create', app])).code).toBe(0);
  await writeFile(join(app, 'app.json'), JSON.stringify({ embeddedStore: { engine } }));
}

describe.each([
  ['files', 'sqlite'],
  ['sqlite', 'files'],
])('online backup (embedded store %s)', (engine, other) => {
  it('svc backup during 50 concurrent writers, restored into a fresh folder: every acknowledged object is there', async () => {
    const app = join(dir, `app-${engine}`);
    await create(app, engine);
    const server = await start(app);
    expect((await post(`${server.url}/users`, { username: 'ada', password: 'secret one' })).status).toBe(200);

    /** title -> id of every insert the server answered 200 to. */
    const acked = new Map<string, string>();
    const attempted = new Set<string>();
    const failures: string[] = [];
    let stop = false;
    const writers = Array.from({ length: 50 }, async (_, w) => {
      for (let i = 0; !stop && i < 5000; i++) {
        const title = `w${w}-${i}`;
        attempted.add(title);
        try {
          // Root (development, this machine): the scaffolded create rule needs a login; this tests backups.
          const res = await post(`${server.url}/todos`, { title, done: i % 2 === 0 }, undefined, { 'svc-ssh-key': 'development' });
          if (res.status === 200) acked.set(title, res.body.id as string);
          else failures.push(`${title}: ${res.status}`);
        } catch (err) {
          failures.push(`${title}: ${(err as Error).message}`);
        }
      }
    });
    try {
      // Until a good number of writes is in, then the backup, while the writers go on.
      for (let i = 0; i < 600 && acked.size < 500; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      const before = new Map(acked);
      const file = join(dir, `backup-${engine}.jsonl`);
      const backup = await runSvc(['backup', app, '--out', file]);
      expect(backup.stderr).toMatch(/wrote .*backup-\w+\.jsonl: \d+ objects/);
      expect(backup.code).toBe(0);
      const during = acked.size - before.size;
      stop = true;
      await Promise.all(writers);
      expect(failures).toEqual([]);
      expect(before.size).toBeGreaterThanOrEqual(500);
      // The server was not held up: writes went on being acknowledged while the backup ran.
      expect(during).toBeGreaterThan(0);

      const lines = (await readFile(file, 'utf8')).trim().split('\n');
      const todos = lines
        .slice(1, -1)
        .map((l) => JSON.parse(l) as { collection: string; object: { id: string; title: string } })
        .filter((l) => l.collection === 'todos')
        .map((l) => l.object);
      // No phantom: everything in it was written by a writer.
      for (const t of todos) expect(attempted.has(t.title)).toBe(true);

      for (const into of [engine, other]) {
        const fresh = join(dir, `fresh-${engine}-${into}`);
        await create(fresh, into);
        const restored = await runSvc(['restore', fresh, '--from', file]);
        expect(restored.stderr).toMatch(/imported \d+ objects/);
        expect(restored.code).toBe(0);
        expect((await readdir(join(fresh, 'data'))).includes('store.sqlite')).toBe(into === 'sqlite');
        const copy = await start(fresh);
        const list = (await (await fetch(`${copy.url}/todos`)).json()) as { id: string; title: string }[];
        const ids = new Map(list.map((t) => [t.title, t.id]));
        const missing = [...before].filter(([title, id]) => ids.get(title) !== id).map(([title]) => title);
        expect(missing).toEqual([]);
        expect(list.length).toBe(todos.length);
        expect(list.length).toBeGreaterThanOrEqual(before.size);
        // Users with their password hashes: the login works on the restored copy.
        expect((await post(`${copy.url}/users/login`, { username: 'ada', password: 'secret one' })).status).toBe(200);
        await copy.stop('SIGTERM');
      }
    } finally {
      stop = true;
      await Promise.all(writers);
    }
  });
});
