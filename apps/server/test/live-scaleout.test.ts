import { rm } from 'node:fs/promises';
import { createClient as createRedis } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { LiveEvent, SvcClient } from '@svc/client';
import { startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';
import { writeApp } from './helpers/app.js';
import { until } from './helpers/wait.js';
import { clearRedisKeys } from './helpers/redisKeys.js';

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;
const redisUrl = process.env.SVC_TEST_REDIS_URL;
const missing = [!mongoUrl && 'SVC_TEST_MONGODB_URL', !redisUrl && 'SVC_TEST_REDIS_URL'].filter(Boolean).join(' and ');
if (missing) {
  if (process.env.CI === 'true') throw new Error(`CI=true but ${missing} is not set: the live-query scale-out test cannot run`);
  process.stderr.write(`SKIPPED the live-query scale-out test (two svc processes): set ${missing}\n`);
}

/** Its own Redis prefix (app.json `redisPrefix`): parallel runs on one Redis never meet. */
const PREFIX = `svc-live-scaleout-${process.pid}-${Date.now()}`;

const APP: Record<string, string | object> = {
  'app.json': { redisPrefix: PREFIX },
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'resources/notes/config.json': { type: 'Collection', properties: { text: { type: 'string' }, owner: { type: 'string' }, n: { type: 'number' }, secret: { type: 'string', private: true } } },
  'resources/notes/get.js': "if (!me || me.id !== this.owner) cancel('not yours', 404);\n",
};

type Note = { id: string; text?: string; owner?: string; n?: number; secret?: string };

describe.skipIf(missing !== '')('live queries across two svc processes (one MongoDB, one Redis)', () => {
  let dir: string;
  let a: SvcProcess;
  let b: SvcProcess;
  const clients: SvcClient[] = [];
  const root = async (url: string, method: string, path: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(url + path, { method, headers: { 'content-type': 'application/json', 'svc-ssh-key': 'k' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  };
  const client = async (url: string, username: string): Promise<SvcClient> => {
    const c = createClient(url);
    clients.push(c);
    await c('users').exec('login', { username, password: 'pw' });
    await new Promise<void>((resolve) => c.socketReady(resolve));
    return c;
  };

  beforeAll(async () => {
    dir = await writeApp(APP);
    const db = `${mongoUrl!.replace(/\/$/, '')}/svc_live_scaleout_${process.pid}_${Date.now()}`;
    const args = [dir, '--db', db, '--redis', redisUrl!];
    [a, b] = await Promise.all([startSvc(args), startSvc(args)]);
    for (const username of ['ann', 'bo']) await root(a.url, 'POST', '/users', { username, password: 'pw' });
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.close();
    await Promise.all([a?.stop(), b?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
    // What this app left in the shared Redis: its change log, holds and locks.
    await clearRedisKeys(redisUrl!, PREFIX);
  });

  it('with no live query anywhere a write is not even numbered; the first subscription, on A, then hears writes through B', async () => {
    const redis = createRedis({ url: redisUrl! });
    await redis.connect();
    try {
      const seqKey = `${PREFIX}:live:seq:/notes`;
      await root(b.url, 'POST', '/notes', { text: 'unheard', owner: 'nobody' });
      expect(await redis.get(seqKey)).toBeNull();
      const ann = await client(a.url, 'ann');
      const annId = ((await ann('users').get('me')) as { id: string }).id;
      const events: LiveEvent<Note>[] = [];
      const stop = ann.notes!.subscribe({ owner: annId }, (e) => events.push(e as LiveEvent<Note>), { snapshot: true });
      // The snapshot is read once B has confirmed that it publishes /notes.
      await until(() => events.length === 1);
      expect(events[0]).toEqual({ type: 'snapshot', objects: [] });
      expect(await redis.get(seqKey)).toBe('1');
      await root(b.url, 'POST', '/notes', { text: 'heard', owner: annId });
      await until(() => events.length === 2);
      expect(events[1]).toMatchObject({ type: 'create', object: { text: 'heard', owner: annId } });
      expect(await redis.get(seqKey)).toBe('2');
      stop();
    } finally {
      await redis.close();
    }
  });

  it("writes through B reach a subscriber on A in order, as that subscriber's GET shows them; a reconnect to B resumes without duplicates", async () => {
    const ann = await client(a.url, 'ann');
    const bo = await client(a.url, 'bo');
    const annId = ((await ann('users').get('me')) as { id: string }).id;
    const annEvents: LiveEvent<Note>[] = [];
    const boEvents: LiveEvent<Note>[] = [];
    ann.notes!.subscribe({ owner: annId }, (e) => annEvents.push(e as LiveEvent<Note>), { snapshot: false });
    bo.notes!.subscribe({ owner: annId }, (e) => boEvents.push(e as LiveEvent<Note>), { snapshot: false });
    await new Promise((r) => setTimeout(r, 300));
    const made = (await root(b.url, 'POST', '/notes', { text: 'n', owner: annId, secret: 'no socket ever', n: 0 })) as Note;
    for (let i = 1; i <= 8; i++) await root(i % 2 ? b.url : a.url, 'PUT', `/notes/${made.id}`, { n: i });
    await until(() => annEvents.length === 9);
    expect(annEvents.map((e) => ('object' in e ? e.object.n : e.type))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    for (const e of annEvents) expect(JSON.stringify(e)).not.toContain('no socket ever');
    // On Get cancels others' notes for bo: nothing at all reaches bo.
    expect(boEvents).toEqual([]);

    // Ann's client moves to B (a reconnect elsewhere); writes made meanwhile are replayed once.
    ann.setBaseUrl(b.url);
    await root(a.url, 'PUT', `/notes/${made.id}`, { n: 9 });
    await root(b.url, 'PUT', `/notes/${made.id}`, { n: 10 });
    await until(() => annEvents.length === 11);
    await root(a.url, 'PUT', `/notes/${made.id}`, { n: 11 });
    await until(() => annEvents.length === 12);
    await new Promise((r) => setTimeout(r, 300));
    expect(annEvents.slice(9).map((e) => ('object' in e ? e.object.n : e.type))).toEqual([9, 10, 11]);
    expect(boEvents).toEqual([]);
  });

  it('a password change through B ends the subscription of the same user on A', async () => {
    await root(a.url, 'POST', '/users', { username: 'cy', password: 'pw' });
    const old = await client(a.url, 'cy');
    const cyId = ((await old('users').get('me')) as { id: string }).id;
    const events: LiveEvent<Note>[] = [];
    old.notes!.subscribe({ owner: cyId }, (e) => events.push(e as LiveEvent<Note>), { snapshot: false });
    await new Promise((r) => setTimeout(r, 300));
    const other = await client(b.url, 'cy');
    await other('users').put(cyId, { password: 'changed' });
    await until(() => events.some((e) => e.type === 'ended'));
    await root(b.url, 'POST', '/notes', { text: 'after', owner: cyId });
    await new Promise((r) => setTimeout(r, 400));
    expect(events.map((e) => e.type)).toEqual(['ended']);
  });
});
