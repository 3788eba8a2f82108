import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createClient as createRedis } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';
import { clearRedisKeys } from './helpers/redisKeys.js';

// The dashboard's data grid reloads on the changes its stream tells: with several processes it
// now hears the other processes' writes too (through the live queries' change log, held while a
// dashboard follows). The stream answers root only (the dashboard's one check).

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;
const redisUrl = process.env.SVC_TEST_REDIS_URL;
const missing = [!mongoUrl && 'SVC_TEST_MONGODB_URL', !redisUrl && 'SVC_TEST_REDIS_URL'].filter(Boolean).join(' and ');
if (missing) {
  if (process.env.CI === 'true') throw new Error(`CI=true but ${missing} is not set: the dashboard scale-out test cannot run`);
  process.stderr.write(`SKIPPED the dashboard live grid test (two svc processes): set ${missing}\n`);
}

const PREFIX = `svc-dash-grid-${process.pid}-${Date.now()}`;
const KEY = 'dash-grid-key';
const APP: Record<string, object> = {
  'app.json': { redisPrefix: PREFIX },
  '.svc/keys.json': { [KEY]: true },
  'resources/notes/config.json': { type: 'Collection', properties: { text: { type: 'string' }, secret: { type: 'string', private: true } } },
};

type Change = { kind: string; collection?: string; op?: string; id?: string };

/** Reads a dashboard stream (server-sent events) into `events` until aborted. */
async function follow(url: string, headers: Record<string, string>, events: Change[], signal: AbortSignal): Promise<number> {
  const res = await fetch(`${url}/dashboard/api/stream`, { headers, signal });
  if (res.status !== 200 || !res.body) return res.status;
  void (async () => {
    const decoder = new TextDecoder();
    let buffered = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffered.indexOf('\n\n')) >= 0) {
          const block = buffered.slice(0, cut);
          buffered = buffered.slice(cut + 2);
          for (const line of block.split('\n')) if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)) as Change);
        }
      }
    } catch {
      // Aborted at the end of the test.
    }
  })();
  return 200;
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(missing !== '')("the dashboard's data grid follows every process's writes", () => {
  let dir: string;
  let a: SvcProcess;
  let b: SvcProcess;
  const aborts: AbortController[] = [];
  const post = async (url: string, body: unknown): Promise<string> => {
    const res = await fetch(`${url}/notes`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': KEY }, body: JSON.stringify(body) });
    return ((await res.json()) as { id: string }).id;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-dash-grid-'));
    for (const [path, content] of Object.entries(APP)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), JSON.stringify(content));
    }
    const db = `${mongoUrl!.replace(/\/$/, '')}/svc_dash_grid_${process.pid}_${Date.now()}`;
    const args = [dir, '--db', db, '--redis', redisUrl!, '--env', 'production'];
    [a, b] = await Promise.all([startSvc(args), startSvc(args)]);
  }, 60_000);
  afterAll(async () => {
    for (const c of aborts) c.abort();
    await Promise.all([a?.stop(), b?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
    await clearRedisKeys(redisUrl!, PREFIX);
  });

  it("a dashboard on A hears B's writes, ids only; without the root key there is no stream", async () => {
    const redis = createRedis({ url: redisUrl! });
    await redis.connect();
    try {
      // No dashboard open: nothing held, B's writes are not published.
      await post(b.url, { text: 'before', secret: 's' });
      expect(await redis.get(`${PREFIX}:live:seq:/notes`)).toBeNull();

      const denied = new AbortController();
      aborts.push(denied);
      expect(await follow(a.url, {}, [], denied.signal)).toBe(401);
      expect(await follow(a.url, { 'svc-ssh-key': 'wrong' }, [], denied.signal)).toBe(401);

      const events: Change[] = [];
      const open = new AbortController();
      aborts.push(open);
      expect(await follow(a.url, { 'svc-ssh-key': KEY }, events, open.signal)).toBe(200);
      // Held once the stream is open (the hold is taken as it opens).
      const heldBy = async (): Promise<boolean> => (await redis.hKeys(`${PREFIX}:live:holders`)).some((field) => field.startsWith('/notes\n'));
      const deadline = Date.now() + 10_000;
      while (!(await heldBy())) {
        if (Date.now() > deadline) throw new Error('the dashboard never held /notes');
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, 300));
      const id = await post(b.url, { text: 'from B', secret: 'never in the stream' });
      await until(() => events.some((e) => e.kind === 'change' && e.id === id));
      expect(events.find((e) => e.kind === 'change' && e.id === id)).toEqual({ kind: 'change', collection: 'notes', op: 'insert', id });
      expect(JSON.stringify(events)).not.toContain('never in the stream');
    } finally {
      await redis.close();
    }
  });
});
