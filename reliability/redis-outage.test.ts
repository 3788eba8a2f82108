import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { SvcClient } from '@svc/client';
import { startSvc } from '../apps/server/test/cli.js';
import type { SvcProcess } from '../apps/server/test/cli.js';
import { freePort, hasRedisServer, redisAnswers } from './localServices.js';

// Redis (the realtime scale-out adapter) stopped and started under a running svc (issue 11): HTTP
// keeps being served while it is down, and realtime messages flow again once it is back. The test
// runs a redis-server of its own on a free port (the shared one must not be stopped).

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;
const hasRedis = hasRedisServer;
const runnable = hasRedis && mongoUrl !== undefined;
if (!runnable) {
  const message = 'redis outage test SKIPPED: it needs redis-server and SVC_TEST_MONGODB_URL (two svc processes share one database; .ci/run provides both)';
  if (process.env.CI === 'true') throw new Error(`${message}; under CI=true nothing may be skipped`);
  process.stderr.write(`${message}\n`);
}

async function until(check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.runIf(runnable)('Redis stopped and started under a running svc', () => {
  let dir: string;
  let port: number;
  let redis: ChildProcess | undefined;
  // Two processes: a client on A gets what a script on B emits only through Redis.
  let a: SvcProcess;
  let svc: SvcProcess;
  let client: SvcClient;

  async function startRedis(): Promise<void> {
    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await until(() => redisAnswers(port));
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-redis-outage-'));
    const files: Record<string, string> = {
      'resources/notes/config.json': JSON.stringify({ type: 'Collection', properties: { text: { type: 'string' }, to: { type: 'string' } } }),
      'resources/notes/post.js': "emit('notes:create', { text: this.text });\nif (this.to) emit('users', { username: this.to }, 'note', { text: this.text });",
      'resources/users/config.json': JSON.stringify({ type: 'UserCollection', properties: {} }),
      'app.json': JSON.stringify({ passwordCost: 4 }),
    };
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), content);
    }
    port = await freePort();
    await startRedis();
    const args = [dir, '--db', `${mongoUrl!.replace(/\/$/, '')}/svc_redis_outage_${process.pid}_${Date.now()}`, '--redis', `redis://127.0.0.1:${port}`];
    [a, svc] = await Promise.all([startSvc(args), startSvc(args)]);
    client = createClient(a.url);
    await new Promise<void>((resolve) => client.socketReady(resolve));
    const signUp = await fetch(`${a.url}/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ann', password: 'right' }) });
    expect(signUp.status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await Promise.all([a?.stop('SIGKILL'), svc?.stop('SIGKILL')]);
    redis?.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('HTTP is unaffected while Redis is down; realtime between the processes resumes once it is back', async () => {
    const got: string[] = [];
    client.on('notes:create', (d) => got.push((d as { text: string }).text));
    const post = (text: string) => fetch(`${svc.url}/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
    expect((await post('before')).status).toBe(200);
    await until(() => got.includes('before'));

    redis?.kill('SIGKILL');
    await until(async () => !(await redisAnswers(port)));
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      const res = await post(`during ${i}`);
      expect(res.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(2000);
      expect((await fetch(`${svc.url}/notes`)).status).toBe(200);
      expect((await fetch(`${a.url}/notes`)).status).toBe(200);
    }
    // Login limits are shared over Redis; while it is down each process counts on its own.
    const login = (password: string) => fetch(`${svc.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ann', password }) });
    const loginStarted = performance.now();
    const loggedIn = await login('right');
    expect(loggedIn.status).toBe(200);
    expect(performance.now() - loginStarted).toBeLessThan(2500);
    // A logout tells the other processes to unbind the session's sockets; with Redis down it does
    // not wait for them (they notice at their next check of the session).
    const cookie = loggedIn.headers.getSetCookie().find((c) => c.startsWith('sid='))!.split(';')[0]!;
    const logoutStarted = performance.now();
    expect((await fetch(`${svc.url}/users/logout`, { method: 'POST', headers: { cookie } })).status).toBe(204);
    expect(performance.now() - logoutStarted).toBeLessThan(2500);
    for (let i = 0; i < 10; i++) expect((await login('wrong')).status).toBe(401);
    expect((await login('wrong')).status).toBe(429);

    await startRedis();
    // Messages flow again once the adapter has reconnected.
    await until(async () => {
      await post('after');
      await new Promise((r) => setTimeout(r, 200));
      return got.includes('after');
    }, 30_000);
    expect(got).toContain('after');
  }, 90_000);

  it("a session ended while Redis is down stops reaching its socket on the other process once Redis is back", async () => {
    const json = { 'content-type': 'application/json' };
    // The pool's kept-alive connection to A may be closing (idle since the outage above): one
    // request that may fail leaves a fresh one for the test.
    await fetch(`${a.url}/notes`).then((r) => r.text()).catch(() => undefined);
    expect((await fetch(`${a.url}/users`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'cy', password: 'pw' }) })).status).toBe(200);
    // cy's client on A, and a second session of cy's through the other process.
    const old = createClient(a.url);
    await new Promise<void>((resolve) => old.socketReady(resolve));
    await old('users').exec('login', { username: 'cy', password: 'pw' });
    const [notes, ended] = [[] as unknown[], [] as unknown[]];
    old.on('note', (d) => notes.push(d));
    old.on('svc:session-ended', () => ended.push(true));
    const onB = await fetch(`${svc.url}/users/login`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'cy', password: 'pw' }) });
    const { uid } = (await onB.json()) as { uid: string };
    const cookie = onB.headers.getSetCookie().find((c) => c.startsWith('sid='))!.split(';')[0]!;

    redis?.kill('SIGKILL');
    await until(async () => !(await redisAnswers(port)));
    // Ends cy's other sessions (the client's on A): A cannot be told now.
    const changed = await fetch(`${svc.url}/users/${uid}`, { method: 'PUT', headers: { ...json, cookie }, body: JSON.stringify({ password: 'new' }) });
    expect(changed.status).toBe(200);
    await startRedis();
    // On reconnecting, A checks the sessions of its sockets.
    await until(() => ended.length === 1, 30_000);
    const fresh = createClient(svc.url);
    await new Promise<void>((resolve) => fresh.socketReady(resolve));
    await fresh('users').exec('login', { username: 'cy', password: 'new' });
    const freshNotes: unknown[] = [];
    fresh.on('note', (d) => freshNotes.push(d));
    await fetch(`${svc.url}/notes`, { method: 'POST', headers: json, body: JSON.stringify({ text: 'for cy', to: 'cy' }) });
    await fetch(`${a.url}/notes`, { method: 'POST', headers: json, body: JSON.stringify({ text: 'for cy via a', to: 'cy' }) });
    await until(() => freshNotes.length === 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(notes).toEqual([]);
    old.close();
    fresh.close();
  }, 90_000);
});
