#!/usr/bin/env node
// How long a collection's first live query waits, over Redis, before it reads its snapshot: the
// change log's hold (one Lua call, a PUBLISH, and every process's answer), against one plain Redis
// round trip (GET) in the same run. Two change logs, each with its own Redis connections, in this
// one process (the answers of a second process would add its own event-loop delay).
//
//   node bench/live/hold.js [--redis redis://...] [--samples 300]
//
// Needs `pnpm build`. Uses keys under svc-bench-hold-<pid>, deleted at the end.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';

const { values: opts } = parseArgs({ options: { redis: { type: 'string', default: process.env.SVC_TEST_REDIS_URL ?? '' }, samples: { type: 'string', default: '300' } } });
if (!opts.redis) throw new Error('give --redis or set SVC_TEST_REDIS_URL');
const require = createRequire(new URL('../../packages/realtime/package.json', import.meta.url));
const { createClient } = require('redis');
const { RedisChangeLog } = await import('../../packages/realtime/dist/internal/live/changeLog.js');
const key = `svc-bench-hold-${process.pid}`;
const logger = { info() {}, warn: (m) => process.stderr.write(`${m}\n`), error: (m) => process.stderr.write(`${m}\n`) };
const clients = [];
async function open() {
  const pub = createClient({ url: opts.redis });
  const sub = pub.duplicate();
  await Promise.all([pub.connect(), sub.connect()]);
  clients.push(pub, sub);
  return RedisChangeLog.open({ key, ringSize: 10, pub, sub, logger, isReady: () => true, onEntry() {}, onReconnect() {}, onLapse() {}, idleHoldMs: 10 });
}
const a = await open();
const b = await open();
const pub = clients[0];
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const p99 = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length * 0.99)];
const n = Number(opts.samples);
const hold = [];
const rtt = [];
const load = [os.loadavg()[0]];
for (let i = 0; i < n; i++) {
  let t = performance.now();
  await pub.get(`${key}:nothing`);
  rtt.push((performance.now() - t) * 1000);
  t = performance.now();
  await b.hold(`/c${i}`);
  hold.push((performance.now() - t) * 1000);
  if (!a.wanted(`/c${i}`)) throw new Error('the other log does not publish a path just held');
}
load.push(os.loadavg()[0]);
console.log(`| first hold of a collection (2 logs) | ${Math.round(median(hold))} µs p50, ${Math.round(p99(hold))} µs p99 |`);
console.log(`| one Redis GET round trip | ${Math.round(median(rtt))} µs p50, ${Math.round(p99(rtt))} µs p99 |`);
console.log(`ratio of medians: ${(median(hold) / median(rtt)).toFixed(1)}x; load average ${load.map((l) => l.toFixed(1)).join(' -> ')}`);
await a.close();
await b.close();
for await (const keys of pub.scanIterator({ MATCH: `${key}:*` })) if (keys.length > 0) await pub.del(keys);
for (const c of clients) await c.close();
