#!/usr/bin/env node
// Issue 43's webhook aims, on the embedded store:
//   1. write throughput: POST /todos at full load (50 connections) on an app whose todos have a
//      Webhook, against the same app without it, as a median of same-round ratios (rounds
//      interleaved, a fresh server per measurement); the outbox left at the end of each hooked
//      window is timed as it drains;
//   2. delivery delay: POST /todos at a fixed 500 writes/s for `duration` s to the app with the
//      Webhook; the receiver notes, per delivery, the time since the write was stored (p50/p99).
// The server is pinned to core 0; the load generator, this harness and the receiver to core 1.
//
//   flock /work/bench.lock node bench/webhooks.js [--rounds 5] [--duration 10] [--warmup 2] [--rate 500] [--no-build] [--cpu-prof <dir>] [--latency-only]
// --cpu-prof: each server writes a V8 CPU profile to <dir> when stopped (bench/profile-summary.js reads it).
//
// Loopback only; every process started is stopped by PID at the end, on error and on signals.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './lib/args.js';
import { cpuSeconds, freePort, pinning, pinSelf, spawnNode, stopAll, stopAllOnSignals, stop, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { helpersPinned, startHelper, killHelpers } from './lib/helpers.js';
import { runLoad } from './lib/load.js';
import { startSession, closeAgent } from './lib/http.js';
import { median } from './lib/stats.js';

const opts = parseArgs(process.argv.slice(2), { rounds: 'number', duration: 'number', warmup: 'number', rate: 'number', 'no-build': 'boolean', 'cpu-prof': 'string', 'latency-only': 'boolean' });
// --latency-only: the fixed-rate delivery delay part alone (no throughput rounds).
const rounds = opts['latency-only'] ? 0 : Math.max(1, Math.floor(opts.rounds ?? 5));
const duration = opts.duration ?? 10;
const warmup = opts.warmup ?? 2;
const rate = opts.rate ?? 500;
const repo = fileURLToPath(new URL('..', import.meta.url));
const pin = pinning();
// Asked before this process pins itself: nproc counts the cores a process may use.
helpersPinned();
if (pin) pinSelf(pin.load);
const log = (m) => process.stderr.write(`${m}\n`);
const tmpRoot = mkdtempSync(join(tmpdir(), 'svc-bench-webhooks-'));
const SECRET = 'bench-secret-0123456789abcdef';
stopAllOnSignals({ before: killHelpers, tmp: tmpRoot });

if (!opts['no-build']) {
  log('building @svc/server and @svc/type-webhook ...');
  execFileSync('pnpm', ['turbo', 'run', 'build', '--filter=@svc/server...', '--filter=@svc/type-webhook...'], { cwd: repo, stdio: 'ignore' });
}

/** An app folder: bench/app's todos, plus (hooked) a Webhook on them posting to the receiver. */
function makeApp(n, hooked, receiverPort) {
  const dir = join(tmpRoot, `app-${n}`);
  cpSync(join(repo, 'bench/app'), dir, { recursive: true });
  if (hooked) {
    mkdirSync(join(dir, 'resources', 'hooks'), { recursive: true });
    writeFileSync(join(dir, 'resources', 'hooks', 'config.json'), JSON.stringify({ type: 'Webhook', collection: 'todos', url: `http://127.0.0.1:${receiverPort}/hook`, secret: '${env:HOOK_SECRET}' }));
    mkdirSync(join(dir, 'node_modules', '@svc'), { recursive: true });
    symlinkSync(join(repo, 'packages/type-webhook'), join(dir, 'node_modules', '@svc', 'type-webhook'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, dependencies: { '@svc/type-webhook': 'link:../type-webhook' } }));
  }
  writeFileSync(join(dir, 'app.json'), JSON.stringify({ publicCount: true, outbound: { allow: [`127.0.0.1:${receiverPort}`] } }));
  return dir;
}

let started = 0;
async function startServer(hooked, receiverPort) {
  const port = await freePort();
  const dir = makeApp(started++, hooked, receiverPort);
  const prof = opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${opts['cpu-prof']}`, `--cpu-prof-name=${hooked ? 'hooked' : 'plain'}-${started}.cpuprofile`] : [];
  const child = spawnNode([...SVC_NODE_FLAGS, ...prof, join(repo, 'apps/server/bin/svc.js'), dir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { HOOK_SECRET: SECRET }, cwd: repo });
  await waitListening(child);
  const cookie = await startSession(port, '/todos');
  return { child, port, cookie, hooked };
}

const post = (srv, extra) => ({
  url: `http://127.0.0.1:${srv.port}/todos`,
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(srv.cookie ? { cookie: srv.cookie } : {}) },
  body: JSON.stringify({ title: 'x', done: false }),
  connections: 50,
  serverPid: srv.child.pid,
  serverCore: pin?.server,
  ...extra,
});

/** Waits until the receiver has `count` deliveries (or `limitMs` passed); answers the ms it took. */
async function drained(receiver, count, limitMs = 120_000) {
  const t0 = Date.now();
  for (;;) {
    const stats = await receiver.ask('stats');
    if (stats.unique >= count || Date.now() - t0 > limitMs) return { ms: Date.now() - t0, stats };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const receiver = startHelper(join(repo, 'bench/servers/webhook-receiver.js'), [], pin?.load);
const { port: receiverPort } = await receiver.ready;
const results = { throughput: [], latency: undefined };
try {
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [false, true] : [true, false];
    const row = {};
    for (const hooked of order) {
      await receiver.ask('reset');
      const srv = await startServer(hooked, receiverPort);
      const out = await runLoad(post(srv, { warmup, duration }), pin?.load);
      if (out.non2xx || out.errors) throw new Error(`round ${round} ${hooked ? 'hooked' : 'plain'}: ${out.non2xx} non-2xx, ${out.errors} errors`);
      const cpuUs = out.cpuUsPerRequest;
      const entry = { rps: out.rps, cpuUs, p99: out.latencyMs.p99 };
      if (hooked) {
        // Writes of the warm-up and of the window: all must be delivered.
        const atEnd = await receiver.ask('stats');
        const total = (await (await fetch(`http://127.0.0.1:${srv.port}/todos/count`, { headers: { cookie: srv.cookie } }).catch(() => undefined))?.json?.().catch(() => undefined))?.count;
        const written = typeof total === 'number' ? total : out.requests;
        // The drain: no writes any more, so the server's CPU over it is the deliveries' own.
        const cpuBefore = cpuSeconds(srv.child.pid);
        const drain = await drained(receiver, written);
        const drainedCount = drain.stats.unique - atEnd.unique;
        entry.drainCpuUsPerDelivery = drainedCount > 0 ? ((cpuSeconds(srv.child.pid) - cpuBefore) * 1e6) / drainedCount : undefined;
        entry.deliveredAtEnd = atEnd.unique;
        entry.written = written;
        entry.drainMs = drain.ms;
        entry.delivered = drain.stats.unique;
      }
      row[hooked ? 'hooked' : 'plain'] = entry;
      await stop(srv.child);
      log(`round ${round + 1}/${rounds} ${hooked ? 'hooked' : 'plain '}: ${Math.round(out.rps)} req/s, ${cpuUs.toFixed(0)} µs CPU/req, p99 ${out.latencyMs.p99} ms${hooked ? `, delivered ${entry.deliveredAtEnd} during the window, all ${entry.delivered}/${entry.written} after ${entry.drainMs} ms more (${entry.drainCpuUsPerDelivery?.toFixed(0)} µs CPU per delivery)` : ''}`);
    }
    results.throughput.push(row);
  }
  // 2. delivery delay at a fixed rate.
  await receiver.ask('reset');
  const srv = await startServer(true, receiverPort);
  const out = await runLoad(post(srv, { warmup: 0, duration, rate, connections: 20 }), pin?.load);
  const drain = await drained(receiver, out.requests);
  results.latency = { rate, requests: out.requests, rps: out.rps, writeP99: out.latencyMs.p99, cpuUs: out.cpuUsPerRequest, deliveries: drain.stats };
  await stop(srv.child);
} finally {
  await receiver.ask('close').catch(() => undefined);
  await stopAll();
  closeAgent();
  rmSync(tmpRoot, { recursive: true, force: true });
}

const ratios = results.throughput.map((r) => r.hooked.rps / r.plain.rps);
const cpuRatios = results.throughput.map((r) => r.hooked.cpuUs / r.plain.cpuUs);
const summary = {
  date: new Date().toISOString(),
  rounds,
  duration,
  throughput: {
    medianRpsRatio: median(ratios),
    ratios,
    medianCpuRatio: median(cpuRatios),
    plainRps: median(results.throughput.map((r) => r.plain.rps)),
    hookedRps: median(results.throughput.map((r) => r.hooked.rps)),
    plainCpuUs: median(results.throughput.map((r) => r.plain.cpuUs)),
    hookedCpuUs: median(results.throughput.map((r) => r.hooked.cpuUs)),
    drainMs: results.throughput.map((r) => r.hooked.drainMs),
    // A delivery's CPU (measured over the drain) against a plain write's, same round.
    drainCpuUsPerDelivery: median(results.throughput.map((r) => r.hooked.drainCpuUsPerDelivery)),
    medianDeliveryToWriteCpu: median(results.throughput.map((r) => r.hooked.drainCpuUsPerDelivery / r.plain.cpuUs)),
    deliveredDuringWindow: results.throughput.map((r) => `${r.hooked.deliveredAtEnd}/${r.hooked.written}`),
  },
  latency: results.latency,
};
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
