import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runSvc, startSvc } from '../apps/server/test/cli.js';
import type { SvcProcess } from '../apps/server/test/cli.js';
import { objectsOf } from '../apps/server/test/helpers/exportFile.js';

// Issue 23 (7): an app moves from the embedded store to MongoDB and back with svc export / svc
// import, every collection with users' password hashes, so logins keep working.

let dir: string;
const running: SvcProcess[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-transfer-'));
});
afterEach(async () => {
  for (const p of running.splice(0)) await p.stop('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

async function start(args: string[]): Promise<SvcProcess> {
  const p = await startSvc(args);
  running.push(p);
  return p;
}

async function stop(p: SvcProcess): Promise<void> {
  await p.stop();
  running.splice(running.indexOf(p), 1);
}

async function call(url: string, method: string, body?: unknown, sid?: string): Promise<{ status: number; body: unknown; sid?: string }> {
  const res = await fetch(url, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(sid ? { cookie: `sid=${sid}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('sid='));
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined, ...(cookie ? { sid: cookie.slice(4, cookie.indexOf(';')) } : {}) };
}

async function newApp(name: string): Promise<string> {
  const app = join(dir, name);
  expect((await runSvc(['create', app])).code).toBe(0);
  return app;
}

const mongo = process.env.SVC_TEST_MONGODB_URL;
if (!mongo) process.stderr.write('SKIPPED the embedded <-> MongoDB round trip of svc export/import: SVC_TEST_MONGODB_URL is not set\n');

describe('svc export / svc import between stores (command line)', () => {
  it.skipIf(!mongo)('moves an app from the embedded store to MongoDB and back: objects, password hashes and logins', { timeout: 120_000 }, async () => {
    const app = await newApp('app');
    const server = await start([app]);
    const user = await call(`${server.url}/users`, 'POST', { username: 'ada@example.com', password: 'correct horse 1', displayName: 'Ada' });
    expect(user.status).toBe(200);
    const login = await call(`${server.url}/users/login`, 'POST', { username: 'ada@example.com', password: 'correct horse 1' });
    expect(login.status).toBe(200);
    // The scaffolded rules: a logged-in user creates todos as their owner.
    const owner = (user.body as { id: string }).id;
    for (let i = 0; i < 25; i++) expect((await call(`${server.url}/todos`, 'POST', { title: `todo ${i}`, done: i % 2 === 0, owner }, login.sid)).status).toBe(200);
    // Exported while the server runs (it reads the files, it does not lock them).
    const first = join(dir, 'first.jsonl');
    const exported = await runSvc(['export', app, '--out', first]);
    expect(exported.stderr).toMatch(/wrote .*first\.jsonl: 2\d objects/);
    expect(exported.code).toBe(0);
    expect((await stat(first)).mode & 0o777).toBe(0o600);
    await stop(server);
    const before = await objectsOf(first);
    expect(Object.keys(before.todos ?? {})).toHaveLength(25);
    const stored = (before.users ?? {})[(user.body as { id: string }).id] as { password?: string };
    expect(stored.password).toMatch(/^\$2[aby]\$/);

    const db = `${(mongo as string).replace(/\/$/, '')}/svc_transfer_${randomBytes(5).toString('hex')}`;
    const imported = await runSvc(['import', app, '--from', first, '--db', db]);
    expect(imported.stderr).toMatch(/imported 2\d objects .* into the MongoDB store/);
    expect(imported.code).toBe(0);
    // A second import into the now non-empty database is refused, naming what it holds.
    const again = await runSvc(['import', app, '--from', first, '--db', db]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds \d+ objects \(.*todos 25.*\); .* --replace/);

    const onMongo = await start([app, '--db', db]);
    const mongoLogin = await call(`${onMongo.url}/users/login`, 'POST', { username: 'ada@example.com', password: 'correct horse 1' });
    expect(mongoLogin.status).toBe(200);
    expect(await call(`${onMongo.url}/users/me`, 'GET', undefined, mongoLogin.sid)).toMatchObject({ status: 200, body: { username: 'ada@example.com', displayName: 'Ada' } });
    expect(((await call(`${onMongo.url}/todos`, 'GET')).body as unknown[]).length).toBe(25);
    expect((await call(`${onMongo.url}/users/login`, 'POST', { username: 'ada@example.com', password: 'wrong' })).status).toBe(401);
    await stop(onMongo);

    const second = join(dir, 'second.jsonl');
    expect((await runSvc(['export', app, '--out', second, '--db', db])).code).toBe(0);
    // Back into a fresh app's embedded store.
    const back = await newApp('back');
    const restored = await runSvc(['import', back, '--from', second]);
    expect(restored.stderr).toMatch(/into the embedded store/);
    expect(restored.code).toBe(0);
    const third = join(dir, 'third.jsonl');
    expect((await runSvc(['export', back, '--out', third])).code).toBe(0);
    // Nothing lost or changed on the way there and back (the login on MongoDB added a session).
    for (const after of [await objectsOf(second), await objectsOf(third)]) {
      expect(after.users).toEqual(before.users);
      expect(after.todos).toEqual(before.todos);
      expect(after.sessions).toMatchObject(before.sessions ?? {});
      expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    }
    const onEmbedded = await start([back]);
    const backLogin = await call(`${onEmbedded.url}/users/login`, 'POST', { username: 'ada@example.com', password: 'correct horse 1' });
    expect(backLogin.status).toBe(200);
    // The sessions came along too: the session of the very first login is still valid.
    expect(await call(`${onEmbedded.url}/users/me`, 'GET', undefined, login.sid)).toMatchObject({ status: 200, body: { username: 'ada@example.com' } });
    expect(((await call(`${onEmbedded.url}/todos`, 'GET')).body as unknown[]).map((t) => (t as { title: string }).title)).toEqual(
      Array.from({ length: 25 }, (_, i) => `todo ${i}`),
    );
  });

  it('imports into a store that holds objects only with --replace, keeping an export of what it replaced', { timeout: 60_000 }, async () => {
    const app = await newApp('app');
    const file = join(dir, 'in.jsonl');
    const header = JSON.stringify({ format: 'svc-export', version: 1, store: 'embedded', exportedAt: 'then' });
    await writeFile(file, `${header}\n${JSON.stringify({ collection: 'todos', object: { id: 'new', title: 'new one', due: { $date: '2026-01-02T03:04:05.000Z' } } })}\n{"end":true,"objects":1}\n`);
    const server = await start([app]);
    // Root (development, this machine): the scaffolded create rule needs a login, and a user would be one more object.
    expect((await fetch(`${server.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': 'development' }, body: JSON.stringify({ title: 'old one' }) })).status).toBe(200);
    // While the server runs, its data folder is refused: stop it first.
    const busy = await runSvc(['import', app, '--from', file]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/in use by process .*stop the server before importing/);
    await stop(server);
    const refused = await runSvc(['import', app, '--from', file]);
    // svc's own _sessions (the key of anonymous ids) is no app data: only todos counts.
    expect(refused.stderr).toMatch(/already holds 1 objects \(todos 1\)/);
    const replaced = await runSvc(['restore', app, '--from', file]);
    expect(replaced.code).toBe(0);
    const safety = /what it held before is in (\S+\.jsonl)/.exec(replaced.stderr)?.[1] as string;
    expect(Object.values((await objectsOf(safety)).todos ?? {})).toEqual([expect.objectContaining({ title: 'old one' })]);
    const after = join(dir, 'after.jsonl');
    expect((await runSvc(['export', app, '--out', after])).code).toBe(0);
    expect(await objectsOf(after)).toEqual({ todos: { new: { id: 'new', title: 'new one', due: { $date: '2026-01-02T03:04:05.000Z' } } } });
  });

});
