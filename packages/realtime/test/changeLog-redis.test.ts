import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { silentLogger } from '@svc/core';
import { RedisChangeLog } from '../src/internal/live/changeLog.js';
import type { RedisCommands, RedisSubscriber } from '../src/internal/live/changeLog.js';
import type { ChangeEntry } from '../src/internal/live/protocol.js';
import { until } from './helpers.js';
import { clearRedisKeys } from './redisKeys.js';

// The Redis change log's holds, between logs that each have their own Redis connections (as
// processes do): who publishes when, and what a lapse or a reconnection does.

const redisUrl = process.env.SVC_TEST_REDIS_URL;
if (!redisUrl) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_REDIS_URL is not set: the change-log Redis tests cannot run');
  process.stderr.write('SKIPPED changeLog-redis.test.ts: set SVC_TEST_REDIS_URL=redis://127.0.0.1:<port> to run it\n');
}

interface Opened {
  log: RedisChangeLog;
  entries: ChangeEntry[];
  lapsed: string[][];
  reconnect: () => void;
  close(): Promise<void>;
}

describe.skipIf(!redisUrl)('the Redis change log: holds', () => {
  const key = `svc-changelog-test-${process.pid}-${Date.now()}`;
  const opened: Opened[] = [];

  async function open(options: { leaseMs?: number; idleHoldMs?: number; warnings?: string[] } = {}): Promise<Opened> {
    const pub = createClient({ url: redisUrl! });
    const sub = pub.duplicate();
    await Promise.all([pub.connect(), sub.connect()]);
    const entries: ChangeEntry[] = [];
    const lapsed: string[][] = [];
    let reconnect = (): void => undefined;
    const log = await RedisChangeLog.open({
      key,
      ringSize: 10,
      pub: pub as unknown as RedisCommands,
      sub: sub as unknown as RedisSubscriber,
      logger: options.warnings ? { ...silentLogger, warn: (message: string) => void options.warnings?.push(message) } : silentLogger,
      isReady: () => pub.isReady && sub.isReady,
      onEntry: (entry) => entries.push(entry),
      onReconnect: (listener) => (reconnect = listener),
      onLapse: (paths) => lapsed.push([...paths]),
      idleHoldMs: options.idleHoldMs ?? 50,
      ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    });
    const made: Opened = {
      log,
      entries,
      lapsed,
      reconnect: () => reconnect(),
      async close() {
        await log.close();
        await Promise.allSettled([sub.close(), pub.close()]);
      },
    };
    opened.push(made);
    return made;
  }

  afterEach(async () => {
    for (const o of opened.splice(0)) await o.close();
  });
  afterAll(async () => {
    await clearRedisKeys(redisUrl!, key);
  });

  const create = (id: string) => ({ kind: 'create' as const, object: { id } });

  it('a log publishes a path only while some log holds it; a hold settles once every log publishes it', async () => {
    const a = await open();
    const b = await open();
    expect(a.log.wanted('/p1')).toBe(false);
    await a.log.publish('/p1', create('unheard'));
    await b.log.hold('/p1');
    // A answered B's hold before B's hold settled: A publishes from now on.
    expect(a.log.wanted('/p1')).toBe(true);
    expect(b.log.wanted('/p1')).toBe(true);
    await a.log.publish('/p1', create('heard'));
    await until(() => b.entries.length === 1 && a.entries.length === 1);
    expect(b.entries[0]).toMatchObject({ p: '/p1', k: 'create', o: { id: 'heard' } });
    // A log opened now reads the holds before it decides anything.
    const c = await open();
    expect(c.log.wanted('/p1')).toBe(true);
    b.log.release('/p1');
    await until(() => !a.log.wanted('/p1') && !c.log.wanted('/p1'));
  });

  it('taken again after nobody held it: the sequence moves on and a resume from before is a gap', async () => {
    const a = await open();
    const b = await open();
    await b.log.hold('/p2');
    await a.log.publish('/p2', create('x1'));
    const head = await b.log.head('/p2');
    expect(await b.log.since('/p2', head - 1)).toHaveLength(1);
    b.log.release('/p2');
    await until(() => !a.log.wanted('/p2'));
    await a.log.publish('/p2', create('not kept'));
    await b.log.hold('/p2');
    expect(await b.log.head('/p2')).toBe(head + 1);
    expect(await b.log.since('/p2', head)).toBe('gap');
    expect(await b.log.since('/p2', head + 1)).toEqual([]);
  });

  it('a hold that lapsed in Redis is noticed at the next renewal: its live queries start afresh', async () => {
    const a = await open({ leaseMs: 300 });
    await a.log.hold('/p3');
    const redis = createClient({ url: redisUrl! });
    await redis.connect();
    try {
      const holders = await redis.hGetAll(`${key}:live:holders`);
      const mine = Object.keys(holders).filter((field) => field.startsWith('/p3\n'));
      expect(mine).toHaveLength(1);
      // As if this process had paused past its lease: the hold is gone from Redis.
      await redis.hDel(`${key}:live:holders`, mine);
    } finally {
      await redis.close();
    }
    await until(() => a.lapsed.some((paths) => paths.includes('/p3')));
  });

  it('a process that never answers a hold is waited for at most 5 s, and named in a warning', async () => {
    const warnings: string[] = [];
    const a = await open({ warnings });
    // A subscriber of the holds channel that answers nothing (a process cut off, or stuck).
    const silent = createClient({ url: redisUrl! });
    await silent.connect();
    await silent.subscribe(`${key}:live:holds`, () => undefined);
    try {
      await a.log.hold('/p5');
      expect(warnings).toEqual([expect.stringContaining('1 process(es) did not confirm in 5000 ms that they publish the writes of /p5') as unknown]);
      expect(a.log.wanted('/p5')).toBe(true);
    } finally {
      await silent.close();
    }
  }, 15_000);

  it('after a reconnection a log reads the holds again, takes its own again and starts its live queries afresh', async () => {
    const a = await open();
    const b = await open();
    await b.log.hold('/p4');
    b.reconnect();
    await until(() => b.lapsed.some((paths) => paths.includes('/p4')));
    expect(a.log.wanted('/p4')).toBe(true);
    a.reconnect();
    await until(() => a.lapsed.length === 0 && a.log.wanted('/p4'));
  });
});
