// Issue 41: svc on its embedded engine beside PocketBase (SQLite too), both holding the same
// number of todos (default 1,000,000).
//
//   flock /work/bench.lock node bench/engine-pocketbase.js [--size 1000000] [--rounds 3]
//       [--duration 8] [--warmup 2] [--connections 50] [--pocketbase /tmp/peers/bin/pocketbase-bench]
//       [--keep <dir>] [--seed-only]
//
// Needs `pnpm build` and the PocketBase binary of ../shared/peers (its run-all.sh builds it into
// /tmp/peers/bin/pocketbase-bench: PocketBase 0.36.8, a `todos` collection {title, done, n, tags}
// with public list/view/create rules, request logs off with PB_NO_REQUEST_LOGS=1).
// Data: svc's todos seeded through its store (lib/engineSeed.js); PocketBase started once to make
// its schema, then its `todos` table filled in SQLite directly (node:sqlite, one transaction) with
// the same kind of todos (15-character ids as PocketBase makes them), and an index on `n` made and
// declared in the collection (`_collections.indexes`), as svc's `n` is indexed. Each round starts
// each server in turn (order rotated), pinned to core 0, autocannon on core 1, and runs:
//   a. GET one by id, 100,000 ids at random;
//   b. the indexed list: n > x, sort n, 50 per page, 5,000 bounds at random (PocketBase:
//      filter=n>x&sort=n&perPage=50&skipTotal=1, its documented switch to skip the count);
//   c. count with a filter: done false and n < x, 2,000 bounds x below 10,000 at random (at most
//      1% of the objects: an index narrows it, each one in range is read; PocketBase answers a
//      count as `totalItems` of a list: perPage=1 with the same filter);
//   d. create (POST), last (it grows both stores; each round starts from the same copy).
// Reported: req/s, p99, server CPU µs per request, and the same-round ratios svc / PocketBase
// (req/s: above 1 is svc ahead; CPU: below 1 is svc cheaper), medians over rounds.
// `--keep <dir>`: the data is made in <dir> and kept; data already there (`seeded.json`) is used as
// it is. `--seed-only`: seed and stop (seeding need not hold the bench lock).
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { startEngineBench } from './lib/engineBench.js';
import { freePort, spawnNode, spawnProgram, stop, stopAll, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { runLoad } from './lib/load.js';
import { request, closeAgent } from './lib/http.js';
import { median } from './lib/stats.js';
import { appFolder, q, seedEngine, title } from './lib/engineSeed.js';

const { args, repo, svcBin, log, mach, pin } = startEngineBench({ size: 'number', rounds: 'number', duration: 'number', warmup: 'number', connections: 'number', pocketbase: 'string', keep: 'string', 'seed-only': 'boolean' });
const size = args.size ?? 1_000_000;
const rounds = args.rounds ?? 3;
const duration = args.duration ?? 8;
const warmup = args.warmup ?? 2;
const connections = args.connections ?? 50;
const pbBin = args.pocketbase ?? '/tmp/peers/bin/pocketbase-bench';
if (!existsSync(pbBin)) throw new Error(`no PocketBase binary at ${pbBin} (bash ../shared/peers/run-all.sh builds it)`);

async function waitHttp(port, path, child) {
  const deadline = Date.now() + 600_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`exited: ${child.tail.join('\n')}`);
    const ok = await request(port, { path, timeoutMs: 2000 }).then((r) => r.status === 200, () => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`no answer on ${path}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const servers = {
  svc: {
    async start(dir) {
      const port = await freePort();
      const child = spawnNode([...SVC_NODE_FLAGS, svcBin, dir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { NODE_ENV: 'production' }, cwd: repo });
      await waitListening(child, 600_000);
      return { child, port };
    },
    get: (id) => `/todos/${id}`,
    list: (x) => `/todos?${q({ n: { $gt: x }, $sort: { n: 1 }, $limit: 50 })}`,
    count: (x) => `/todos/count?${q({ done: false, n: { $lt: x } })}`,
    post: '/todos',
    checkList: (body) => (Array.isArray(body) && body.length === 50 ? undefined : 'not 50 objects'),
    checkCount: (body) => (typeof body.count === 'number' ? undefined : 'no count'),
  },
  pocketbase: {
    async start(dir) {
      const port = await freePort();
      const child = spawnProgram(pbBin, ['serve', `--http=127.0.0.1:${port}`, `--dir=${join(dir, 'pb_data')}`], { core: pin?.server, env: { PB_NO_REQUEST_LOGS: '1' } });
      await waitHttp(port, '/api/health', child);
      return { child, port };
    },
    get: (id) => `/api/collections/todos/records/${id}`,
    list: (x) => `/api/collections/todos/records?filter=${encodeURIComponent(`n>${x}`)}&sort=n&perPage=50&skipTotal=1`,
    count: (x) => `/api/collections/todos/records?filter=${encodeURIComponent(`done=false && n<${x}`)}&perPage=1`,
    post: '/api/collections/todos/records',
    checkList: (body) => (body.items?.length === 50 ? undefined : 'not 50 items'),
    checkCount: (body) => (typeof body.totalItems === 'number' ? undefined : 'no totalItems'),
  },
};

/** PocketBase's schema made by a first start, then its todos written in SQLite, with the index on n. */
async function seedPocketBase(dir) {
  const first = await servers.pocketbase.start(dir);
  await stop(first.child);
  const db = new DatabaseSync(join(dir, 'pb_data/data.db'));
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const ids = [];
  const insert = db.prepare('INSERT INTO todos (id, title, done, n, tags) VALUES (?, ?, ?, ?, NULL)');
  db.exec('BEGIN');
  for (let i = 0; i < size; i++) {
    const bytes = randomBytes(15);
    let id = '';
    for (const b of bytes) id += alphabet[b % 36];
    insert.run(id, title(), i % 2 === 0 ? 1 : 0, (i * 7919) % size);
    if (ids.length < 100_000 && Math.random() < 100_000 / size) ids.push(id);
  }
  const index = 'CREATE INDEX `idx_todos_n` ON `todos` (`n`)';
  db.exec(index);
  db.prepare("UPDATE _collections SET indexes = ? WHERE name = 'todos'").run(JSON.stringify([index]));
  db.exec('COMMIT');
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
  return ids;
}

function workloads(server, ids) {
  const pick = (list) => list[Math.floor(Math.random() * list.length)];
  const body = JSON.stringify({ title: 'x', done: false, n: 1 });
  return [
    { id: 'a', title: 'GET one by id (100,000 ids at random)', paths: Array.from({ length: 100_000 }, () => server.get(pick(ids))), check: (b) => (typeof b.id === 'string' ? undefined : 'no id') },
    { id: 'b', title: 'indexed list: n > x, sort n, 50 (5,000 bounds)', paths: Array.from({ length: 5000 }, () => server.list(Math.floor(Math.random() * (size - 100)))), check: server.checkList },
    { id: 'c', title: 'count, done false and n < x, x < 10,000 (2,000 bounds)', paths: Array.from({ length: 2000 }, () => server.count(Math.floor(Math.random() * 10_000))), check: server.checkCount },
    { id: 'd', title: 'create (POST)', post: true, paths: [server.post], body, check: (b) => (typeof b.id === 'string' ? undefined : 'no id') },
  ];
}

async function measure(server, w) {
  const headers = w.post ? { 'content-type': 'application/json' } : {};
  const first = await request(server.port, { method: w.post ? 'POST' : 'GET', path: w.paths[0], headers, body: w.body, timeoutMs: 60_000 });
  const problem = first.status === 200 ? w.check(JSON.parse(first.body.toString('utf8'))) : `${first.status} ${first.body.toString('utf8').slice(0, 200)}`;
  if (problem) throw new Error(`${w.title}: unexpected answer: ${problem}`);
  const file = join(tmpdir(), `svc-engine-pb-${process.pid}-requests.json`);
  if (!w.post) writeFileSync(file, JSON.stringify(w.paths.map((path) => ({ method: 'GET', path, headers }))));
  try {
    const cfg = { url: `http://127.0.0.1:${server.port}${w.paths[0]}`, method: w.post ? 'POST' : 'GET', headers, body: w.body, connections, warmup, duration, serverPid: server.child.pid, serverCore: pin?.server };
    return await runLoad(w.post ? cfg : { ...cfg, requestsFile: file }, pin?.load);
  } finally {
    rmSync(file, { force: true });
  }
}

const root = args.keep ?? mkdtempSync(join(tmpdir(), 'svc-engine-pb-'));
mkdirSync(root, { recursive: true });
const results = { svc: {}, pocketbase: {} };
try {
  const marker = join(root, 'seeded.json');
  const svcApp = join(root, 'svc');
  const pbDir = join(root, 'pocketbase');
  const pristine = { svc: join(root, 'svc-data'), pocketbase: join(root, 'pb_data') };
  let seeded;
  if (existsSync(marker)) {
    seeded = JSON.parse(readFileSync(marker, 'utf8'));
    log(`-- ${size.toLocaleString('en-US')} todos: seeded before (${root})`);
  } else {
    log(`-- ${size.toLocaleString('en-US')} todos: seeding svc's engine and PocketBase`);
    for (const dir of [svcApp, pbDir, ...Object.values(pristine)]) rmSync(dir, { recursive: true, force: true });
    appFolder(root, 'svc', 'sqlite');
    const svcIds = (await seedEngine(svcApp, size)).sample;
    const first = await servers.svc.start(svcApp);
    await stop(first.child);
    mkdirSync(pbDir);
    const pbIds = await seedPocketBase(pbDir);
    cpSync(join(svcApp, 'data'), pristine.svc, { recursive: true });
    cpSync(join(pbDir, 'pb_data'), pristine.pocketbase, { recursive: true });
    seeded = { svc: svcIds, pocketbase: pbIds };
    writeFileSync(marker, JSON.stringify(seeded));
  }
  if (args['seed-only']) process.exit(0);
  const dirs = { svc: svcApp, pocketbase: pbDir };
  const data = { svc: join(svcApp, 'data'), pocketbase: join(pbDir, 'pb_data') };
  const ids = seeded;
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 === 0 ? ['svc', 'pocketbase'] : ['pocketbase', 'svc']) {
      rmSync(data[name], { recursive: true, force: true });
      cpSync(pristine[name], data[name], { recursive: true });
      const server = await servers[name].start(dirs[name]);
      for (const w of workloads(servers[name], ids[name])) {
        const m = await measure(server, w);
        ((results[name][w.id] ??= { title: w.title, runs: [] }).runs)[round] = m;
        log(`   round ${round + 1} ${name} ${w.id}: ${Math.round(m.rps)} req/s, p99 ${m.latencyMs.p99.toFixed(2)} ms, ${m.cpuUsPerRequest?.toFixed(1)} µs CPU/req${m.errors || m.non2xx ? `, ${m.errors} errors, ${m.non2xx} non-2xx` : ''}`);
      }
      await stop(server.child);
    }
  }
} finally {
  closeAgent();
  await stopAll();
  if (!args.keep) rmSync(root, { recursive: true, force: true });
}

const fmt = (n, d = 0) => (typeof n === 'number' ? n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '-');
const lines = [
  `- Command: \`node bench/engine-pocketbase.js --size ${size} --rounds ${rounds} --duration ${duration}\`; ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ${mach.nproc} cores, Node ${process.version}; load average at start ${mach.loadavg?.join(' ') ?? '?'}`,
  '',
  '| scenario | svc req/s | PocketBase req/s | svc / PB req/s | svc p99 ms | PB p99 ms | svc CPU µs/req | PB CPU µs/req | svc / PB CPU |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
];
for (const [id, { title: what, runs }] of Object.entries(results.svc)) {
  const pb = results.pocketbase[id]?.runs ?? [];
  const both = runs.map((m, i) => (m && pb[i] ? [m, pb[i]] : undefined)).filter(Boolean);
  const med = (list, pick) => median(list.filter(Boolean).map(pick));
  lines.push(`| ${id}. ${what} | ${fmt(med(runs, (m) => m.rps))} | ${fmt(med(pb, (m) => m.rps))} | ${fmt(median(both.map(([s, p]) => s.rps / p.rps)), 2)}x | ${fmt(med(runs, (m) => m.latencyMs.p99), 2)} | ${fmt(med(pb, (m) => m.latencyMs.p99), 2)} | ${fmt(med(runs, (m) => m.cpuUsPerRequest), 1)} | ${fmt(med(pb, (m) => m.cpuUsPerRequest), 1)} | ${fmt(median(both.map(([s, p]) => s.cpuUsPerRequest / p.cpuUsPerRequest)), 2)}x |`);
}
process.stdout.write(`${lines.join('\n')}\n`);
