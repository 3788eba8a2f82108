#!/usr/bin/env node
// Paired A/B of two variants, for differences of a few µs per request that run.js's rounds (a
// fresh server per measurement, 10 s apart) cannot resolve on a shared VM whose speed drifts by up
// to 2x over seconds. Both servers stay up (seeded once, warmed); then, per window:
//   alternate (default)  A then B, or B then A (ABBA order), each alone on the server core at
//                        full load (run.js's conditions), `duration` s each, right one after the other
//   --together           A and B at the same time, both servers on the server core, both load
//                        generators on the other: the same seconds for both, but each server at
//                        half load (fewer requests per wake-up, smaller write batches)
// Each window gives each server's CPU per request; the median of the per-window ratios is the answer.
// CPU counts the server process and its children (svc's script processes); the output also gives
// the server process alone and the children's part (`server + scripts`).
//
//   node bench/pair.js --scenario get-one --a svc --b hand [--windows 15] [--duration 3] [--together]
//       [--seed <todos>]
//
// `--seed 100000`: that many todos POSTed to each server before the windows (default the
// scenario table's 1,000). The servers' RSS is printed at the end.
//
// Variants and scenarios are run.js's (variants.js, scenarios.js); both must be stateful (seeded).
// Only loopback; every process started is stopped by PID at the end, on error and on signals.
import { mkdtempSync, cpSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from './lib/args.js';
import { headersOf, scenarios, seed as seedSpec } from './scenarios.js';
import { variants, repoRoot } from './variants.js';
import { spawnNode, waitListening, stop, stopAll, freePort, pinning, pinSelf } from './lib/procs.js';
import { runLoad } from './lib/load.js';
import { startSession, seed, closeAgent } from './lib/http.js';
import { median, min, max } from './lib/stats.js';

const opts = parseArgs(process.argv.slice(2), { scenario: 'string', a: 'string', b: 'string', windows: 'number', duration: 'number', connections: 'number', together: 'boolean', seed: 'number' });
const scenario = scenarios.find((s) => s.id === (opts.scenario ?? 'get-one'));
const ids = [opts.a ?? 'svc', opts.b ?? 'hand'];
if (!scenario) throw new Error(`no scenario ${opts.scenario}; known: ${scenarios.map((s) => s.id).join(', ')}`);
for (const id of ids) if (!variants[id]?.stateful) throw new Error(`${id}: not a stateful variant of variants.js`);
const windows = Math.max(1, Math.floor(opts.windows ?? 15));
const duration = opts.duration ?? 3;
const together = opts.together === true;
const seedCount = Math.max(1, Math.floor(opts.seed ?? seedSpec.count));
const connections = Math.max(1, Math.floor((opts.connections ?? 50) / (together ? 2 : 1)));
const pin = pinning();
if (pin) pinSelf(pin.load);
const tmpRoot = mkdtempSync(join(tmpdir(), 'svc-pair-'));
const log = (m) => process.stderr.write(`${m}\n`);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    stopAll().finally(() => {
      rmSync(tmpRoot, { recursive: true, force: true });
      process.exit(sig === 'SIGINT' ? 130 : 143);
    });
  });
}

async function start(id, n) {
  const variant = variants[id];
  const port = await freePort();
  const ctx = { port };
  if (variant.app) {
    ctx.appDir = join(tmpRoot, `app-${n}`);
    cpSync(join(repoRoot, variant.app), ctx.appDir, { recursive: true });
  }
  const cmd = variant.command(ctx);
  const child = spawnNode(cmd.args, { core: pin?.server, env: cmd.env, cwd: repoRoot });
  await waitListening(child);
  const cookie = await startSession(port, seedSpec.path);
  const state = { ids: await seed(port, { ...seedSpec, count: seedCount }, cookie) };
  return { id, child, port, cookie, state };
}

const loadOf = (srv, seconds, warmup) => ({
  url: `http://127.0.0.1:${srv.port}${scenario.path(srv.state)}`,
  method: scenario.method,
  headers: headersOf(scenario, srv.cookie),
  body: scenario.body,
  connections,
  warmup,
  duration: seconds,
  serverPid: srv.child.pid,
  serverCore: pin?.server,
});

const servers = [];
try {
  for (const [n, id] of ids.entries()) servers.push(await start(id, n));
  log(`${scenario.title}: ${ids[0]} vs ${ids[1]}, ${windows} windows of ${duration} s, ${connections} connections each, ${together ? 'together' : 'alternating (ABBA)'}, server core ${pin?.server ?? '-'}`);
  // GCSTAT_DIR: the servers were started with bench/lib/gcStat.mjs preloaded, which writes their GC
  // pauses to $GCSTAT_DIR/gc-<pid>.json (SVC_BENCH_FLAGS="--import ./bench/lib/gcStat.mjs"); their
  // sums over the windows are printed.
  const gcOf = async () => {
    if (!process.env.GCSTAT_DIR) return undefined;
    await new Promise((r) => setTimeout(r, 700));
    return servers.map((srv) => JSON.parse(readFileSync(join(process.env.GCSTAT_DIR, `gc-${srv.child.pid}.json`), 'utf8')));
  };
  const gcBefore = await gcOf();
  const served = [0, 0];
  const ratios = [];
  const per = [[], []];
  const own = [[], []];
  for (let w = 0; w < windows; w++) {
    const warmup = w === 0 ? 2 : 0.5;
    let ra;
    let rb;
    if (together) {
      [ra, rb] = await Promise.all(servers.map((srv) => runLoad(loadOf(srv, duration, warmup), pin?.load)));
    } else if (w % 2 === 0) {
      ra = await runLoad(loadOf(servers[0], duration, warmup), pin?.load);
      rb = await runLoad(loadOf(servers[1], duration, warmup), pin?.load);
    } else {
      rb = await runLoad(loadOf(servers[1], duration, warmup), pin?.load);
      ra = await runLoad(loadOf(servers[0], duration, warmup), pin?.load);
    }
    for (const r of [ra, rb]) if (r.non2xx || r.errors) throw new Error(`errors under load: ${JSON.stringify(r.statusCodes)} ${r.errors}`);
    // No CPU figure (no request finished in the window, on a machine stalled by other work): skipped.
    if (typeof ra.cpuUsPerRequest !== 'number' || typeof rb.cpuUsPerRequest !== 'number') {
      log(`window ${w + 1}/${windows}: no CPU per request measured (${Math.round(ra.rps)} / ${Math.round(rb.rps)} req/s): skipped`);
      continue;
    }
    served[0] += ra.rps * (duration + warmup);
    served[1] += rb.rps * (duration + warmup);
    per[0].push(ra.cpuUsPerRequest);
    per[1].push(rb.cpuUsPerRequest);
    own[0].push(ra.ownCpuUsPerRequest);
    own[1].push(rb.ownCpuUsPerRequest);
    ratios.push(ra.cpuUsPerRequest / rb.cpuUsPerRequest);
    const split = (r) => `${r.cpuUsPerRequest.toFixed(1)} µs/req = ${r.ownCpuUsPerRequest.toFixed(1)} + ${(r.cpuUsPerRequest - r.ownCpuUsPerRequest).toFixed(1)}`;
    log(`window ${w + 1}/${windows}: ${ids[0]} ${split(ra)} (${Math.round(ra.rps)} req/s), ${ids[1]} ${split(rb)} (${Math.round(rb.rps)} req/s), ratio ${(ra.cpuUsPerRequest / rb.cpuUsPerRequest).toFixed(3)}`);
  }
  const sorted = [...ratios].sort((x, y) => x - y);
  process.stdout.write(
    `${scenario.title}: CPU µs/req ${ids[0]} ${median(per[0]).toFixed(1)}, ${ids[1]} ${median(per[1]).toFixed(1)} (medians; server process alone ${median(own[0]).toFixed(1)} and ${median(own[1]).toFixed(1)}, the rest its script processes); ` +
      `${ids[0]} / ${ids[1]} = ${median(ratios).toFixed(3)}x (median of ${windows} paired windows, ${together ? 'together' : 'alternating'}; min ${min(ratios).toFixed(3)}, max ${max(ratios).toFixed(3)}, ` +
      `middle half ${sorted[Math.floor(windows / 4)].toFixed(3)}-${sorted[Math.ceil((3 * windows) / 4) - 1].toFixed(3)})\n`,
  );
  const gcAfter = await gcOf();
  if (gcBefore && gcAfter) {
    for (const n of [0, 1]) {
      const kinds = Object.entries(gcAfter[n].gc).map(([k, v]) => `${k} ${v.n - (gcBefore[n].gc[k]?.n ?? 0)} (${(v.ms - (gcBefore[n].gc[k]?.ms ?? 0)).toFixed(0)} ms)`);
      const ms = Object.entries(gcAfter[n].gc).reduce((t, [k, v]) => t + v.ms - (gcBefore[n].gc[k]?.ms ?? 0), 0);
      process.stdout.write(`GC pauses over the windows, ${ids[n]}: ${kinds.join(', ')}; ${((ms * 1000) / served[n]).toFixed(1)} µs per request (~${Math.round(served[n])} requests); new space ${gcAfter[n].newSpaceMb} MB\n`);
    }
  }
  const rss = (pid) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);
  process.stdout.write(`RSS after the windows (${seedCount} todos seeded): ${ids[0]} ${rss(servers[0].child.pid)} MB, ${ids[1]} ${rss(servers[1].child.pid)} MB\n`);
} finally {
  for (const srv of servers) await stop(srv.child);
  await stopAll();
  closeAgent();
  rmSync(tmpRoot, { recursive: true, force: true });
}
