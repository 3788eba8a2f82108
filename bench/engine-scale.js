// Issue 41: the embedded engine (SQLite) at scale: 1,000,000 and 10,000,000 todos.
//
//   flock /work/bench.lock node bench/engine-scale.js [--sizes 1000000[,10000000]] [--duration 10]
//       [--warmup 2] [--connections 50] [--files] [--keep <dir>] [--seed-only] [--only <loads>]
//       [--server-args "<node flags>"] [--driver autocannon|wrk] [--bare]
//
// Needs `pnpm build`. For each size, an app folder in a temporary directory: todos {title, done, n}
// with `n` indexed and `title` searchable, seeded through the store directly (createEngineStore,
// insertMany in batches: the HTTP path would take hours at 10,000,000), in this process. Titles
// are 5 words of a 2,000-word vocabulary drawn with a skew (word k about as often as 1/sqrt(k)), so
// a two-word query matches from a few objects to tens of thousands. Then svc (production) is
// started twice, pinned to core 0: the first start declares the index and the search table (both
// already made: nothing to do), the second is the restart measured (spawn to `listening on port`).
// Under load (autocannon on core 1, 50 connections, no pipelining), one after the other:
//   - GET /todos/<id>, 100,000 picks at random of 100,000 ids (~63,000 distinct: more than the
//     16 MiB of texts the engine keeps, ~28,000 of these);
//   - the indexed range query of bench/scale.js: n > size/2, sort n, limit 50 (the same bound each
//     time, as the scale table measured it), then with 5,000 bounds at random;
//   - search: {$search: "<two words>", done: false, $limit: 20}, 2,000 word pairs at random, at 50
//     connections and at 1 (p99 at 50 connections is mostly the queue: 50 requests ahead of each);
//   - count with a filter: /todos/count?{done: false, n: {$lt: <x>}}, 2,000 bounds x below 10,000.
// The server's RSS is read after the restart and after the loads. `--files`: the old embedded
// store ("files", everything in memory) on the same todos (its data file written directly) for
// the GET by id and range rows, at sizes up to 1,000,000 (10,000,000 would need ~20 GB of memory),
// so that the ratios are of one run. `--keep <dir>`: the app folders are made in <dir> and kept,
// and those already there (seeded by an earlier run: `seeded.json`) are used as they are;
// `--seed-only` seeds them and stops (so that seeding, minutes of CPU, need not hold the bench lock).
// `--driver wrk`: the loads by wrk (Debian's package, C) instead of autocannon. autocannon spends
// ~16 µs of its own per answer on its one thread, so when 50 answers come in one burst the last is
// timed up to ~0.8 ms late: its p99 at 50 connections is partly its own. `--bare`: beside GET by id,
// the baseline of the same run: bench/servers/bare-http.js answering the first todo's bytes, pinned
// and loaded the same way (what node:http itself costs and waits at 50 connections).
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startEngineBench } from './lib/engineBench.js';
import { freePort, spawnNode, stop, stopAll, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { runLoad } from './lib/load.js';
import { request, startSession, closeAgent } from './lib/http.js';
import { appFolder, q, seedEngine, title, word } from './lib/engineSeed.js';

const { args, repo, svcBin, log, mach, pin } = startEngineBench({ sizes: 'string', duration: 'number', warmup: 'number', connections: 'number', files: 'boolean', keep: 'string', 'seed-only': 'boolean', only: 'string', 'server-args': 'string', driver: 'string', bare: 'boolean' });
/** `--only getRandom,rangeRandom`: those loads only (the keys of workloads()); `--server-args "--max-semi-space-size=8"`: node flags of the server. */
const only = args.only?.split(',');
const serverArgs = args['server-args']?.split(' ').filter(Boolean) ?? [];
const sizes = (args.sizes ?? '1000000').split(',').map(Number);
const duration = args.duration ?? 10;
const warmup = args.warmup ?? 2;
const connections = args.connections ?? 50;
const driver = args.driver ?? 'autocannon';
if (!['autocannon', 'wrk'].includes(driver)) throw new Error('--driver: autocannon or wrk');

/** The old store's data file (its line format, as bench/scale.js writes it), with the same ids. */
async function writeOldFile(dir, count, ids) {
  mkdirSync(join(dir, 'data'), { recursive: true });
  const out = createWriteStream(join(dir, 'data/todos.db'));
  const extra = randomBytes(8 * count).toString('hex');
  for (let i = 0; i < count; i++) {
    const id = i < ids.length ? ids[i] : extra.slice(i * 16, i * 16 + 16);
    const line = `{"_id":"${id}","title":"${title()}","done":${i % 2 === 0},"n":${(i * 7919) % count},"__svcSeq":${i + 1}}\n`;
    if (!out.write(line)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
}

function rssMb(pid) {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

function folderMb(dir) {
  let bytes = 0;
  for (const name of ['store.sqlite', 'store.sqlite-wal', 'todos.db']) {
    try {
      bytes += statSync(join(dir, 'data', name)).size;
    } catch {
      // not there
    }
  }
  return bytes / 2 ** 20;
}

async function start(dir) {
  const port = await freePort();
  const started = performance.now();
  const child = spawnNode([...SVC_NODE_FLAGS, ...serverArgs, svcBin, dir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { NODE_ENV: 'production' }, cwd: repo });
  await waitListening(child, 1_800_000);
  return { child, port, ms: performance.now() - started };
}

/** One load on `requests` (paths, one at random per request), after a check of the first. */
async function measure(server, cookie, name, paths, check, conns = connections) {
  const first = await request(server.port, { path: paths[0], headers: { cookie }, timeoutMs: 60_000 });
  const problem = first.status === 200 ? check?.(JSON.parse(first.body.toString('utf8'))) : `${first.status} ${first.body.toString('utf8').slice(0, 200)}`;
  if (problem) throw new Error(`${name}: unexpected answer: ${problem}`);
  const file = join(tmpdir(), `svc-engine-scale-${process.pid}-requests.json`);
  writeFileSync(file, JSON.stringify(paths.map((path) => ({ method: 'GET', path, headers: { cookie } }))));
  try {
    const m = await runLoad({ url: `http://127.0.0.1:${server.port}${paths[0]}`, requestsFile: file, method: 'GET', headers: { cookie }, connections: conns, warmup, duration, serverPid: server.child.pid, serverCore: pin?.server, driver }, pin?.load);
    log(`   ${name}: ${Math.round(m.rps)} req/s, p50 ${m.latencyMs.p50.toFixed(2)} ms, p99 ${m.latencyMs.p99.toFixed(2)} ms, ${m.cpuUsPerRequest?.toFixed(1)} µs CPU/req${m.errors || m.non2xx ? `, ${m.errors} errors, ${m.non2xx} non-2xx` : ''}`);
    return { ...m, driver };
  } finally {
    rmSync(file, { force: true });
  }
}

/** The baseline: bare node:http answering `body` (the first GET by id's bytes) to every request, loaded as svc was. */
async function measureBare(body, paths) {
  const file = join(tmpdir(), `svc-engine-scale-${process.pid}-bare.json`);
  writeFileSync(file, body);
  const port = await freePort();
  const child = spawnNode([join(repo, 'bench/servers/bare-http.js'), '--port', String(port), '--body-file', file], { core: pin?.server, cwd: repo });
  try {
    await waitListening(child);
    const m = await measure({ port, child }, '', 'bare node:http, the same bytes', paths);
    return { title: 'bare node:http answering the same bytes (the baseline, same paths and driver)', ...m };
  } finally {
    await stop(child);
    rmSync(file, { force: true });
  }
}

function workloads(count, ids) {
  const half = Math.floor(count / 2);
  const pick = (list) => list[Math.floor(Math.random() * list.length)];
  return {
    getRandom: ['GET /todos/<id>, 100,000 ids at random', Array.from({ length: 100_000 }, () => `/todos/${pick(ids)}`), (doc) => (typeof doc.id === 'string' ? undefined : 'no id')],
    range: [`GET n > ${half.toLocaleString('en-US')}, sort n, limit 50`, [`/todos?${q({ n: { $gt: half }, $sort: { n: 1 }, $limit: 50 })}`], (page) => (page.length === 50 && page[0].n === half + 1 ? undefined : `first n ${page[0]?.n}`)],
    rangeRandom: ['GET n > x, sort n, limit 50, 5,000 bounds at random', Array.from({ length: 5000 }, () => `/todos?${q({ n: { $gt: Math.floor(Math.random() * (count - 100)) }, $sort: { n: 1 }, $limit: 50 })}`), (page) => (page.length === 50 ? undefined : `${page.length} objects`)],
    search: ['GET $search two words, done false, limit 20, 2,000 pairs at random (50 connections)', Array.from({ length: 2000 }, () => `/todos?${q({ $search: `${word()} ${word()}`, done: false, $limit: 20 })}`), (page) => (Array.isArray(page) ? undefined : 'not a list')],
    searchOne: ['the same searches, 1 connection (one at a time: the time of a search without a queue)', 'search', 1],
    count: ['GET /todos/count done false, n < x, x < 10,000, 2,000 bounds at random', Array.from({ length: 2000 }, () => `/todos/count?${q({ done: false, n: { $lt: Math.floor(Math.random() * 10_000) } })}`), (answer) => (typeof answer.count === 'number' ? undefined : 'no count')],
  };
}

const rows = [];
const root = args.keep ?? mkdtempSync(join(tmpdir(), 'svc-engine-scale-'));
mkdirSync(root, { recursive: true });
try {
  for (const count of sizes) {
    const name = count.toLocaleString('en-US');
    const dir = join(root, `engine-${count}`);
    const marker = join(dir, 'seeded.json');
    let seeded;
    if (existsSync(marker)) {
      seeded = JSON.parse(readFileSync(marker, 'utf8'));
      log(`-- ${name} todos: the engine's app folder seeded before (${dir})`);
    } else {
      log(`-- ${name} todos: seeding the engine through the store`);
      rmSync(dir, { recursive: true, force: true });
      appFolder(root, `engine-${count}`, 'sqlite');
      seeded = await seedEngine(dir, count);
      writeFileSync(marker, JSON.stringify(seeded));
      log(`   seeded in ${seeded.seconds.toFixed(0)} s; ${Math.round(folderMb(dir))} MB on disk`);
    }
    if (args['seed-only']) continue;
    const first = await start(dir);
    log(`   first start ${Math.round(first.ms)} ms`);
    await stop(first.child);
    const server = await start(dir);
    const row = { count, store: 'engine', seedSeconds: seeded.seconds, diskMb: folderMb(dir), firstStartMs: first.ms, restartMs: server.ms, rssStartMb: rssMb(server.child.pid), loads: {} };
    log(`   restart ${Math.round(server.ms)} ms, RSS ${Math.round(row.rssStartMb)} MB`);
    const cookie = await startSession(server.port, '/todos?{"$limit":1}');
    const all = workloads(count, seeded.sample);
    for (const [key, [title, paths, check]] of Object.entries(all)) {
      if (only !== undefined && !only.includes(key)) continue;
      // A string: [title, the workload whose requests it sends, its connections].
      const load = typeof paths === 'string' ? measure(server, cookie, title, all[paths][1], all[paths][2], check) : measure(server, cookie, title, paths, check);
      row.loads[key] = { title, ...(await load), rssAfterMb: rssMb(server.child.pid) };
      log(`   RSS after it ${Math.round(row.loads[key].rssAfterMb)} MB`);
      // The baseline answers the bytes svc answers to the first of the same paths.
      if (key === 'getRandom' && args.bare) row.loads.bare = await measureBare((await request(server.port, { path: paths[0], headers: { cookie } })).body, paths);
    }
    row.rssMb = rssMb(server.child.pid);
    log(`   RSS after the loads ${Math.round(row.rssMb)} MB`);
    await stop(server.child);
    rows.push(row);
    if (args.files && count <= 1_000_000) {
      log(`-- ${name} todos: the old store (files)`);
      const old = join(root, `files-${count}`);
      rmSync(old, { recursive: true, force: true });
      appFolder(root, `files-${count}`, 'files');
      await writeOldFile(old, count, seeded.sample);
      const oldFirst = await start(old);
      log(`   first start ${Math.round(oldFirst.ms)} ms`);
      await stop(oldFirst.child);
      const oldServer = await start(old);
      const oldRow = { count, store: 'files', diskMb: folderMb(old), firstStartMs: oldFirst.ms, restartMs: oldServer.ms, rssStartMb: rssMb(oldServer.child.pid), loads: {} };
      log(`   restart ${Math.round(oldServer.ms)} ms, RSS ${Math.round(oldRow.rssStartMb)} MB`);
      const oldCookie = await startSession(oldServer.port, '/todos?{"$limit":1}');
      const all = workloads(count, seeded.sample);
      for (const key of ['getRandom', 'range', 'rangeRandom']) {
        const [title, paths, check] = all[key];
        oldRow.loads[key] = { title, ...(await measure(oldServer, oldCookie, title, paths, check)) };
      }
      oldRow.rssMb = rssMb(oldServer.child.pid);
      await stop(oldServer.child);
      rows.push(oldRow);
      if (!args.keep) rmSync(old, { recursive: true, force: true });
    }
    if (!args.keep) rmSync(dir, { recursive: true, force: true });
  }
} finally {
  closeAgent();
  await stopAll();
  if (!args.keep) rmSync(root, { recursive: true, force: true });
}

const date = new Date().toISOString();
mkdirSync(join(repo, 'bench/results'), { recursive: true });
writeFileSync(join(repo, `bench/results/engine-scale-${date.replace(/[:.]/g, '-')}.json`), JSON.stringify({ date, machine: mach, duration, warmup, connections, rows }, null, 2));
const fmt = (n, d = 0) => (typeof n === 'number' ? n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '-');
const lines = [
  `- Command: \`node bench/engine-scale.js --sizes ${sizes.join(',')}${args.files ? ' --files' : ''}${args.bare ? ' --bare' : ''} --driver ${driver}\`; ${date.slice(0, 16).replace('T', ' ')} UTC; ${mach.nproc} cores, Node ${process.version}; load average at start ${mach.loadavg?.join(' ') ?? '?'}`,
  '',
  '| objects | store | on disk | restart to listening | RSS after start / after the loads |',
  '|---:|---|---:|---:|---:|',
  ...rows.map((r) => `| ${fmt(r.count)} | ${r.store} | ${fmt(r.diskMb)} MB | ${fmt(r.restartMs)} ms | ${fmt(r.rssStartMb)} / ${fmt(r.rssMb)} MB |`),
  '',
  '| objects | store | request | req/s | p50 ms | p99 ms | server CPU µs/req |',
  '|---:|---|---|---:|---:|---:|---:|',
];
for (const r of rows) {
  for (const m of Object.values(r.loads)) lines.push(`| ${fmt(r.count)} | ${r.store} | ${m.title} | ${fmt(m.rps)} | ${fmt(m.latencyMs.p50, 2)} | ${fmt(m.latencyMs.p99, 2)} | ${fmt(m.cpuUsPerRequest, 1)} |${m.errors || m.non2xx ? ` ${m.errors} errors, ${m.non2xx} non-2xx` : ''}`);
}
process.stdout.write(`${lines.join('\n')}\n`);
