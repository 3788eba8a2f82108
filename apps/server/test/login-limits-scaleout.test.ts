import { request as httpRequest } from 'node:http';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';

// Issue 11 (1): login limits are shared by all processes when --redis is given; without it, N
// processes would allow N x the limit.

const redisUrl = process.env.SVC_TEST_REDIS_URL;
if (!redisUrl) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_REDIS_URL is not set: the shared login limits test cannot run');
  process.stderr.write('SKIPPED the shared login limits test (two svc processes over Redis): set SVC_TEST_REDIS_URL\n');
}

/** POST /users/login from a given loopback source address; answers the status. */
function login(url: string, from: string, username: string, password: string): Promise<number> {
  const body = JSON.stringify({ username, password });
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, localAddress: from, method: 'POST', path: '/users/login', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe.skipIf(!redisUrl)('login limits shared over Redis by two svc processes', () => {
  const dirs: string[] = [];
  let a: SvcProcess;
  let b: SvcProcess;
  // Unique per run: the counters live in the shared Redis for a minute.
  const run = `${process.pid}-${Date.now()}`;

  beforeAll(async () => {
    const started: Promise<SvcProcess>[] = [];
    for (let i = 0; i < 2; i++) {
      const dir = await mkdtemp(join(tmpdir(), 'svc-login-redis-'));
      dirs.push(dir);
      await mkdir(join(dir, 'resources', 'users'), { recursive: true });
      await writeFile(join(dir, 'resources', 'users', 'config.json'), JSON.stringify({ type: 'UserCollection', properties: {} }));
      await writeFile(join(dir, 'app.json'), JSON.stringify({ passwordCost: 4 }));
      started.push(startSvc([dir, '--redis', redisUrl!]));
    }
    [a, b] = (await Promise.all(started)) as [SvcProcess, SvcProcess];
    for (const s of [a, b]) {
      for (const name of ['ann', 'bo']) {
        const res = await fetch(`${s.url}/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: `${name}-${run}`, password: 'right' }) });
        expect(res.status).toBe(200);
      }
    }
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('wrong passwords sent to A and B count together: the 11th is refused on both', async () => {
    const user = `split-${run}`;
    for (let i = 0; i < 10; i++) expect(await login(i % 2 === 0 ? a.url : b.url, '127.0.0.1', user, 'wrong')).toBe(401);
    expect(await login(a.url, '127.0.0.1', user, 'wrong')).toBe(429);
    expect(await login(b.url, '127.0.0.1', user, 'wrong')).toBe(429);
  });

  it('60 attempts sent at once to both processes check at most 10 passwords', async () => {
    const user = `race-${run}`;
    const statuses = await Promise.all(Array.from({ length: 60 }, (_, i) => login(i % 2 === 0 ? a.url : b.url, '127.0.0.3', user, 'wrong')));
    expect(statuses.filter((s) => s === 401).length).toBe(10);
    expect(statuses.filter((s) => s === 429).length).toBe(50);
  });

  it('a user blocked from one address still logs in from another, through either process', async () => {
    const user = `ann-${run}`;
    for (let i = 0; i < 10; i++) await login(i % 2 === 0 ? a.url : b.url, '127.0.0.4', user, 'wrong');
    expect(await login(a.url, '127.0.0.4', user, 'right')).toBe(429);
    expect(await login(b.url, '127.0.0.5', user, 'right')).toBe(200);
    expect(await login(a.url, '127.0.0.5', user, 'right')).toBe(200);
  });

  it('a successful login is refunded on the shared counts', async () => {
    const user = `bo-${run}`;
    // 9 failures, then successes: a refunded success never pushes the pair over the limit.
    for (let i = 0; i < 9; i++) expect(await login(i % 2 === 0 ? a.url : b.url, '127.0.0.6', user, 'wrong')).toBe(401);
    for (let i = 0; i < 5; i++) expect(await login(i % 2 === 0 ? b.url : a.url, '127.0.0.6', user, 'right')).toBe(200);
    expect(await login(a.url, '127.0.0.6', user, 'wrong')).toBe(401);
    expect(await login(b.url, '127.0.0.6', user, 'wrong')).toBe(429);
  });
});
