#!/usr/bin/env node
// Realtime benchmark: @svc/realtime (Socket.IO on a real svc server) beside plain Socket.IO and a
// raw `ws` broadcast loop, in the same run, as shared/BENCHMARKING.md asks.
//
//   node bench/realtime/run.js [--rounds 5] [--warmup 2] [--seconds 10] [--sizes 500,1000] [--user-emits 200]
//
// Per measurement: a fresh server process pinned to core 0 (server.js), the sockets in one process
// pinned to core 1 (clients.js), a ~100-byte broadcast every 20 ms; warm-up discarded. Variants are
// interleaved (svc sio ws, then sio ws svc, ...); ratios are the median of same-round ratios. Then a
// user-targeted emit among 1,000 logged-in sockets: its latency, and proof only the target got it.
// Needs `pnpm build` (it runs @svc/core and @svc/realtime from dist). Writes bench/results/realtime-*.json.
import { mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { helpersPinned, startHelper as start } from '../lib/helpers.js';
import { median } from '../lib/stats.js';

const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '10' },
    sizes: { type: 'string', default: '500,1000' },
    'user-emits': { type: 'string', default: '200' },
    interval: { type: 'string', default: '20' },
    variants: { type: 'string', default: 'svc,sio,ws' },
  },
});
const rounds = Number(opts.rounds);
const interval = Number(opts.interval);
const sizes = opts.sizes.split(',').map(Number);
const here = (f) => fileURLToPath(new URL(f, import.meta.url));
const pin = helpersPinned();

async function waitConnections(server, n) {
  const end = Date.now() + 30_000;
  while ((await server.ask('connections')) < n) {
    if (Date.now() > end) throw new Error(`only ${await server.ask('connections')} of ${n} sockets connected`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One measurement: a fresh server and client process, warm-up, measured window. */
async function measure(variant, n) {
  const server = start(here('./server.js'), [variant], 0);
  const clients = start(here('./clients.js'), [], 1);
  const { port } = await server.ready;
  await clients.ready;
  try {
    await clients.ask('connect', { variant, port, n });
    await waitConnections(server, n);
    await server.ask('broadcast', { count: Math.round((Number(opts.warmup) * 1000) / interval), intervalMs: interval });
    await new Promise((r) => setTimeout(r, 200));
    await clients.ask('reset');
    const count = Math.round((Number(opts.seconds) * 1000) / interval);
    const s = await server.ask('broadcast', { count, intervalMs: interval });
    await new Promise((r) => setTimeout(r, 300));
    const c = await clients.ask('report');
    const sync = [...s.syncUs].sort((a, b) => a - b);
    return {
      variant,
      sockets: n,
      emits: count,
      delivered: c.broadcast.count,
      expected: count * n,
      p50: c.broadcast.p50,
      p99: c.broadcast.p99,
      syncUsPerEmit: median(sync),
      syncUsPerRecipient: median(sync) / n,
      loopUsPerEmit: s.loopBusyUs / count,
      loopUsPerRecipient: s.loopBusyUs / count / n,
      cpuUsPerEmit: s.cpuUs / count,
      cpuUsPerRecipient: s.cpuUs / count / n,
    };
  } finally {
    await Promise.allSettled([server.ask('close'), clients.ask('close')]);
  }
}

/** A user-targeted emit among n logged-in sockets (one user each). */
async function userTargeted(n, count) {
  const server = start(here('./server.js'), ['svc'], 0);
  const clients = start(here('./clients.js'), [], 1);
  const { port } = await server.ready;
  await clients.ready;
  try {
    const sids = await server.ask('users', { n });
    await clients.ask('connect', { variant: 'svc', port, n, sids });
    await waitConnections(server, n);
    await clients.ask('reset');
    const s = await server.ask('user-emits', { count, intervalMs: interval, users: n });
    await new Promise((r) => setTimeout(r, 300));
    const { dm } = await clients.ask('report');
    const targets = new Set(Array.from({ length: count }, (_, i) => (i * 7919) % n));
    const onlyTargets = dm.perSocket.every((got, i) => (targets.has(i) ? got >= 1 : got === 0));
    return {
      sockets: n,
      emits: count,
      received: dm.count,
      wrongRecipient: dm.wrong,
      socketsReached: dm.socketsReached,
      distinctTargets: targets.size,
      onlyTargetsReceived: onlyTargets && dm.count === count && dm.wrong === 0,
      p50: dm.p50,
      p99: dm.p99,
      callUsP50: median(s.callUs),
    };
  } finally {
    await Promise.allSettled([server.ask('close'), clients.ask('close')]);
  }
}

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const results = [];
const started = new Date();
process.stdout.write(`realtime bench: ${rounds} rounds, ${opts.warmup} s warm-up + ${opts.seconds} s, broadcast every ${interval} ms, sizes ${sizes.join(', ')}\n`);
for (let round = 0; round < rounds; round++) {
  for (const n of sizes) {
    const variants = opts.variants.split(',');
    const order = variants.map((_, i) => variants[(i + round) % variants.length]);
    for (const variant of order) {
      const r = { round, ...(await measure(variant, n)) };
      results.push(r);
      process.stdout.write(
        `round ${round} ${variant.padEnd(3)} ${String(n).padStart(4)} sockets: p50 ${fmt(r.p50)} µs p99 ${fmt(r.p99)} µs | loop ${fmt(r.loopUsPerEmit)} µs/emit (${fmt(r.loopUsPerRecipient, 2)}/recipient) | emit() ${fmt(r.syncUsPerEmit)} µs | delivered ${r.delivered}/${r.expected}\n`,
      );
    }
  }
}

const summary = sizes.map((n) => {
  const per = (v) => results.filter((r) => r.sockets === n && r.variant === v);
  const ratio = (v, key) => median(per(v).map((s) => s[key] / per('ws').find((w) => w.round === s.round)[key]));
  const med = (v, key) => median(per(v).map((r) => r[key]));
  return {
    sockets: n,
    ...Object.fromEntries(['svc', 'sio', 'ws'].map((v) => [v, { p50: med(v, 'p50'), p99: med(v, 'p99'), loopUsPerRecipient: med(v, 'loopUsPerRecipient'), cpuUsPerRecipient: med(v, 'cpuUsPerRecipient'), syncUsPerRecipient: med(v, 'syncUsPerRecipient') }])),
    ratio: Object.fromEntries(['svc', 'sio'].map((v) => [v, { p50: ratio(v, 'p50'), p99: ratio(v, 'p99'), loopPerRecipient: ratio(v, 'loopUsPerRecipient'), cpuPerRecipient: ratio(v, 'cpuUsPerRecipient') }])),
    allDelivered: [...per('svc'), ...per('sio'), ...per('ws')].every((r) => r.delivered === r.expected),
  };
});
const user = await userTargeted(Math.max(...sizes, 1000), Number(opts['user-emits']));

process.stdout.write('\nsockets | variant | p50 / p99 µs | vs ws p50 / p99 | loop µs per recipient | CPU µs per recipient (vs ws)\n');
for (const s of summary) {
  for (const v of ['svc', 'sio', 'ws']) {
    const r = s.ratio[v];
    process.stdout.write(
      `${s.sockets} | ${v} | ${fmt(s[v].p50)} / ${fmt(s[v].p99)} | ${r ? `${fmt(r.p50, 2)}x / ${fmt(r.p99, 2)}x` : '1x'} | ${fmt(s[v].loopUsPerRecipient, 2)} | ${fmt(s[v].cpuUsPerRecipient, 2)}${r ? ` (${fmt(r.cpuPerRecipient, 2)}x)` : ''}\n`,
    );
  }
}
process.stdout.write(`all delivered: ${summary.every((s) => s.allDelivered)}\n`);
process.stdout.write(
  `\nuser-targeted emit among ${user.sockets} sockets: ${user.received}/${user.emits} received, ${user.wrongRecipient} at a wrong socket, ${user.socketsReached} sockets reached for ${user.distinctTargets} targets, only targets: ${user.onlyTargetsReceived}; delivery p50 ${fmt(user.p50)} µs p99 ${fmt(user.p99)} µs; emitToUsers() call p50 ${fmt(user.callUsP50)} µs\n`,
);

const out = {
  date: started.toISOString(),
  command: `node bench/realtime/run.js ${process.argv.slice(2).join(' ')}`.trim(),
  machine: { nproc: os.availableParallelism(), cpu: /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1], node: process.version, pinned: pin },
  options: { rounds, warmup: Number(opts.warmup), seconds: Number(opts.seconds), intervalMs: interval, sizes },
  summary,
  userTargeted: user,
  runs: results,
};
mkdirSync(here('../results'), { recursive: true });
const file = here(`../results/realtime-${started.toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
process.stdout.write(`\nwrote ${file}\n`);
if (!user.onlyTargetsReceived || !summary.every((s) => s.allDelivered)) {
  process.stderr.write('INVALID: a message was lost or reached the wrong socket\n');
  process.exitCode = 1;
}
