#!/usr/bin/env node
// Live-query benchmark: N subscribers on one svc process, each subscribed to {owner: "u<i>"} over
// its own socket.
//
//   node bench/live/run.js [--subscribers 10000] [--samples 400] [--rounds 5] [--ms 2000]
//
// 1. Latency of one write reaching its one subscriber, from the moment the store answered the
//    write (a change listener registered before realtime's) to the subscriber's receipt, beside
//    the same message sent by Socket.IO straight to the same socket (`socket.emit`), interleaved
//    sample by sample (svc, raw, raw, svc, ...). p50/p99 of each and their ratio.
// 2. Write throughput (one write after the other, in the server process) to /todos, whose N idle
//    subscriptions each write is matched against, and to /others (the same Collection, none),
//    interleaved in rounds; the ratio is the median of the same-round ratios.
// The server is pinned to core 0, the sockets' process to core 1 (taskset), all on 127.0.0.1.
// Needs `pnpm build` (runs @svc/core and @svc/realtime from dist). Writes bench/results/live-*.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { helpersPinned, killHelpers, startHelper } from '../lib/helpers.js';
import { median } from '../lib/stats.js';

const { values: opts } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '10000' },
    samples: { type: 'string', default: '400' },
    warmup: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '5' },
    ms: { type: 'string', default: '2000' },
    'paced-subscribers': { type: 'string', default: '1000' },
    'paced-rate': { type: 'string', default: '1000' },
    'paced-ms': { type: 'string', default: '5000' },
  },
});
const n = Number(opts.subscribers);
const here = (f) => fileURLToPath(new URL(f, import.meta.url));
const pin = helpersPinned();
const start = (script, core) => startHelper(script, [], core);

const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

const server = start(here('./server.js'), 0);
const clients = start(here('./clients.js'), 1);
await Promise.all([server.ready, clients.ready]);
try {
  const port = await server.ask('port');
  const connectStart = Date.now();
  await clients.ask('connect', { port, n });
  const subscribed = await server.ask('subscriptions');
  if (subscribed !== n) throw new Error(`${subscribed} of ${n} subscriptions`);
  process.stdout.write(`${n} subscribers connected and subscribed in ${((Date.now() - connectStart) / 1000).toFixed(1)} s\n`);

  // 1. Latency, interleaved.
  const svc = [];
  const raw = [];
  const total = Number(opts.warmup) + Number(opts.samples);
  for (let i = 0; i < total; i++) {
    const owner = `u${(i * 7919) % n}`;
    const order = i % 2 === 0 ? ['svc', 'raw'] : ['raw', 'svc'];
    for (const variant of order) {
      const title = `${variant === 'svc' ? 'w' : 'r'}${i}`;
      const sent = variant === 'svc' ? await server.ask('write', { title, owner }) : await server.ask('raw', { title, owner, sub: 's', seq: i, id: `id${i}` });
      const got = await clients.ask('received', { title });
      if (got === null) throw new Error(`${variant} sample ${i} never arrived`);
      if (i >= Number(opts.warmup)) (variant === 'svc' ? svc : raw).push(got - sent);
    }
  }
  const latency = {
    svc: { p50: percentile(svc, 50), p99: percentile(svc, 99) },
    raw: { p50: percentile(raw, 50), p99: percentile(raw, 99) },
  };
  latency.p99Ratio = latency.svc.p99 / latency.raw.p99;
  latency.p50Ratio = latency.svc.p50 / latency.raw.p50;

  // 2. Throughput, interleaved rounds.
  const ratios = [];
  const rounds = [];
  for (let r = 0; r < Number(opts.rounds); r++) {
    const order = r % 2 === 0 ? ['todos', 'others'] : ['others', 'todos'];
    const got = {};
    for (const target of order) got[target] = await server.ask('throughput', { target, ms: Number(opts.ms) });
    rounds.push(got);
    ratios.push(got.others.perSecond / got.todos.perSecond);
  }
  const throughput = {
    withSubscriptions: median(rounds.map((r) => r.todos.perSecond)),
    without: median(rounds.map((r) => r.others.perSecond)),
    cpuUsPerWriteWith: median(rounds.map((r) => r.todos.cpuUsPerWrite)),
    cpuUsPerWriteWithout: median(rounds.map((r) => r.others.cpuUsPerWrite)),
    ratio: median(ratios),
  };

  // 3. 1,000 writes/s, each to one of 1,000 subscribers, beside the same writes to /others (no
  //    one to tell): the server CPU each delivered event adds.
  const paced = [];
  for (let r = 0; r < Number(opts.rounds); r++) {
    const order = r % 2 === 0 ? ['todos', 'others'] : ['others', 'todos'];
    const got = {};
    for (const target of order) {
      await clients.ask('count');
      const s = await server.ask('paced', { target, rate: Number(opts['paced-rate']), ms: Number(opts['paced-ms']), targets: Number(opts['paced-subscribers']) });
      await new Promise((res) => setTimeout(res, 300));
      got[target] = { ...s, delivered: await clients.ask('count') };
    }
    paced.push(got);
  }
  const perEvent = paced.map((p) => (p.todos.cpuUs - p.others.cpuUs) / p.todos.delivered);
  const pacedSummary = {
    rate: Number(opts['paced-rate']),
    subscribers: Number(opts['paced-subscribers']),
    writesPerRound: median(paced.map((p) => p.todos.writes)),
    deliveredPerRound: median(paced.map((p) => p.todos.delivered)),
    cpuUsPerWriteWithDelivery: median(paced.map((p) => p.todos.cpuUs / p.todos.writes)),
    cpuUsPerWriteWithout: median(paced.map((p) => p.others.cpuUs / p.others.writes)),
    cpuUsPerDeliveredEvent: median(perEvent),
  };

  const result = { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, loadavg: os.loadavg(), pinned: pin, subscribers: n, samples: svc.length, latency, throughput, rounds, paced: pacedSummary, pacedRounds: paced };
  mkdirSync(here('../results'), { recursive: true });
  const file = here(`../results/live-${result.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  const us = (v) => `${Math.round(v)} µs`;
  process.stdout.write(
    [
      '',
      `| ${n} subscribers, one process | svc live query | raw Socket.IO emit | ratio |`,
      '|---|---|---|---|',
      `| one write -> its subscriber, p50 | ${us(latency.svc.p50)} | ${us(latency.raw.p50)} | ${latency.p50Ratio.toFixed(2)}x |`,
      `| one write -> its subscriber, p99 | ${us(latency.svc.p99)} | ${us(latency.raw.p99)} | ${latency.p99Ratio.toFixed(2)}x |`,
      '',
      `| write throughput (sequential, in-process) | ${n} idle subscriptions | none | ratio (none / with) |`,
      '|---|---|---|---|',
      `| writes/s (median of ${rounds.length} rounds) | ${Math.round(throughput.withSubscriptions)} | ${Math.round(throughput.without)} | ${throughput.ratio.toFixed(2)}x |`,
      `| server CPU per write | ${us(throughput.cpuUsPerWriteWith)} | ${us(throughput.cpuUsPerWriteWithout)} | |`,
      '',
      `| ${pacedSummary.rate} writes/s for ${Number(opts['paced-ms']) / 1000} s, each to one of ${pacedSummary.subscribers} subscribers | server CPU per write | |`,
      '|---|---|---|',
      `| to /todos (each write delivered: ${pacedSummary.deliveredPerRound} events of ${pacedSummary.writesPerRound} writes) | ${us(pacedSummary.cpuUsPerWriteWithDelivery)} | |`,
      `| to /others (nobody to tell) | ${us(pacedSummary.cpuUsPerWriteWithout)} | |`,
      `| **CPU per delivered event** (the difference) | ${us(pacedSummary.cpuUsPerDeliveredEvent)} | |`,
      '',
      `load average during the run: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} (2 cores shared); ${file}`,
      '',
    ].join('\n'),
  );
} finally {
  await Promise.allSettled([server.ask('close'), clients.ask('close')]);
  killHelpers();
}
