#!/usr/bin/env node
// What writes pay for live queries that nobody uses: server CPU per write and writes/s of one svc
// process with realtime off, with realtime on (no subscription anywhere) without Redis, and over
// Redis; each variant from one or two builds (--before: another checkout, built), all in the same
// run. Writes are create, update, delete cycles of one object, sequential, in the server process
// (root, embedded store), so that the figure is the write path's own cost.
//
//   node bench/live/writes.js [--before /path/to/checkout] [--redis redis://...] [--windows 9] [--ms 2000]
//
// Each window runs every variant once, one after the other (order rotated per window), pinned to
// core 0 (taskset, when there are 2 cores). Per window, each variant's ratio to `off` (of the same
// build as the first listed) is taken; the answer is the median of those same-window ratios.
// Only loopback; every child is stopped by its PID.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';

const { values: opts } = parseArgs({
  options: {
    before: { type: 'string' },
    redis: { type: 'string', default: process.env.SVC_TEST_REDIS_URL ?? '' },
    windows: { type: 'string', default: '9' },
    ms: { type: 'string', default: '2000' },
  },
});
const here = dirname(fileURLToPath(import.meta.url));
const after = resolve(here, '../..');
const builds = opts.before ? [['before', resolve(opts.before)], ['after', after]] : [['this', after]];
const modes = ['off', 'local', ...(opts.redis ? ['redis'] : [])];
const pin = (() => {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return os.availableParallelism() >= 2;
  } catch {
    return false;
  }
})();
const children = new Set();
const stopAll = () => {
  for (const child of children) child.kill('SIGTERM');
};
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => (stopAll(), process.exit(1)));
process.on('uncaughtException', (err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  stopAll();
  process.exit(1);
});
process.on('unhandledRejection', (err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  stopAll();
  process.exit(1);
});

function start(repo, mode, key) {
  const script = join(here, 'writeServer.js');
  const args = ['--no-node-snapshot', script, '--repo', repo, '--mode', mode, '--redis', opts.redis, '--key', key];
  const child = spawn(pin ? 'taskset' : process.execPath, pin ? ['-c', '0', process.execPath, ...args] : args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  const waiting = new Map();
  child.on('message', (msg) => {
    const w = waiting.get(msg.cmd);
    if (!w) return;
    waiting.delete(msg.cmd);
    if (msg.error) w.reject(new Error(msg.error));
    else w.resolve(msg.result);
  });
  const ask = (cmd, extra = {}) =>
    new Promise((res, rej) => {
      waiting.set(cmd, { resolve: res, reject: rej });
      if (cmd !== 'ready') child.send({ cmd, ...extra });
    });
  return { ready: ask('ready'), ask, child };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const variants = [];
for (const [build, repo] of builds) for (const mode of modes) variants.push({ id: `${build}/${mode}`, build, mode, server: start(repo, mode, `svc-bench-writes-${process.pid}-${build}`) });
await Promise.all(variants.map((v) => v.server.ready));
const windows = Number(opts.windows);
const ms = Number(opts.ms);
const rows = Object.fromEntries(variants.map((v) => [v.id, []]));
const load = [os.loadavg()[0]];
// Warm-up: one short run each.
for (const v of variants) await v.server.ask('cycles', { ms: 500 });
for (let w = 0; w < windows; w++) {
  const order = variants.map((_, i) => variants[(i + w) % variants.length]);
  for (const v of order) rows[v.id].push(await v.server.ask('cycles', { ms }));
  load.push(os.loadavg()[0]);
  process.stderr.write(`window ${w + 1}/${windows}: ${variants.map((v) => `${v.id} ${rows[v.id][w].cpuUsPerWrite.toFixed(1)} µs`).join(', ')}\n`);
}
for (const v of variants) await v.server.ask('close');
const base = variants[0].id;
const summary = variants.map((v) => ({
  variant: v.id,
  cpuUsPerWrite: median(rows[v.id].map((r) => r.cpuUsPerWrite)),
  writesPerSecond: median(rows[v.id].map((r) => r.perSecond)),
  cpuRatio: median(rows[v.id].map((r, i) => r.cpuUsPerWrite / rows[base][i].cpuUsPerWrite)),
  rateRatio: median(rows[v.id].map((r, i) => r.perSecond / rows[base][i].perSecond)),
}));
console.log(`| variant | server CPU per write (median) | writes/s (median) | CPU vs ${base} (median of same-window ratios) | writes/s vs ${base} |`);
console.log('|---|---|---|---|---|');
for (const s of summary) console.log(`| ${s.variant} | ${s.cpuUsPerWrite.toFixed(1)} µs | ${Math.round(s.writesPerSecond)} | ${s.cpuRatio.toFixed(2)}x | ${s.rateRatio.toFixed(2)}x |`);
console.log(`load average (1 min) during the run: ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)}, median ${median(load).toFixed(1)}; pinned: ${pin}`);
mkdirSync(join(here, '../results'), { recursive: true });
writeFileSync(join(here, `../results/live-writes-${Date.now()}.json`), JSON.stringify({ windows, ms, builds, rows, summary, load }, null, 2));
