import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { SvcClient } from '@svc/client';
import { startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';
import { writeApp } from './helpers/app.js';
import { until } from './helpers/wait.js';

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;
const redisUrl = process.env.SVC_TEST_REDIS_URL;
const missing = [!mongoUrl && 'SVC_TEST_MONGODB_URL', !redisUrl && 'SVC_TEST_REDIS_URL'].filter(Boolean).join(' and ');
if (missing) {
  if (process.env.CI === 'true') throw new Error(`CI=true but ${missing} is not set: the scale-out test cannot run`);
  process.stderr.write(`SKIPPED the realtime scale-out test (two svc processes): set ${missing}\n`);
}

const APP: Record<string, string | object> = {
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'resources/notes/config.json': { type: 'Collection', properties: { text: { type: 'string' }, to: { type: 'string' } } },
  'resources/notes/post.js': "emit('notes:create', this);\nif (this.to) emit('users', { username: this.to }, 'note', { text: this.text });\n",
};

async function signUp(url: string, username: string): Promise<void> {
  const res = await fetch(`${url}/users`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': 'k' }, body: JSON.stringify({ username, password: 'pw' }) });
  if (res.status !== 200) throw new Error(`sign-up failed: ${res.status} ${await res.text()}`);
}

// Needs the server's event scripts for the emits (notes' post.js).
describe.skipIf(missing !== '')('scale-out: two svc processes sharing one MongoDB (FerretDB) and one Redis', () => {
  let dir: string;
  let a: SvcProcess;
  let b: SvcProcess;
  const clients: SvcClient[] = [];

  beforeAll(async () => {
    dir = await writeApp(APP);
    const db = `${mongoUrl!.replace(/\/$/, '')}/svc_scaleout_${process.pid}_${Date.now()}`;
    const args = [dir, '--db', db, '--redis', redisUrl!];
    [a, b] = await Promise.all([startSvc(args), startSvc(args)]);
    await signUp(a.url, 'ann');
    await signUp(b.url, 'bo');
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.close();
    await Promise.all([a?.stop(), b?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  function client(url: string): SvcClient {
    const c = createClient(url);
    clients.push(c);
    return c;
  }

  it('a session created on A is valid on B', async () => {
    const login = await fetch(`${a.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ann', password: 'pw' }) });
    expect(login.status).toBe(200);
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith('sid='))!.split(';')[0]!;
    const me = await fetch(`${b.url}/users/me`, { headers: { cookie } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ username: 'ann' });
  });

  it('an emit triggered through B (an On Post script there) reaches a client connected to A', async () => {
    const onA = client(a.url);
    await new Promise<void>((resolve) => onA.socketReady(resolve));
    const got: unknown[] = [];
    onA.on('notes:create', (d) => got.push(d));
    const made = (await client(b.url)('notes').post({ text: 'hello from B' })) as { id: string };
    await until(() => got.length === 1);
    expect(got).toEqual([{ id: made.id, text: 'hello from B' }]);
  });

  it("a user-targeted emit through B reaches that user's client on A only", async () => {
    const [ann, bo, anon] = [client(a.url), client(a.url), client(a.url)];
    for (const c of [ann, bo, anon]) await new Promise<void>((resolve) => c.socketReady(resolve));
    await ann('users').exec('login', { username: 'ann', password: 'pw' });
    await bo('users').exec('login', { username: 'bo', password: 'pw' });
    const got = [ann, bo, anon].map((c) => {
      const list: unknown[] = [];
      c.on('note', (d) => list.push(d));
      return list;
    });
    await client(b.url)('notes').post({ text: 'for ann', to: 'ann' });
    await until(() => got[0]!.length === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(got).toEqual([[{ text: 'for ann' }], [], []]);
  });

  it("a password change through B ends the session of the user's client on A: its socket gets no more of that user's messages", async () => {
    await signUp(a.url, 'cy');
    const old = client(a.url);
    await new Promise<void>((resolve) => old.socketReady(resolve));
    await old('users').exec('login', { username: 'cy', password: 'pw' });
    const other = client(b.url);
    await new Promise<void>((resolve) => other.socketReady(resolve));
    await other('users').exec('login', { username: 'cy', password: 'pw' });
    const [cy] = (await (await fetch(`${b.url}/users?username=cy`, { headers: { 'svc-ssh-key': 'k' } })).json()) as { id: string }[];
    await other('users').put(cy!.id, { password: 'changed' });
    const got = [old, other].map((c) => {
      const list: unknown[] = [];
      c.on('note', (d) => list.push(d));
      return list;
    });
    // Right after the change's answer, through each process.
    await client(a.url)('notes').post({ text: 'via a', to: 'cy' });
    await client(b.url)('notes').post({ text: 'via b', to: 'cy' });
    await until(() => got[1]!.length === 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(got[0]).toEqual([]);
  });
});
