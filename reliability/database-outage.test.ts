import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongoStore, SvcError } from '@svc/core';
import { runApp } from '../apps/server/test/helpers/app.js';
import type { AppHandle } from '../apps/server/test/helpers/app.js';
import { freePort, freezeProcess } from './localServices.js';

// Issue 11 (7): with MongoDB down, requests got 500 for 6 s and then waited without bound; a
// frozen database held them for as long as it was frozen. This test runs its own FerretDB (the
// shared one must not be stopped) and stops, freezes and restarts it.

const bin = process.env.SVC_TEST_FERRETDB_BIN;
const available = bin !== undefined && existsSync(bin);
if (!available) {
  const message = 'database outage tests SKIPPED: set SVC_TEST_FERRETDB_BIN to a FerretDB binary (.ci/run does)';
  if (process.env.CI === 'true') throw new Error(`${message}; under CI=true nothing may be skipped`);
  process.stderr.write(`${message}\n`);
}

let dataDir: string;
let port: number;
let ferret: ChildProcess | undefined;
let h: AppHandle;

async function startFerret(): Promise<void> {
  ferret = spawn(bin as string, ['--handler=sqlite', `--sqlite-url=file:${dataDir}/`, `--listen-addr=127.0.0.1:${port}`, '--debug-addr=127.0.0.1:0', `--state-dir=${dataDir}`, '--telemetry=disable', '--log-level=error'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = createServer().listen(port, '127.0.0.1');
      socket.on('listening', () => socket.close(() => resolve(false)));
      socket.on('error', () => resolve(true));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('FerretDB did not start');
}

async function stopFerret(): Promise<void> {
  const p = ferret;
  ferret = undefined;
  if (!p || p.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    p.once('exit', () => resolve());
    p.kill('SIGKILL');
  });
}

const files = {
  'app.json': { databaseTimeoutMs: 1500 },
  'resources/notes/config.json': { type: 'Collection', properties: { text: { type: 'string' } } },
};

describe.runIf(available)('database outages (own FerretDB, stopped and frozen)', () => {
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-ferret-'));
    port = await freePort();
    await startFerret();
    h = await runApp(files, { db: `mongodb://127.0.0.1:${port}/outage` });
  }, 60_000);

  afterAll(async () => {
    await h?.close().catch(() => undefined);
    await stopFerret();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('database down: 503 with a JSON error within the configured time; back up: served again, nothing acknowledged lost', async () => {
    const acked: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await h.request('POST', '/notes', { text: `n${i}` });
      expect(res.status).toBe(200);
      acked.push((res.body as { id: string }).id);
    }
    await stopFerret();
    for (const [method, path, body] of [['GET', '/notes'], ['POST', '/notes', { text: 'during' }], ['GET', `/notes/${acked[0]}`]] as const) {
      const started = performance.now();
      const res = await h.request(method, path, body);
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ status: 503, message: expect.stringMatching(/database/) });
      expect(res.headers.get('retry-after')).toBe('5');
      expect(performance.now() - started).toBeLessThan(4000);
    }
    await startFerret();
    let list: { id: string }[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await h.request('GET', '/notes');
      if (res.status === 200) {
        list = res.body as { id: string }[];
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(list.map((n) => n.id)).toEqual(expect.arrayContaining(acked));
  }, 60_000);

  it('database frozen (SIGSTOP): 503 within the configured time instead of waiting; thawed: served again', async () => {
    // Every thread stopped before the request (kill() returns before that: freezeProcess).
    await freezeProcess(ferret?.pid as number);
    try {
      const started = performance.now();
      const res = await h.request('GET', '/notes');
      expect(res.status).toBe(503);
      expect(performance.now() - started).toBeLessThan(4000);
    } finally {
      ferret?.kill('SIGCONT');
    }
    let ok = 0;
    for (let i = 0; i < 50 && ok === 0; i++) {
      if ((await h.request('GET', '/notes')).status === 200) ok++;
      else await new Promise((r) => setTimeout(r, 200));
    }
    expect(ok).toBe(1);
  }, 60_000);

  it('database busy (FerretDB\'s SQLite file locked by another writer): a write fails with 503 UNAVAILABLE to retry, not a 500; unlocked: written', async () => {
    const first = await h.request('POST', '/notes', { text: 'before' });
    expect(first.status).toBe(200);
    const id = (first.body as { id: string }).id;
    // A store whose time limit outlasts FerretDB's wait for the lock: what FerretDB answers is what is told.
    const store = await createMongoStore({ url: `mongodb://127.0.0.1:${port}/outage`, timeoutMs: 30_000 });
    // Another writer holds the database file's write lock: FerretDB answers "database is locked (SQLITE_BUSY)".
    const file = join(dataDir, 'outage.sqlite');
    expect(existsSync(file)).toBe(true);
    const other = new DatabaseSync(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      const err = await store.collection('notes').update({ id }, { $set: { text: 'during' } }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(SvcError);
      expect(err).toMatchObject({ code: 'UNAVAILABLE', status: 503, message: 'the database is busy' });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(await store.collection('notes').update({ id }, { $set: { text: 'after' } })).toMatchObject({ text: 'after' });
    await store.close();
  }, 60_000);
});
