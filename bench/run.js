#!/usr/bin/env node
// svc benchmark harness (pnpm bench). See bench/README.md for the method.
//
//   node bench/run.js [--rounds 5] [--duration 10] [--warmup 2] [--connections 50] [--only list]
//
// For every round, for every scenario (scenarios.js), each variant (variants.js) is measured in
// turn, its order rotated every round (A B C, then B C A, ...): a fresh server process pinned to
// core 0, seeded, one session cookie taken, then the load generator, pinned to core 1, runs for
// the warm-up and the measured window. Figures per variant and the medians of the same-round
// ratios against the scenario's reference go to stdout and to bench/results/<time>.json;
// `node bench/report.js` turns the latest results file into bench/RESULTS.md.
import { mkdtempSync, mkdirSync, cpSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './lib/args.js';
import { headersOf, scenarios, seed as seedSpec } from './scenarios.js';
import { variants, repoRoot } from './variants.js';
import { spawnNode, waitListening, stop, stopAll, killAll, freePort, pinning, pinSelf } from './lib/procs.js';
import { request, startSession, seed, closeAgent } from './lib/http.js';
import { median, min, max, rotate } from './lib/stats.js';
import { machine } from './lib/machine.js';
import { warningsOf, limitOf } from './lib/quality.js';

const HELP = `usage: node bench/run.js [options]
  --rounds N        rounds; each round measures every variant once (default 5, >= 5 for a real run)
  --duration S      measured seconds per variant and round (default 10)
  --warmup S        warm-up seconds before each measured window, discarded (default 2)
  --connections N   concurrent connections, no pipelining (default 50)
  --only LIST       comma-separated scenario ids / suites and variant ids / tags, e.g.
                    --only baseline, --only get-one,svc  (scenarios: ${scenarios.map((s) => s.id).join(', ')};
                    variants: ${Object.keys(variants).join(', ')}; tags: baseline, svc)
  --no-build        do not build the svc packages first (default: turbo build, cached when unchanged)
  --help`;

const log = (msg) => process.stderr.write(`${msg}\n`);

let opts;
try {
  opts = parseArgs(process.argv.slice(2), {
    rounds: 'number', duration: 'number', warmup: 'number', connections: 'number', only: 'string', build: 'boolean', help: 'boolean',
  });
} catch (err) {
  log(`${err.message}\n${HELP}`);
  process.exit(2);
}
if (opts.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
const rounds = Math.max(1, Math.floor(opts.rounds ?? 5));
const duration = opts.duration ?? 10;
const warmup = opts.warmup ?? 2;
const connections = Math.max(1, Math.floor(opts.connections ?? 50));
if (duration <= 0) {
  log('--duration must be > 0');
  process.exit(2);
}

// ---- selection ------------------------------------------------------------------------------------
function select() {
  const tokens = (opts.only ?? '').split(',').map((t) => t.trim()).filter(Boolean);
  const scenarioTokens = [];
  const variantTokens = [];
  for (const t of tokens) {
    const isScenario = scenarios.some((s) => s.id === t || s.suite === t);
    const isVariant = t in variants || Object.values(variants).some((v) => v.tag === t);
    if (!isScenario && !isVariant) {
      log(`--only: unknown name "${t}"\n${HELP}`);
      process.exit(2);
    }
    if (isScenario) scenarioTokens.push(t);
    if (isVariant) variantTokens.push(t);
  }
  const wantScenario = (s) => !scenarioTokens.length || scenarioTokens.some((t) => s.id === t || s.suite === t);
  const wantVariant = (id) => !variantTokens.length || variantTokens.some((t) => id === t || variants[id].tag === t);
  const skipped = [];
  const chosen = [];
  for (const s of scenarios.filter(wantScenario)) {
    const ids = [];
    // A stateful variant named in --only runs in every chosen HTTP scenario, listed there or not
    // (e.g. --only get-one,post,svc,svc-files,svc-no-access,svc-other).
    const named = variantTokens.filter((t) => t in variants && variants[t].stateful && s.suite === 'http' && !s.variants.includes(t));
    for (const id of [...s.variants, ...named].filter(wantVariant)) {
      const why = variants[id].missing();
      if (why === undefined) {
        ids.push(id);
      } else if (variantTokens.includes(id)) {
        log(`cannot run variant ${id}: ${why}`);
        process.exit(2);
      } else if (!skipped.some((x) => x.variant === id)) {
        skipped.push({ variant: id, reason: why });
      }
    }
    if (ids.length) chosen.push({ ...s, run: ids });
  }
  return { chosen, skipped, explicit: variantTokens };
}
const { chosen, skipped, explicit } = select();

// svc runs from its build output (apps/server/dist): build what the chosen variants need first,
// through turbo (a no-op when nothing changed), so that a run never measures stale code.
if (opts.build !== false) {
  const filters = [...new Set(chosen.flatMap((s) => s.run).flatMap((id) => variants[id].build ?? []))];
  if (filters.length) {
    const turbo = join(repoRoot, 'node_modules', '.bin', 'turbo');
    const t0 = Date.now();
    const r = existsSync(turbo)
      ? spawnSync(turbo, ['run', 'build', ...filters.map((f) => `--filter=${f}`), '--output-logs=errors-only'], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' } })
      : { status: 1, stdout: '', stderr: 'node_modules/.bin/turbo is missing: run pnpm install' };
    if (r.status !== 0) {
      const why = `build of ${filters.join(' ')} failed:\n  ${`${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-25).join('\n  ')}`;
      for (const id of Object.keys(variants).filter((v) => variants[v].build)) {
        if (explicit.includes(id) || explicit.includes(variants[id].tag)) {
          log(`cannot run variant ${id}: ${why}`);
          process.exit(2);
        }
        for (const s of chosen) s.run = s.run.filter((v) => v !== id);
        if (!skipped.some((x) => x.variant === id)) skipped.push({ variant: id, reason: why });
      }
      for (let i = chosen.length - 1; i >= 0; i--) if (!chosen[i].run.length) chosen.splice(i, 1);
    } else {
      log(`built ${filters.join(' ')} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    }
  }
}
if (!chosen.length) {
  log('nothing to run');
  process.exit(2);
}

// ---- process hygiene: everything we start is stopped by PID ----------------------------------------
const tmpRoot = mkdtempSync(join(tmpdir(), 'svc-bench-'));
process.on('exit', () => {
  killAll('SIGKILL');
  rmSync(tmpRoot, { recursive: true, force: true });
});
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    log(`\n${sig}: stopping every server and load generator we started`);
    stopAll().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  });
}
process.on('unhandledRejection', (err) => {
  log(`fatal: ${err?.stack ?? err}`);
  process.exit(1);
});

const mach = machine(); // before pinning ourselves: nproc follows this process's CPU affinity
const pin = pinning();
if (pin) pinSelf(pin.load);

// ---- servers ------------------------------------------------------------------------------------
let appCopies = 0;

/** Starts a variant: fresh process, pinned; a stateful one gets a session and the seed data. */
async function startVariant(id, ctxExtra = {}) {
  const variant = variants[id];
  const port = await freePort();
  const ctx = { port, ...ctxExtra };
  if (variant.app) {
    ctx.appDir = join(tmpRoot, `app-${++appCopies}`);
    cpSync(join(repoRoot, variant.app), ctx.appDir, { recursive: true });
  }
  const cmd = variant.command(ctx);
  const child = spawnNode(cmd.args, { core: pin?.server, env: cmd.env, cwd: repoRoot });
  const srv = { id, child, port, appDir: ctx.appDir, cookie: '', state: { ids: [] } };
  try {
    const listening = await waitListening(child);
    if (listening !== port) throw new Error(`listens on ${listening}, was asked for ${port}`);
    if (variant.stateful) {
      srv.cookie = await startSession(port, seedSpec.path);
      srv.state.ids = await seed(port, seedSpec, srv.cookie);
    }
    return srv;
  } catch (err) {
    await stopVariant(srv);
    throw new Error(`${id}: ${err.message}`, { cause: err });
  }
}

async function stopVariant(srv) {
  await stop(srv.child);
  if (srv.appDir) rmSync(srv.appDir, { recursive: true, force: true });
}

const requestOf = (scenario, state, cookie) => ({
  method: scenario.method,
  path: scenario.path(state),
  headers: headersOf(scenario, cookie),
  body: scenario.body,
});

// ---- the bytes the reference (bare) server answers with ----------------------------------------------
// Captured once per run from the byte source: svc when it is in the run, else the hand-written server.
// Read-only scenarios first, then the ones that write.
async function captureResponses() {
  const needs = chosen.filter((s) => s.run.some((id) => !variants[id].stateful));
  const captured = new Map();
  if (!needs.length) return { source: null, captured };
  const sources = chosen.some((s) => s.run.includes('svc')) ? ['svc', 'hand'] : ['hand'];
  for (const source of sources) {
    let srv;
    try {
      srv = await startVariant(source);
      const ordered = [...needs].sort((a, b) => Number(a.method !== 'GET') - Number(b.method !== 'GET'));
      for (const s of ordered) {
        const req = requestOf(s, srv.state, srv.cookie);
        const res = await request(srv.port, req);
        const bad = res.status < 200 || res.status >= 300 ? `status ${res.status}` : s.check(res, srv.state);
        if (bad) throw new Error(`${s.method} ${req.path}: ${bad}`);
        const file = join(tmpRoot, `${s.id}.response`);
        writeFileSync(file, res.body);
        captured.set(s.id, {
          file,
          status: res.status,
          contentType: res.headers['content-type'] ?? 'application/json; charset=utf-8',
          bytes: res.body.length,
          state: srv.state,
          cookie: srv.cookie,
        });
      }
      await stopVariant(srv);
      return { source, captured };
    } catch (err) {
      if (srv) await stopVariant(srv);
      log(`!! could not capture the responses from ${source}: ${err.message}`);
      captured.clear();
    }
  }
  throw new Error('no byte source for the bare server: neither svc nor the hand-written server answered');
}

// ---- one measurement ------------------------------------------------------------------------------
const driverPath = (name) => fileURLToPath(new URL(`./lib/drivers/${name}.js`, import.meta.url));

function runDriver(scenario, cfg) {
  return new Promise((resolve, reject) => {
    const child = spawnNode([driverPath(scenario.driver), JSON.stringify(cfg)], { core: pin?.load, cwd: repoRoot });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    const limitMs = (cfg.warmup + cfg.duration + 60) * 1000;
    const timer = setTimeout(() => {
      log(`!! load generator still running after ${limitMs / 1000}s: killing it`);
      stop(child, 1000);
    }, limitMs);
    child.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop();
      if (code === 0 && line) {
        try {
          return resolve(JSON.parse(line));
        } catch {
          // fall through
        }
      }
      reject(new Error(`load generator failed (${signal ?? `exit ${code}`}):\n  ${child.tail.join('\n  ')}`));
    });
  });
}

async function measure(scenario, id, captured) {
  const variant = variants[id];
  const cap = captured.get(scenario.id);
  const srv = await startVariant(
    id,
    variant.stateful ? {} : { responseFile: cap.file, response: { status: cap.status, contentType: cap.contentType } },
  );
  try {
    // Stateless servers answer captured bytes: same request shape (path, cookie) as the source got.
    const state = variant.stateful ? srv.state : cap.state;
    const cookie = variant.stateful ? srv.cookie : cap.cookie;
    const req = requestOf(scenario, state, cookie);
    const notes = [];
    const res = await request(srv.port, req);
    const bad = res.status < 200 || res.status >= 300 ? `status ${res.status}: ${res.body.toString('utf8').slice(0, 300)}` : scenario.check(res, state);
    if (bad) throw new Error(`${scenario.method} ${req.path} -> ${bad}`);
    if (variant.stateful && !cookie) notes.push('the server set no session cookie');
    if (variant.stateful && cookie && !scenario.noCookie && res.cookies.length) {
      notes.push(`the server sent Set-Cookie (${res.cookies.map((c) => c.split('=')[0]).join(', ')}) although the request had its session cookie`);
    }
    const result = await runDriver(scenario, {
      url: `http://127.0.0.1:${srv.port}${req.path}`,
      method: req.method,
      headers: req.headers,
      body: req.body,
      connections,
      warmup,
      duration,
      serverPid: srv.child.pid,
      serverCore: pin?.server,
    });
    if (srv.child.exitCode !== null || srv.child.signalCode !== null) throw new Error('the server exited during the measurement');
    return { ...result, notes };
  } finally {
    await stopVariant(srv);
  }
}

// ---- formatting ------------------------------------------------------------------------------------
const fmtInt = (n) => (n == null ? '-' : Math.round(n).toLocaleString('en-US'));
const fmt = (n, d = 1) => (n == null ? '-' : n.toFixed(d));
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);

function summarize(scenario, results) {
  const byVariant = scenario.run.map((id) => {
    const rows = results.filter((r) => r.scenario === scenario.id && r.variant === id);
    const ok = rows.filter((r) => !r.error);
    return {
      id,
      title: variants[id].title,
      rounds: rows.length,
      failedRounds: rows.length - ok.length,
      rps: { median: median(ok.map((r) => r.rps)), min: min(ok.map((r) => r.rps)), max: max(ok.map((r) => r.rps)) },
      p50Ms: median(ok.map((r) => r.latencyMs.p50)),
      p99Ms: median(ok.map((r) => r.latencyMs.p99)),
      cpuUsPerRequest: median(ok.map((r) => r.cpuUsPerRequest)),
      serverCores: median(ok.map((r) => r.serverCores)),
      loadgenCores: median(ok.map((r) => r.loadgenCores)),
      otherOnServerCore: median(ok.map((r) => r.otherOnServerCore)),
      non2xx: ok.reduce((a, r) => a + r.non2xx, 0),
      errors: ok.reduce((a, r) => a + r.errors, 0),
      timeouts: ok.reduce((a, r) => a + r.timeouts, 0),
    };
  });
  // What limited the throughput (see lib/quality.js).
  for (const v of byVariant) {
    v.underOneCore = v.serverCores != null && v.serverCores < 0.9;
    v.limit = limitOf(v);
  }
  const ref = scenario.reference;
  const ratio = (id, against) => {
    const rps = [];
    const cpu = [];
    const delta = [];
    for (let r = 0; r < rounds; r++) {
      const a = results.find((x) => x.scenario === scenario.id && x.variant === id && x.round === r && !x.error);
      const b = results.find((x) => x.scenario === scenario.id && x.variant === against && x.round === r && !x.error);
      if (!a || !b) continue;
      rps.push(a.rps / b.rps);
      if (a.cpuUsPerRequest && b.cpuUsPerRequest) {
        cpu.push(a.cpuUsPerRequest / b.cpuUsPerRequest);
        delta.push(a.cpuUsPerRequest - b.cpuUsPerRequest);
      }
    }
    const underOneCore = byVariant.some((v) => (v.id === id || v.id === against) && v.underOneCore);
    return {
      variant: id,
      reference: against,
      rps: { median: median(rps), perRound: rps },
      cpuPerRequest: { median: median(cpu), perRound: cpu },
      cpuDeltaUs: { median: median(delta), perRound: delta },
      judgeBy: underOneCore ? 'cpuPerRequest' : 'rps',
    };
  };
  const ratios = [];
  if (scenario.run.includes(ref)) {
    for (const id of scenario.run.filter((v) => v !== ref)) ratios.push(ratio(id, ref));
  }
  for (const [id, against] of scenario.compare ?? []) {
    if (scenario.run.includes(id) && scenario.run.includes(against)) ratios.push(ratio(id, against));
  }
  return { id: scenario.id, suite: scenario.suite, title: scenario.title, reference: ref, variants: byVariant, ratios };
}

function printTable(summary) {
  const out = [];
  out.push('');
  out.push(`${summary.title}`);
  out.push(
    `  ${pad('variant', 34)}${lpad('req/s', 9)} ${lpad('(min-max)', 17)}${lpad('p50 ms', 8)}${lpad('p99 ms', 8)}${lpad('CPU µs/req', 12)}${lpad('cores', 7)}${lpad('load', 6)}${lpad('other', 7)}${lpad('non-2xx', 9)}${lpad('errors', 8)}  limit`,
  );
  for (const v of summary.variants) {
    const range = v.rps.min == null ? '' : `(${fmtInt(v.rps.min)}-${fmtInt(v.rps.max)})`;
    const flag = v.non2xx || v.errors || v.failedRounds ? '  <-- !!' : '';
    out.push(
      `  ${pad(v.title, 34)}${lpad(fmtInt(v.rps.median), 9)} ${lpad(range, 17)}${lpad(fmt(v.p50Ms, 2), 8)}${lpad(fmt(v.p99Ms, 2), 8)}${lpad(fmt(v.cpuUsPerRequest), 12)}${lpad(fmt(v.serverCores, 2), 7)}${lpad(fmt(v.loadgenCores, 2), 6)}${lpad(fmt(v.otherOnServerCore, 2), 7)}${lpad(v.non2xx, 9)}${lpad(v.errors, 8)}  ${v.limit ?? '-'}${v.underOneCore ? ' (< 0.9 core: judge by CPU µs/req)' : ''}${v.failedRounds ? ` ${v.failedRounds} round(s) failed` : ''}${flag}`,
    );
  }
  for (const r of summary.ratios) {
    const rounds = r.rps.perRound.map((x) => x.toFixed(2)).join(' ');
    out.push(
      `  ${r.variant} / ${r.reference}: req/s x${fmt(r.rps.median, 3)}  CPU µs/req x${fmt(r.cpuPerRequest.median, 3)} (${r.cpuDeltaUs?.median >= 0 ? '+' : ''}${fmt(r.cpuDeltaUs?.median)} µs)  (median of same-round ratios; req/s per round: ${rounds || '-'})${r.judgeBy === 'cpuPerRequest' ? '  judge by CPU µs/req' : ''}`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

// ---- main -----------------------------------------------------------------------------------------
const command = `node bench/run.js ${process.argv.slice(2).join(' ')}`.trim();
const started = new Date();
const measurements = chosen.reduce((a, s) => a + s.run.length, 0) * rounds;
log(`svc bench: ${chosen.length} scenario(s), ${measurements} measurements (${rounds} round(s) x ${warmup}s warm-up + ${duration}s), ~${Math.ceil((measurements * (warmup + duration + 3)) / 60)} min`);
log(`machine: ${mach.nproc} cores, ${mach.cpuModel}, node ${mach.node}; ${pin ? `servers on core ${pin.server}, load generator on core ${pin.load}` : '!! NOT PINNED (taskset missing or < 2 cores)'}`);
for (const s of skipped) log(`!! skipping variant ${s.variant}: ${s.reason}`);
const smoke = rounds < 5 || duration < 10 || warmup < 2;
if (smoke) log('note: fewer than 5 rounds or shorter than 2 s + 10 s: a smoke run, not a measurement');

const { source, captured } = await captureResponses();
if (source) {
  log(`bare server bytes captured from ${source}: ${[...captured].map(([id, c]) => `${id} ${c.bytes} B`).join(', ')}`);
}

const results = [];
for (let round = 0; round < rounds; round++) {
  for (const scenario of chosen) {
    const order = rotate(scenario.run, round);
    for (const [position, id] of order.entries()) {
      if (interrupted) break;
      const tag = `[round ${round + 1}/${rounds}] ${pad(scenario.id, 8)} ${pad(id, 5)}`;
      try {
        const r = await measure(scenario, id, captured);
        results.push({ scenario: scenario.id, variant: id, round, position, ...r });
        const bad = r.non2xx || r.errors ? `  !! ${r.non2xx} non-2xx, ${r.errors} errors` : '';
        log(`${tag} ${lpad(fmtInt(r.rps), 8)} req/s  p50 ${fmt(r.latencyMs.p50, 2)} ms  p99 ${fmt(r.latencyMs.p99, 2)} ms  ${fmt(r.cpuUsPerRequest)} µs/req (server process alone ${fmt(r.ownCpuUsPerRequest)})  server ${fmt(r.serverCores, 2)} / load ${fmt(r.loadgenCores, 2)} / other ${fmt(r.otherOnServerCore, 2)} cores${bad}`);
        for (const n of r.notes) log(`${tag} note: ${n}`);
      } catch (err) {
        if (interrupted) break;
        results.push({ scenario: scenario.id, variant: id, round, position, error: err.message });
        log(`${tag} !! FAILED: ${err.message}`);
      }
    }
  }
}
closeAgent();

const summaries = chosen.map((s) => summarize(s, results));
for (const s of summaries) printTable(s);

const problems = [];
for (const s of summaries) {
  for (const v of s.variants) {
    if (v.non2xx || v.errors || v.timeouts) problems.push(`${s.id}/${v.id}: ${v.non2xx} non-2xx, ${v.errors} errors (${v.timeouts} timeouts)`);
    if (v.failedRounds) problems.push(`${s.id}/${v.id}: ${v.failedRounds} of ${v.rounds} rounds failed`);
  }
}
const notes = [...new Set(results.flatMap((r) => r.notes ?? []))];
const warnings = warningsOf({ summaries, results });

const git = (args) => {
  const r = spawnSync('git', args, { cwd: repoRoot, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : '';
};
const record = {
  version: 1,
  commit: git(['rev-parse', '--short', 'HEAD']) || null,
  dirty: git(['status', '--porcelain', '--untracked-files=no']) !== '',
  suites: [...new Set(chosen.map((s) => s.suite))],
  command,
  startedAt: started.toISOString(),
  finishedAt: new Date().toISOString(),
  options: { rounds, duration, warmup, connections, only: opts.only ?? null, pipelining: 1, smoke },
  machine: mach,
  pinning: pin ?? null,
  byteSource: source ? { variant: source, bytes: Object.fromEntries([...captured].map(([id, c]) => [id, c.bytes])) } : null,
  skipped,
  problems,
  warnings,
  notes,
  summaries,
  results,
};
const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const file = join(resultsDir, `bench-${started.toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);

process.stdout.write(`\nresults: ${file}\n`);
for (const s of skipped) process.stdout.write(`skipped variant ${s.variant}: ${s.reason}\n`);
for (const n of notes) process.stdout.write(`note: ${n}\n`);
for (const w of warnings) process.stdout.write(`!! warning: ${w}\n`);
if (smoke) process.stdout.write('smoke run (fewer than 5 rounds or shorter windows): not a measurement\n');
if (problems.length) {
  process.stdout.write(`\n!!!!!!!! INVALID RUN: non-2xx responses, errors or failed rounds !!!!!!!!\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  process.exitCode = 1;
} else {
  process.stdout.write('update bench/RESULTS.md with: node bench/report.js\n');
}
