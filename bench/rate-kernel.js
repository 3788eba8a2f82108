#!/usr/bin/env node
// System CPU per answer against the server's own work per request: a bare node:http server answers
// the same bytes while spinning 0, 25 or 50 µs of arithmetic of its own per request, flat out or
// (--rate) at a fixed request rate, and this prints the server's user and system CPU per request
// for each. On the bench machine the system part grows with the spin at one rate too (a slower
// request's CPU is not its user time plus a fixed kernel cost): see bench/RESULTS.md.
//
//   node bench/rate-kernel.js [--bytes 28592] [--spend 0,25,50] [--rate <req/s>] [--rounds 2] [--duration 4]
//
// Server pinned to core 0, the load generator (the harness's HTTP driver, 20 connections) to core
// 1, 127.0.0.1 only; every process started is stopped by PID.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './lib/args.js';
import { spawnNode, waitListening, stop, stopAll, freePort, pinning, pinSelf } from './lib/procs.js';
import { median } from './lib/stats.js';

const opts = parseArgs(process.argv.slice(2), { bytes: 'number', spend: 'string', rate: 'number', rounds: 'number', duration: 'number' });
const bytes = opts.bytes ?? 28_592;
const spends = (opts.spend ?? '0,25,50').split(',').map(Number);
const rounds = opts.rounds ?? 2;
const duration = opts.duration ?? 4;
const server = fileURLToPath(new URL('./servers/bare-http.js', import.meta.url));
const driver = fileURLToPath(new URL('./lib/drivers/http.js', import.meta.url));

const pins = pinning();
if (pins) pinSelf(pins.load);
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-rate-'));
const bodyFile = join(dir, 'body.json');
writeFileSync(bodyFile, `[${'x'.repeat(bytes - 2)}]`);
const rows = Object.fromEntries(spends.map((s) => [s, []]));
try {
  for (let round = 0; round < rounds; round++) {
    for (const spend of spends) {
      const port = await freePort();
      const child = spawnNode([server, '--port', String(port), '--body-file', bodyFile, '--spend-us', String(spend)], { core: pins?.server });
      try {
        await waitListening(child);
        const cfg = { url: `http://127.0.0.1:${port}/`, method: 'GET', headers: {}, connections: 20, warmup: 1, duration, serverPid: child.pid, serverCore: pins?.server ?? null, rate: opts.rate };
        const run = spawnSync(process.execPath, [driver, JSON.stringify(cfg)], { encoding: 'utf8' });
        if (run.status !== 0) throw new Error(`driver failed: ${run.stderr}`);
        const f = JSON.parse(run.stdout.trim().split('\n').pop());
        rows[spend].push({ rps: f.rps, user: f.userCpuUsPerRequest, system: f.cpuUsPerRequest - f.userCpuUsPerRequest });
        process.stderr.write(`round ${round + 1} spend ${spend} µs: ${f.rps.toFixed(0)} req/s, user ${f.userCpuUsPerRequest.toFixed(1)} µs, system ${(f.cpuUsPerRequest - f.userCpuUsPerRequest).toFixed(1)} µs per request\n`);
      } finally {
        await stop(child);
      }
    }
  }
  const out = Object.fromEntries(Object.entries(rows).map(([spend, rs]) => [`spend ${spend} µs`, { rps: Math.round(median(rs.map((r) => r.rps))), userUs: +median(rs.map((r) => r.user)).toFixed(1), systemUs: +median(rs.map((r) => r.system)).toFixed(1) }]));
  process.stdout.write(`${JSON.stringify({ bytes, rate: opts.rate ?? null, rounds, duration, medians: out }, null, 2)}\n`);
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
