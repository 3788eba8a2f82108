import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createClient as createRedis } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { LiveEvent, SvcClient } from '@svc/client';
import { startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';
import { clearRedisKeys } from './helpers/redisKeys.js';

// Two apps sharing one Redis, each with its app.json `redisPrefix`: app X runs two processes (one
// MongoDB database), app Y one (its embedded store). Both have /notes; neither hears the other.

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;
const redisUrl = process.env.SVC_TEST_REDIS_URL;
const missing = [!mongoUrl && 'SVC_TEST_MONGODB_URL', !redisUrl && 'SVC_TEST_REDIS_URL'].filter(Boolean).join(' and ');
if (missing) {
  if (process.env.CI === 'true') throw new Error(`CI=true but ${missing} is not set: the shared-Redis test cannot run`);
  process.stderr.write(`SKIPPED the test of two apps sharing one Redis: set ${missing}\n`);
}

const appFiles = (prefix: string): Record<string, string | object> => ({
  'app.json': { redisPrefix: prefix },
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'resources/notes/config.json': { type: 'Collection', properties: { text: { type: 'string' } } },
  'resources/notes/post.js': "emit('note-made', { text: this.text });\n",
});

type Note = { id: string; text?: string };

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(missing !== '')('two apps sharing one Redis, each with its redisPrefix', () => {
  const tag = `${process.pid}-${Date.now()}`;
  const prefixes = { x: `x-${tag}`, y: `y-${tag}` };
  const dirs: string[] = [];
  let x1: SvcProcess;
  let x2: SvcProcess;
  let y: SvcProcess;
  const clients: SvcClient[] = [];
  const root = async (url: string, method: string, path: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(url + path, { method, headers: { 'content-type': 'application/json', 'svc-ssh-key': 'k' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  };
  async function appDir(prefix: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'svc-redis-prefix-'));
    dirs.push(dir);
    for (const [path, content] of Object.entries(appFiles(prefix))) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
    }
    return dir;
  }
  async function client(url: string): Promise<SvcClient> {
    const c = createClient(url);
    clients.push(c);
    await new Promise<void>((resolve) => c.socketReady(resolve));
    return c;
  }

  beforeAll(async () => {
    const xDir = await appDir(prefixes.x);
    const yDir = await appDir(prefixes.y);
    const db = `${mongoUrl!.replace(/\/$/, '')}/svc_redis_prefix_${process.pid}_${Date.now()}`;
    [x1, x2, y] = await Promise.all([startSvc([xDir, '--db', db, '--redis', redisUrl!]), startSvc([xDir, '--db', db, '--redis', redisUrl!]), startSvc([yDir, '--redis', redisUrl!])]);
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.close();
    await Promise.all([x1?.stop(), x2?.stop(), y?.stop()]);
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    await clearRedisKeys(redisUrl!, ...Object.values(prefixes));
  });

  it("live queries and emits reach the app's own processes only", async () => {
    const onX = await client(x1.url);
    const onY = await client(y.url);
    const xEvents: LiveEvent<Note>[] = [];
    const yEvents: LiveEvent<Note>[] = [];
    const xEmits: unknown[] = [];
    const yEmits: unknown[] = [];
    onX.notes!.subscribe({}, (e) => xEvents.push(e as LiveEvent<Note>), { snapshot: false });
    onY.notes!.subscribe({}, (e) => yEvents.push(e as LiveEvent<Note>), { snapshot: false });
    onX.on('note-made', (data) => xEmits.push(data));
    onY.on('note-made', (data) => yEmits.push(data));
    await new Promise((r) => setTimeout(r, 500));

    // The other process of app X: its write and its emit reach X's subscriber over Redis.
    await root(x2.url, 'POST', '/notes', { text: 'x-note' });
    await root(y.url, 'POST', '/notes', { text: 'y-note' });
    await until(() => xEvents.length === 1 && yEvents.length === 1 && xEmits.length === 1 && yEmits.length === 1);
    await new Promise((r) => setTimeout(r, 500));
    expect(xEvents.map((e) => ('object' in e ? e.object.text : e.type))).toEqual(['x-note']);
    expect(yEvents.map((e) => ('object' in e ? e.object.text : e.type))).toEqual(['y-note']);
    expect(xEmits).toEqual([{ text: 'x-note' }]);
    expect(yEmits).toEqual([{ text: 'y-note' }]);

    // Each app's change log lives under its own prefix.
    const redis = createRedis({ url: redisUrl! });
    await redis.connect();
    try {
      expect(await redis.exists(`${prefixes.x}:live:seq:/notes`)).toBe(1);
      expect(await redis.exists(`${prefixes.y}:live:seq:/notes`)).toBe(1);
    } finally {
      await redis.close();
    }
  });
});
