#!/usr/bin/env node
// CPU profiles of svc (server and script processes) under load on one scenario, for finding where
// a scripted request's time goes:
//   node bench/profile-script.js --variant svc-get --scenario get-one-script --duration 8 --out /tmp/prof
// Writes the server's V8 .cpuprofile (or, with --children, the script processes') into --out; summarise them with
// `node bench/profile-summary.js <file>`.
import { mkdtempSync, cpSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from './lib/args.js';
import { headersOf, scenarios, seed as seedSpec } from './scenarios.js';
import { variants, repoRoot } from './variants.js';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { spawnNode, waitListening, stop, freePort, pinning, clkTck } from './lib/procs.js';
import { runLoad } from './lib/load.js';
import { startSession, seed, closeAgent } from './lib/http.js';

/** CPU ticks of `pid` and its children (the script processes), by pid. */
function perProcess(pid) {
  const out = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(f[1]);
    if (Number(name) === pid || ppid === pid) out.set(Number(name), { ticks: Number(f[11]) + Number(f[12]) });
  }
  return out;
}

const opts = parseArgs(process.argv.slice(2), { variant: 'string', scenario: 'string', duration: 'number', out: 'string', children: 'boolean', 'no-prof': 'boolean', node: 'string', v8: 'string', log: 'string', connections: 'number' });
const scenario = scenarios.find((s) => s.id === (opts.scenario ?? 'get-one-script'));
const variant = variants[opts.variant ?? 'svc-get'];
if (!scenario || !variant) throw new Error('unknown scenario or variant');
const out = resolve(opts.out ?? join(tmpdir(), 'svc-profile'));
mkdirSync(out, { recursive: true });
const pin = pinning();
const tmpRoot = mkdtempSync(join(tmpdir(), 'svc-prof-'));
const port = await freePort();
const ctx = { port, appDir: join(tmpRoot, 'app') };
cpSync(join(repoRoot, variant.app), ctx.appDir, { recursive: true });
const cmd = variant.command(ctx);
const child = spawnNode(opts.v8 ? [...opts.v8.split(' '), ...cmd.args] : cmd.args, { core: pin?.server, env: { ...cmd.env, NODE_OPTIONS: [opts['no-prof'] ? '' : `--cpu-prof --cpu-prof-dir=${out}`, opts.node ?? ''].join(' ').trim() }, cwd: repoRoot });
if (opts.log) {
  const sink = createWriteStream(opts.log);
  child.stdout.on('data', (chunk) => sink.write(chunk));
}
try {
  await waitListening(child);
  const cookie = await startSession(port, seedSpec.path);
  const state = { ids: await seed(port, seedSpec, cookie) };
  closeAgent();
  const before = perProcess(child.pid);
  const r = await runLoad(
    {
      url: `http://127.0.0.1:${port}${scenario.path(state)}`,
      method: scenario.method,
      headers: headersOf(scenario, cookie),
      body: scenario.body,
      connections: opts.connections ?? 50,
      warmup: 2,
      duration: opts.duration ?? 8,
      serverPid: child.pid,
      serverCore: pin?.server,
    },
    pin?.load,
  );
  const after = perProcess(child.pid);
  const requests = r.rps * (opts.duration ?? 8);
  for (const [pid, t] of after) {
    const spent = (t.ticks - (before.get(pid)?.ticks ?? 0)) / clkTck;
    process.stderr.write(`  pid ${pid}${pid === child.pid ? ' (server)' : ''}: ${spent.toFixed(2)} s CPU over warm-up + run, ~${((spent * 1e6) / (requests * (1 + 2 / (opts.duration ?? 8)))).toFixed(1)} µs/req\n`);
  }
  process.stderr.write(`${Math.round(r.rps)} req/s, ${r.cpuUsPerRequest?.toFixed(1)} µs/req; profiles in ${out}\n`);
} finally {
  // --children: the script processes' profiles instead of the server's. Killing the server
  // (SIGKILL) closes their IPC channel, so they exit normally and write their profiles; a stopped
  // server SIGKILLs them, and writes only its own.
  if (opts.children) {
    process.kill(child.pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 2000));
  }
  await stop(child);
  rmSync(tmpRoot, { recursive: true, force: true });
}
