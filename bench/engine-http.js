// Issue 41: the embedded engine (SQLite) against the old embedded store over HTTP, at a given size.
//
//   flock /work/bench.lock node bench/engine-http.js [--size 100000] [--rounds 3] [--duration 8]
//       [--warmup 2] [--connections 50] [--only get-one,post,...] [--profile <dir>]
//
// One data file of `size` todos in the old store's line format (as bench/scale.js writes it) is
// copied into two app folders, one per store (app.json embeddedStore.engine "files" / "sqlite";
// the engine's first start converts it). Each is started once to build the `n` index (and, for
// the engine, to convert), then its data folder is kept aside; every round starts each server in
// turn (order rotated) on a fresh copy of it, pinned to core 0, and runs every scenario with
// autocannon on core 1, POST last (so every read, in every round, sees the same `size` objects:
// the first version of this script let the POSTs of earlier rounds grow the stores, which each
// grew by its own req/s, and the old store's unsorted list and count then took 20-900 ms a
// request and stopped answering). Measured per scenario: req/s, p99 and the server's CPU µs per
// request; the ratios engine / files are taken within a round, and their median over rounds is
// reported. A scenario that fails (the server stops answering) is reported as such, not fatal.
// `--profile <dir>` runs the engine's server with --cpu-prof into <dir> (one round is enough).
import { copyFileSync, cpSync, createWriteStream, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { parseArgs } from './lib/args.js';
import { freePort, pinning, pinSelf, spawnNode, stop, stopAll, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { machine } from './lib/machine.js';
import { runLoad } from './lib/load.js';
import { request, startSession, closeAgent } from './lib/http.js';
import { median } from './lib/stats.js';

const args = parseArgs(process.argv.slice(2), { size: 'number', rounds: 'number', duration: 'number', warmup: 'number', connections: 'number', only: 'string', profile: 'string' });
const size = args.size ?? 100_000;
const rounds = args.rounds ?? 3;
const duration = args.duration ?? 8;
const warmup = args.warmup ?? 2;
const connections = args.connections ?? 50;
const repo = fileURLToPath(new URL('..', import.meta.url));
const svcBin = join(repo, 'apps/server/bin/svc.js');
const log = (line) => process.stderr.write(`${line}\n`);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => stopAll().finally(() => process.exit(130)));
const mach = machine();
const pin = pinning();
if (pin) pinSelf(pin.load);

const q = (query) => encodeURIComponent(JSON.stringify(query));
const half = Math.floor(size / 2);
const scenarios = [
  { id: 'get-one', title: 'GET /todos/<id>', path: (s) => `/todos/${s.id}` },
  { id: 'get-filter-sort', title: 'GET done=false, sort n, limit 100', path: () => `/todos?${q({ done: false, $sort: { n: 1 }, $limit: 100 })}` },
  { id: 'range', title: 'GET n > half, sort n, limit 50 (indexed)', path: () => `/todos?${q({ n: { $gt: half }, $sort: { n: 1 }, $limit: 50 })}` },
  { id: 'list-100', title: 'GET /todos?$limit=100 (insertion order)', path: () => `/todos?${q({ $limit: 100 })}` },
  { id: 'in-ids', title: 'GET id $in 20 ids', path: (s) => `/todos?${q({ id: { $in: s.ids } })}` },
  { id: 'count-indexed', title: 'GET /todos/count n < 1000 (indexed)', path: () => `/todos/count?${q({ n: { $lt: 1000 } })}` },
  // The same requests with a value drawn from many at random: what a request costs when no list
  // kept from an earlier one answers it (the engine keeps 256 lists; the ids' texts fit in its 4 MB).
  // (At most ~100 KB of paths: they travel in the load generator's argv.)
  { id: 'get-random', title: 'GET /todos/<id>, 3,000 ids at random', path: (s) => `/todos/${s.randomIds[0]}`, paths: (s) => s.randomIds.map((id) => `/todos/${id}`) },
  { id: 'range-random', title: 'GET n > x, sort n, limit 50, 800 bounds at random', path: () => `/todos?${q({ n: { $gt: 7 }, $sort: { n: 1 }, $limit: 50 })}`, paths: () => Array.from({ length: 800 }, (_, i) => `/todos?${q({ n: { $gt: (i * 48_271) % size }, $sort: { n: 1 }, $limit: 50 })}`) },
  // Last: it grows the store (each round starts again from the same copy, see above).
  { id: 'post', title: 'POST /todos', method: 'POST', path: () => '/todos', body: '{"title":"x","done":false}' },
].filter((s) => !args.only || args.only.split(',').includes(s.id));

/** The data file of `count` todos, in the old store's line format. */
async function writeData(file, count) {
  const out = createWriteStream(file);
  const ids = randomBytes(8 * count).toString('hex');
  for (let i = 0; i < count; i++) {
    const line = `{"_id":"${ids.slice(i * 16, i * 16 + 16)}","title":"todo ${i}","done":${i % 2 === 0},"n":${(i * 7919) % count},"__svcSeq":${i + 1}}\n`;
    if (!out.write(line)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  const at = (i) => ids.slice(i * 16, i * 16 + 16);
  return { mid: at(half), some: Array.from({ length: 20 }, (_, k) => at(k * 977)), randomIds: Array.from({ length: 3000 }, () => at(Math.floor(Math.random() * count))) };
}

function writeApp(root, engine, data) {
  const dir = join(root, engine);
  mkdirSync(join(dir, 'resources/todos'), { recursive: true });
  writeFileSync(join(dir, 'resources/todos/config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, done: { type: 'boolean' }, n: { type: 'number', index: true } } }));
  writeFileSync(join(dir, 'app.json'), JSON.stringify({ embeddedStore: { engine }, publicCount: true, log: { access: false } }));
  mkdirSync(join(dir, 'data'));
  copyFileSync(data, join(dir, 'data/todos.db'));
  return dir;
}

async function start(dir, profile) {
  const port = await freePort();
  const started = performance.now();
  const prof = profile ? ['--cpu-prof', '--cpu-prof-dir', profile] : [];
  const child = spawnNode([...prof, ...SVC_NODE_FLAGS, svcBin, dir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { NODE_ENV: 'production' }, cwd: repo });
  await waitListening(child, 900_000);
  return { child, port, ms: performance.now() - started };
}

const root = mkdtempSync(join(tmpdir(), 'svc-engine-http-'));
const results = { files: {}, sqlite: {} };
const failures = { files: {}, sqlite: {} };
try {
  log(`-- ${size.toLocaleString('en-US')} todos: writing the data file`);
  const state = await writeData(join(root, 'todos.db'), size);
  const apps = { files: writeApp(root, 'files', join(root, 'todos.db')), sqlite: writeApp(root, 'sqlite', join(root, 'todos.db')) };
  for (const engine of ['files', 'sqlite']) {
    const first = await start(apps[engine]);
    log(`   ${engine}: first start ${Math.round(first.ms)} ms`);
    await stop(first.child);
    renameSync(join(apps[engine], 'data'), join(root, `${engine}-data`));
  }
  const order = ['files', 'sqlite'];
  for (let round = 0; round < rounds; round++) {
    for (const engine of round % 2 === 0 ? order : [...order].reverse()) {
      rmSync(join(apps[engine], 'data'), { recursive: true, force: true });
      cpSync(join(root, `${engine}-data`), join(apps[engine], 'data'), { recursive: true });
      const server = await start(apps[engine], engine === 'sqlite' ? args.profile : undefined);
      log(`   round ${round + 1} ${engine}: started in ${Math.round(server.ms)} ms`);
      const cookie = await startSession(server.port, '/todos?{"$limit":1}');
      for (const s of scenarios) {
        const path = s.path({ id: state.mid, ids: state.some, randomIds: state.randomIds });
        const paths = s.paths?.({ randomIds: state.randomIds });
        const check = await request(server.port, { method: s.method ?? 'GET', path, headers: { cookie, ...(s.body ? { 'content-type': 'application/json' } : {}) }, body: s.body }).catch((err) => ({ status: 0, body: Buffer.from(String(err)) }));
        if (check.status !== 200) {
          log(`   round ${round + 1} ${engine} ${s.id}: FAILED before the load: ${check.status} ${check.body.toString('utf8').slice(0, 200)}`);
          (failures[engine][s.id] ??= []).push(round + 1);
          continue;
        }
        const m = await runLoad({ url: `http://127.0.0.1:${server.port}${path}`, ...(paths ? { paths } : {}), method: s.method ?? 'GET', headers: { cookie, ...(s.body ? { 'content-type': 'application/json' } : {}) }, body: s.body, connections, warmup, duration, serverPid: server.child.pid, serverCore: pin?.server }, pin?.load);
        if (m.errors > 0 || m.non2xx > 0) (failures[engine][s.id] ??= []).push(round + 1);
        ((results[engine][s.id] ??= []))[round] = m;
        log(`   round ${round + 1} ${engine} ${s.id}: ${Math.round(m.rps)} req/s, p99 ${m.latencyMs.p99?.toFixed(2)} ms, ${m.cpuUsPerRequest?.toFixed(1)} µs CPU/req${m.errors || m.non2xx ? `, ${m.errors} errors, ${m.non2xx} non-2xx` : ''}`);
      }
      await stop(server.child);
    }
  }
} finally {
  closeAgent();
  await stopAll();
  rmSync(root, { recursive: true, force: true });
}

const fmt = (n, d = 1) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const date = new Date().toISOString();
const lines = [
  `- Command: \`node bench/engine-http.js --size ${size} --rounds ${rounds} --duration ${duration}\`; ${date.slice(0, 16).replace('T', ' ')} UTC; ${mach.nproc} cores, Node ${process.version}; load average at start ${mach.loadavg?.join(' ') ?? '?'}`,
  '',
  '| request | files CPU µs/req | engine CPU µs/req | engine / files (median of rounds) | files req/s | engine req/s | files p99 ms | engine p99 ms |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
];
for (const s of scenarios) {
  const f = results.files[s.id] ?? [];
  const e = results.sqlite[s.id] ?? [];
  const ratios = f.map((m, i) => (m && e[i] ? e[i].cpuUsPerRequest / m.cpuUsPerRequest : undefined)).filter((r) => Number.isFinite(r));
  const med = (list, pick) => median(list.filter(Boolean).map(pick).filter((x) => typeof x === 'number'));
  const num = (n, d = 1) => (typeof n === 'number' ? fmt(n, d) : '?');
  lines.push(`| ${s.title} | ${num(med(f, (m) => m.cpuUsPerRequest))} | ${num(med(e, (m) => m.cpuUsPerRequest))} | ${num(median(ratios), 3)}x | ${num(med(f, (m) => m.rps), 0)} | ${num(med(e, (m) => m.rps), 0)} | ${num(med(f, (m) => m.latencyMs.p99), 2)} | ${num(med(e, (m) => m.latencyMs.p99), 2)} |`);
}
for (const engine of ['files', 'sqlite']) {
  for (const [id, list] of Object.entries(failures[engine])) lines.push(`- ${engine} ${id}: errors, non-2xx answers or no answer in round(s) ${list.join(', ')}`);
}
process.stdout.write(`${lines.join('\n')}\n`);
