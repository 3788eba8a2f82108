#!/usr/bin/env node
// Containment benchmark (issue 10): do hostile event scripts hurt requests that run none?
//
//   node bench/containment.js [--rounds 5] [--duration 10] [--warmup 2] [--connections 50] [--loops 4] [--bombs 6]
//                             [--floods 40] [--recursers 8] [--phases bombs,loops,fairness,budget,recursion] [--bin path/to/svc.js]
//
// One svc server (production, embedded store, pinned to core 0; its script processes inherit the
// pinning, so they compete for the server's core) with a collection without scripts (`items`)
// and one whose On Post loops forever (`loops`). Each round measures, in rotated order:
//   quiet   plain GETs of one item (autocannon on core 1, 50 connections)
//   loops   the same GETs while N clients (a separate process on core 1) repeat POST /loops
//           back to back, each answered 500 after scripts.timeoutMs
// and reports the medians of p50/p99 and of the same-round ratio p99(loops)/p99(quiet) (aim <= 2).
// Before that, the memory phase: clients send POSTs whose On Post grows a dictionary object until V8's
// fatal out-of-memory error ends its script process; the server's RSS and that of all its
// processes are sampled during the bombs and after (aim: back to baseline, never above ~400 MB).
// Issue 21 (item 3), after that:
//   fairness  GETs of `cheap` (a trivial On Get) quiet, and while N clients (--floods, default 40)
//             repeat GET /slow/<id> whose On Get spins 900 ms: the same-round ratio of the cheap
//             script's p99 (aim <= 2: a flood of slow scripts leaves a script process to others)
//   budget    one GET whose On Get does 30 x (800 ms spin + await svc.items.get()): how long until
//             it is answered, and with what (before: ~25 s of script CPU; now scripts.requestCpuMs)
// Issue 22 (item 1), last:
//   recursion a collection `rec` of 3 objects whose On Get reads its own collection
//             (svc.rec.get(function (r, err) { this.more = r; ... })): how long anonymous
//             GET /rec?$limitRecursion=9 takes (the first, with cold scripts, and the median of 5
//             more) and whether the script's callback got Deployd's "Recursive call to GET /rec
//             detected"; then plain GETs of one item quiet and while N
//             clients (--recursers, default 8) repeat that GET: the same-round p99 ratio (aim <= 2)
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { parseArgs } from './lib/args.js';
import { spawnNode, waitListening, stopAll, freePort, pinning, pinSelf, treeOf, SVC_NODE_FLAGS } from './lib/procs.js';
import { median } from './lib/stats.js';

const opts = parseArgs(process.argv.slice(2), { rounds: 'number', duration: 'number', warmup: 'number', connections: 'number', loops: 'number', bombs: 'number', floods: 'number', recursers: 'number', phases: 'string', bin: 'string' });
const phases = new Set((opts.phases ?? 'bombs,loops,fairness,budget,recursion').split(','));
const floodClients = opts.floods ?? 40;
const recurseClients = opts.recursers ?? 8;
const rounds = opts.rounds ?? 5;
const duration = opts.duration ?? 10;
const warmup = opts.warmup ?? 2;
const connections = opts.connections ?? 50;
const loopClients = opts.loops ?? 4;
const bombs = opts.bombs ?? 6;
const log = (m) => process.stderr.write(`${m}\n`);
// --bin: another build's apps/server/bin/svc.js, for a before/after comparison.
const svcBin = opts.bin ?? fileURLToPath(new URL('../apps/server/bin/svc.js', import.meta.url));

function writeApp() {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-containment-'));
  const files = {
    // Two script processes, as on a 2-core machine (the pinned server would count one core).
    'app.json': JSON.stringify({ scripts: { timeoutMs: 1000, memoryLimitMb: 64, isolates: 2 } }),
    'resources/items/config.json': JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' } } }),
    'resources/loops/config.json': JSON.stringify({ type: 'Collection', properties: { n: { type: 'number' } } }),
    'resources/loops/post.js': 'while (true) {}',
    'resources/bombs/config.json': JSON.stringify({ type: 'Collection', properties: { n: { type: 'number' } } }),
    'resources/bombs/post.js': "var o = {}, i = 0; while (true) o['k' + i++] = { a: i, b: 'v' + i };",
    'resources/cheap/config.json': JSON.stringify({ type: 'Collection', properties: { n: { type: 'number' } } }),
    'resources/cheap/get.js': 'this.seen = true;',
    'resources/slow/config.json': JSON.stringify({ type: 'Collection', properties: { n: { type: 'number' } } }),
    'resources/slow/get.js': 'var t = Date.now(); while (Date.now() - t < 900) {}',
    'resources/spinloop/config.json': JSON.stringify({ type: 'Collection', properties: { n: { type: 'number' } } }),
    'resources/spinloop/get.js': 'for (var i = 0; i < 30; i++) { var t = Date.now(); while (Date.now() - t < 800) {} await svc.items.get(); }',
    'resources/rec/config.json': JSON.stringify({ type: 'Collection', properties: { n: { type: 'number' } } }),
    // The callback keeps its error argument, to show Deployd's "Recursive call ... detected" in the answer.
    'resources/rec/get.js': 'svc.rec.get(function (r, err) { this.more = r; if (err) this.err = err; });',
  };
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

/** RSS in MB of `pid` alone and of it with all its descendants. */
function rssOf(pid) {
  const all = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      all.set(Number(name), { ppid: Number(rest[1]), kb });
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  for (const p of treeOf(pid, all)) total += all.get(p)?.kb ?? 0;
  return { server: (all.get(pid)?.kb ?? 0) / 1024, all: total / 1024 };
}

async function post(url, body) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  return res.status;
}

/** Latency percentiles in ms from each response's own time (autocannon's summary rounds to whole ms). */
function percentiles(samples) {
  samples.sort((a, b) => a - b);
  const at = (p) => samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)] ?? 0;
  return { p50: at(50), p99: at(99) };
}

function measure(url, seconds) {
  return new Promise((resolve, reject) => {
    const samples = [];
    const inst = autocannon({ url, connections, pipelining: 1, duration: seconds }, (err, result) => {
      if (err) return reject(err);
      const { p50, p99 } = percentiles(samples);
      resolve({ rps: result.requests.average, p50: Number(p50.toFixed(2)), p99: Number(p99.toFixed(2)), non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts, answered: samples.length });
    });
    inst.on('response', (_client, _status, _bytes, ms) => samples.push(ms));
  });
}

async function main() {
  const pin = pinning();
  if (pin) pinSelf(pin.load);
  const appDir = writeApp();
  const port = await freePort();
  const server = spawnNode([...SVC_NODE_FLAGS, svcBin, appDir, '--port', String(port), '--env', 'production'], {
    core: pin?.server,
    env: { NODE_ENV: 'production' },
  });
  await waitListening(server);
  const base = `http://127.0.0.1:${port}`;
  const res = await fetch(`${base}/items`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': 'x' }, body: '{"title":"plain"}' });
  // Production without keys refuses the root header: create through the public API instead.
  const created = res.status === 200 ? await res.json() : await (await fetch(`${base}/items`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":"plain"}' })).json();
  const url = `${base}/items/${created.id}`;
  log(`containment: server pid ${server.pid} on core ${pin?.server ?? '-'}; ${rounds} rounds x ${duration} s, ${connections} connections, ${loopClients} looping clients`);

  const made = async (resource) => (await (await fetch(`${base}/${resource}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' })).json()).id;
  const summary = { date: new Date().toISOString(), rounds, duration, connections };
  if (phases.has('bombs')) summary.bombs = await bombPhase(base, server, url);
  if (phases.has('loops')) Object.assign(summary, await loopPhase(base, url));
  if (phases.has('fairness')) summary.fairness = await fairnessPhase(base, await made('cheap'), await made('slow'));
  if (phases.has('budget')) summary.budget = await budgetPhase(base, await made('spinloop'));
  if (phases.has('recursion')) {
    for (let i = 0; i < 3; i++) await made('rec');
    summary.recursion = await recursionPhase(base, url);
  }
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

async function bombPhase(base, server, url) {
  // Memory bombs first, on a fresh server (the GET rounds grow its RSS by themselves): RSS sampled
  // every 100 ms while they run, then 3 s after.
  const before = rssOf(server.pid);
  let peak = { server: 0, all: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const now = rssOf(server.pid);
      peak = { server: Math.max(peak.server, now.server), all: Math.max(peak.all, now.all) };
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const statuses = [];
  for (let i = 0; i < bombs; i++) statuses.push(await post(`${base}/bombs`, { n: i }));
  await new Promise((r) => setTimeout(r, 3000));
  sampling = false;
  await sampler;
  const after = rssOf(server.pid);
  const alive = (await fetch(url)).status;
  log(`memory bombs: ${statuses.join(' ')}; RSS server ${before.server.toFixed(0)} -> peak ${peak.server.toFixed(0)} -> ${after.server.toFixed(0)} MB; with script processes ${before.all.toFixed(0)} -> peak ${peak.all.toFixed(0)} -> ${after.all.toFixed(0)} MB; server answers ${alive}`);
  return { count: bombs, statuses, rssMb: { before, peak, after }, serverAnswersAfter: alive };
}

async function loopPhase(base, url) {
  const rows = { quiet: [], loops: [] };
  const ratios = [];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['quiet', 'loops'] : ['loops', 'quiet'];
    const got = {};
    for (const variant of order) {
      let stop = false;
      let looped = 0;
      const loopers =
        variant === 'loops'
          ? Array.from({ length: loopClients }, async () => {
              while (!stop) {
                const status = await post(`${base}/loops`, { n: 1 });
                if (status === 500) looped++;
              }
            })
          : [];
      if (variant === 'loops') await new Promise((r) => setTimeout(r, 300));
      if (warmup > 0) await measure(url, warmup);
      const r = await measure(url, duration);
      stop = true;
      await Promise.all(loopers);
      got[variant] = { ...r, looped };
      rows[variant].push(got[variant]);
      log(`  round ${round + 1} ${variant.padEnd(5)} ${Math.round(r.rps)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  non2xx ${r.non2xx}  errors ${r.errors}${variant === 'loops' ? `  (${looped} loop requests answered 500)` : ''}`);
    }
    ratios.push(got.loops.p99 / Math.max(got.quiet.p99, 1));
  }

  const summary = {
    loopClients,
    quiet: { rps: median(rows.quiet.map((r) => r.rps)), p50: median(rows.quiet.map((r) => r.p50)), p99: median(rows.quiet.map((r) => r.p99)) },
    loops: { rps: median(rows.loops.map((r) => r.rps)), p50: median(rows.loops.map((r) => r.p50)), p99: median(rows.loops.map((r) => r.p99)) },
    p99Ratio: { median: median(ratios), perRound: ratios },
  };
  log(`containment: p99 with loops / without = x${summary.p99Ratio.median.toFixed(2)} (median of same-round ratios; aim <= 2)`);
  return summary;
}

/** A cheap On Get of one resource, quiet and while one client floods another resource's slow On Get. */
async function fairnessPhase(base, cheapId, slowId) {
  const url = `${base}/cheap/${cheapId}`;
  const rows = { quiet: [], flood: [] };
  const ratios = [];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['quiet', 'flood'] : ['flood', 'quiet'];
    const got = {};
    for (const variant of order) {
      let stop = false;
      const statuses = new Map();
      const flooders =
        variant === 'flood'
          ? Array.from({ length: floodClients }, async () => {
              while (!stop) {
                const res = await fetch(`${base}/slow/${slowId}`);
                await res.arrayBuffer();
                statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
              }
            })
          : [];
      if (variant === 'flood') await new Promise((r) => setTimeout(r, 1000));
      if (warmup > 0) await measure(url, warmup);
      const r = await measure(url, duration);
      stop = true;
      await Promise.all(flooders);
      got[variant] = { ...r, slowStatuses: Object.fromEntries(statuses) };
      rows[variant].push(got[variant]);
      log(`  fairness round ${round + 1} ${variant.padEnd(5)} cheap: ${Math.round(r.rps)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  non2xx ${r.non2xx}  answered ${r.answered}  timeouts ${r.timeouts}${variant === 'flood' ? `  slow answers ${JSON.stringify(got[variant].slowStatuses)}` : ''}`);
    }
    // No cheap answer at all in the window (they all waited behind slow runs): no ratio to take.
    ratios.push(got.flood.answered === 0 ? Infinity : got.flood.p99 / Math.max(got.quiet.p99, 1));
  }
  const summary = {
    floodClients,
    quiet: { rps: median(rows.quiet.map((r) => r.rps)), p50: median(rows.quiet.map((r) => r.p50)), p99: median(rows.quiet.map((r) => r.p99)) },
    flood: { rps: median(rows.flood.map((r) => r.rps)), p50: median(rows.flood.map((r) => r.p50)), p99: median(rows.flood.map((r) => r.p99)) },
    p99Ratio: { median: median(ratios), perRound: ratios },
  };
  log(`fairness: cheap script p99 while ${floodClients} clients flood a 900 ms On Get / quiet = x${summary.p99Ratio.median.toFixed(2)} (median of same-round ratios; aim <= 2)`);
  return summary;
}

/** One request whose script spins 800 ms between internal calls, 30 times. */
async function budgetPhase(base, id) {
  const started = performance.now();
  const res = await fetch(`${base}/spinloop/${id}`);
  const body = await res.text();
  const ms = Math.round(performance.now() - started);
  log(`budget: 30 x (800 ms spin + await svc.items.get()) answered ${res.status} after ${ms} ms: ${body.slice(0, 120)}`);
  return { status: res.status, ms, body: body.slice(0, 200) };
}

/** One anonymous GET /rec?$limitRecursion=9 (On Get reads rec itself), then item GETs quiet and while clients repeat it. */
async function recursionPhase(base, url) {
  const recUrl = `${base}/rec?$limitRecursion=9`;
  const once = async () => {
    const started = performance.now();
    const res = await fetch(recUrl);
    const body = await res.text();
    return { status: res.status, ms: Math.round(performance.now() - started), body };
  };
  const first = await once();
  const more = [];
  for (let i = 0; i < 5; i++) more.push(await once());
  const { status, body } = first;
  const ms = first.ms;
  const warmMs = median(more.map((r) => r.ms));
  const deploydError = body.includes('Recursive call to GET /rec detected');
  log(`recursion: GET /rec?$limitRecursion=9 answered ${status} after ${ms} ms (first), ${warmMs} ms (median of 5 more: ${more.map((r) => `${r.status}/${r.ms}`).join(' ')}), ${body.length} bytes; Deployd's error in the callback: ${deploydError}`);
  const rows = { quiet: [], recursing: [] };
  const ratios = [];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['quiet', 'recursing'] : ['recursing', 'quiet'];
    const got = {};
    for (const variant of order) {
      let stop = false;
      const statuses = new Map();
      const recursers =
        variant === 'recursing'
          ? Array.from({ length: recurseClients }, async () => {
              while (!stop) {
                const r = await fetch(recUrl);
                await r.arrayBuffer();
                statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
              }
            })
          : [];
      if (variant === 'recursing') await new Promise((r) => setTimeout(r, 300));
      if (warmup > 0) await measure(url, warmup);
      const r = await measure(url, duration);
      stop = true;
      await Promise.all(recursers);
      got[variant] = { ...r, recStatuses: Object.fromEntries(statuses) };
      rows[variant].push(got[variant]);
      log(`  recursion round ${round + 1} ${variant.padEnd(9)} items: ${Math.round(r.rps)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  non2xx ${r.non2xx}${variant === 'recursing' ? `  rec answers ${JSON.stringify(got[variant].recStatuses)}` : ''}`);
    }
    ratios.push(got.recursing.p99 / Math.max(got.quiet.p99, 1));
  }
  const summary = {
    single: { status, firstMs: ms, warmMedianMs: warmMs, bytes: body.length, deploydError },
    recurseClients,
    quiet: { rps: median(rows.quiet.map((r) => r.rps)), p50: median(rows.quiet.map((r) => r.p50)), p99: median(rows.quiet.map((r) => r.p99)) },
    recursing: { rps: median(rows.recursing.map((r) => r.rps)), p50: median(rows.recursing.map((r) => r.p50)), p99: median(rows.recursing.map((r) => r.p99)) },
    p99Ratio: { median: median(ratios), perRound: ratios },
  };
  log(`recursion: item GET p99 while ${recurseClients} clients repeat GET /rec?$limitRecursion=9 / quiet = x${summary.p99Ratio.median.toFixed(2)} (median of same-round ratios; aim <= 2)`);
  return summary;
}

try {
  await main();
} finally {
  await stopAll();
}
