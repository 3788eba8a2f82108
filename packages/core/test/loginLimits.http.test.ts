import { request as httpRequest } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedStore, UserCollection } from '@svc/core';
import type { Store } from '@svc/core';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 11 (1, 2): the login limit was checked before the bcrypt wait and counted after it (100
// parallel attempts were all checked), and 10 wrong passwords from anywhere locked the user out.

let dir: string;
let store: Store;
let t: TestServer;
const port = () => Number(new URL(t.url).port);

/** POST /users/login from a given loopback source address (127.0.0.0/8 all reach the server). */
function login(from: string, username: string, password: string): Promise<number> {
  const body = JSON.stringify({ username, password });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: port(), localAddress: from, method: 'POST', path: '/users/login', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-login-'));
  store = await createEmbeddedStore({ dir });
  const users = new UserCollection({ path: '/users', properties: {}, store: store.collection('users'), passwordCost: 4, loginRateLimit: { max: 10, slowdownMs: 200 } });
  t = await startTestServer(store, [users]);
  for (const name of ['race', 'victim', 'slow', 'shared1', 'shared2']) {
    await t.client().request('POST', '/users', { body: { username: name, password: `pw-${name}` } });
  }
});

afterAll(async () => {
  await t.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('login limits', () => {
  it('100 parallel attempts for one username from one address: only 10 passwords are checked', async () => {
    const statuses = await Promise.all(Array.from({ length: 100 }, () => login('127.0.0.2', 'race', 'wrong')));
    expect(statuses.filter((s) => s === 401)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(90);
  });

  it('10 wrong passwords from one address do not lock the user out: the right password from another address logs in', async () => {
    for (let i = 0; i < 10; i++) expect(await login('127.0.0.3', 'victim', 'wrong')).toBe(401);
    expect(await login('127.0.0.3', 'victim', 'pw-victim')).toBe(429);
    expect(await login('127.0.0.4', 'victim', 'pw-victim')).toBe(200);
    // Nor are others behind the attacking address locked out of their own accounts.
    expect(await login('127.0.0.3', 'shared1', 'pw-shared1')).toBe(200);
  });

  it('across many addresses a username is only slowed down; a fresh address with the right password gets in ahead of the queue', async () => {
    // 12 addresses x 2 wrong attempts each: over the username's threshold, repeat offenders wait in line.
    const started = performance.now();
    const attackers = Array.from({ length: 12 }, (_, i) => `127.0.1.${i + 1}`);
    await Promise.all(attackers.map((from) => login(from, 'slow', 'wrong')));
    const done: string[] = [];
    const second = Promise.all(attackers.map(async (from) => {
      await login(from, 'slow', 'wrong');
      done.push(from);
    }));
    // While the repeat offenders wait their turns (200 ms apart), the owner logs in from a fresh
    // address: answered before the queue has drained (an order, not a time: load cannot flip it).
    expect(await login('127.0.2.1', 'slow', 'pw-slow')).toBe(200);
    const answeredBefore = done.length;
    await second;
    expect(answeredBefore).toBeLessThan(attackers.length);
    // The second attempts beyond the threshold were spaced 200 ms apart (a lower bound: a slower machine only adds).
    expect(performance.now() - started).toBeGreaterThan(1000);
  });

  it('one address is limited across usernames (10 x max a window)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 101; i++) statuses.push(await login('127.0.3.1', `nobody${i}`, 'wrong'));
    expect(statuses.slice(0, 100).every((s) => s === 401)).toBe(true);
    expect(statuses[100]).toBe(429);
  });
});
