#!/usr/bin/env node
// Relations, $expand and aggregates (issue 25):
//
//   node bench/relations.js [--rounds 5] [--duration 5] [--warmup 1] [--connections 20] [--events 100000] [--no-build]
//                           [--only list,expand] [--rate <req/s>] [--prof <dir>] [--prof-interval <us>]
//
// --rate sends list, listobjects and expand at that fixed rate (below what expand answers flat out)
// instead of as fast as they are answered: both requests then load the machine alike. (Their
// system CPU per request still differs by more than the bytes: on this machine it grows with the
// server's own work per request, at one rate too; bench/rate-kernel.js measures it.)
//
// --only measures some of the requests (the ratios need theirs); --prof writes the server's V8
// CPU profile (node --cpu-prof) into <dir> (summarise it with bench/profile-summary.js).
//
// One svc server (embedded store, production, pinned to core 0), seeded with 50 authors, 100
// posts pointing at them (a relation), the same 100 posts with the author id in a plain string
// joined by an On Get script (`svc.authors.get(this.authorId)`, what Deployd apps do by hand), and
// `--events` objects with an indexed `kind` (20 values). Every round measures each request in
// turn (order rotated per round) with the harness's HTTP driver (autocannon, pinned to core 1):
//   list        GET /posts?$limit=100                          (the floor: the stored JSON texts joined)
//   listobjects GET /posts?{"$fields":{...all...},"$limit":100} (the same list as objects, stringified)
//   expand      GET /posts?{"$expand":["author"],"$limit":100}
//   ongetjoin   GET /joined?$limit=100                         (On Get joins per object)
//   aggregate   GET /events/aggregate?{"$group":["kind"],"$count":true,"$sum":["amount"]}
// and prints per-request medians and the same-round ratios expand/list and expand/ongetjoin.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './lib/args.js';
import { spawnNode, waitListening, stop, stopAll, freePort, pinning, pinSelf, SVC_NODE_FLAGS } from './lib/procs.js';
import { request, closeAgent } from './lib/http.js';
import { median, rotate } from './lib/stats.js';
import { machine } from './lib/machine.js';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const svcBin = join(repoRoot, 'apps/server/bin/svc.js');
const driver = fileURLToPath(new URL('./lib/drivers/http.js', import.meta.url));
const log = (msg) => process.stderr.write(`${msg}\n`);

const opts = parseArgs(process.argv.slice(2), { rounds: 'number', duration: 'number', warmup: 'number', connections: 'number', events: 'number', build: 'boolean', only: 'string', prof: 'string', 'prof-interval': 'number', rate: 'number' });
const rounds = opts.rounds ?? 5;
const duration = opts.duration ?? 5;
const warmup = opts.warmup ?? 1;
const connections = opts.connections ?? 20;
const eventCount = opts.events ?? 100_000;

const resources = {
  authors: { type: 'Collection', properties: { name: { type: 'string' }, bio: { type: 'string' } } },
  posts: { type: 'Collection', properties: { title: { type: 'string' }, body: { type: 'string' }, author: { type: 'relation', collection: 'authors' } } },
  joined: { type: 'Collection', properties: { title: { type: 'string' }, body: { type: 'string' }, authorId: { type: 'string' } } },
  events: { type: 'Collection', properties: { kind: { type: 'string', index: true }, amount: { type: 'number' } } },
};
const q = (query) => `?${encodeURIComponent(JSON.stringify(query))}`;
const allScenarios = {
  list: { path: `/posts${q({ $limit: 100 })}`, check: (b) => b.length === 100 && typeof b[0].author === 'string' },
  // The same list built as objects and stringified ($fields takes it off the stored-JSON path), as expand must.
  listobjects: { path: `/posts${q({ $fields: { title: 1, body: 1, author: 1 }, $limit: 100 })}`, check: (b) => b.length === 100 && typeof b[0].author === 'string' },
  expand: { path: `/posts${q({ $expand: ['author'], $limit: 100 })}`, check: (b) => b.length === 100 && typeof b[0].author.name === 'string' },
  // 100 script calls per request: few connections, as for the aggregate.
  ongetjoin: { connections: 4, path: `/joined${q({ $limit: 100 })}`, check: (b) => b.length === 100 && typeof b[0].author.name === 'string' },
  // A long request (it reads every object): fewer connections, so the p99 is the work, not the queue.
  aggregate: { connections: 4, path: `/events/aggregate${q({ $group: ['kind'], $count: true, $sum: ['amount'] })}`, check: (b) => b.length === 20 && b.reduce((n, r) => n + r.count, 0) === eventCount },
};
const only = opts.only?.split(',');
const scenarios = Object.fromEntries(Object.entries(allScenarios).filter(([id]) => only === undefined || only.includes(id)));

if (opts.build !== false) {
  log('building the svc packages (turbo, cached when unchanged)...');
  const built = spawnSync('pnpm', ['turbo', 'run', 'build', '--filter', '@svc/server...', '--output-logs=errors-only'], { cwd: repoRoot, stdio: 'inherit' });
  if (built.status !== 0) process.exit(1);
}

const pins = pinning();
if (pins) pinSelf(pins.load);
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-relations-'));
let server;
try {
  const app = join(dir, 'app');
  for (const [name, config] of Object.entries(resources)) {
    mkdirSync(join(app, 'resources', name), { recursive: true });
    writeFileSync(join(app, 'resources', name, 'config.json'), JSON.stringify(config));
  }
  writeFileSync(join(app, 'resources', 'joined', 'get.js'), 'this.author = await svc.authors.get(this.authorId);\n');
  const port = await freePort();
  server = spawnNode([...SVC_NODE_FLAGS, svcBin, app, '--port', String(port), '--env', 'production'], { core: pins?.server, env: { NODE_ENV: 'production', ...(opts.prof ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-interval ${opts['prof-interval'] ?? 1000} --cpu-prof-dir=${opts.prof}` } : {}) } });
  await waitListening(server);
  log('seeding...');
  const post = async (path, body) => {
    const res = await request(port, { method: 'POST', path, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    if (res.status !== 200) throw new Error(`POST ${path}: ${res.status} ${res.body.toString('utf8').slice(0, 200)}`);
    return JSON.parse(res.body.toString('utf8'));
  };
  const authors = [];
  for (let i = 0; i < 50; i++) authors.push(await post('/authors', { name: `author ${i}`, bio: 'x'.repeat(80) }));
  for (let i = 0; i < 100; i++) {
    const author = authors[(i * 7) % 50].id;
    await post('/posts', { title: `post ${i}`, body: 'y'.repeat(200), author });
    await post('/joined', { title: `post ${i}`, body: 'y'.repeat(200), authorId: author });
  }
  let next = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < eventCount) {
        const i = next++;
        await post('/events', { kind: `k${i % 20}`, amount: i % 100 });
      }
    }),
  );
  log(`seeded ${eventCount} events in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const [id, s] of Object.entries(scenarios)) {
    const res = await request(port, { path: s.path });
    const body = JSON.parse(res.body.toString('utf8'));
    if (res.status !== 200 || !s.check(body)) throw new Error(`${id}: unexpected answer ${res.status} ${res.body.toString('utf8').slice(0, 300)}`);
  }

  const results = Object.fromEntries(Object.keys(scenarios).map((id) => [id, []]));
  for (let round = 0; round < rounds; round++) {
    for (const id of rotate(Object.keys(scenarios), round)) {
      const rate = scenarios[id].connections === undefined ? opts.rate : undefined;
      const cfg = { url: `http://127.0.0.1:${port}${scenarios[id].path}`, method: 'GET', headers: {}, connections: scenarios[id].connections ?? connections, warmup, duration, serverPid: server.pid, serverCore: pins?.server ?? null, rate };
      const run = spawnSync(process.execPath, [driver, JSON.stringify(cfg)], { encoding: 'utf8' });
      if (run.status !== 0) throw new Error(`driver failed: ${run.stderr}`);
      const figures = JSON.parse(run.stdout.trim().split('\n').pop());
      if (figures.non2xx > 0 || figures.errors > 0) throw new Error(`${id}: ${figures.non2xx} non-2xx, ${figures.errors} errors`);
      results[id].push(figures);
      log(`round ${round + 1} ${id}: ${figures.rps.toFixed(0)} req/s, p99 ${figures.latencyMs.p99} ms, ${figures.cpuUsPerRequest?.toFixed(0)} us CPU/req (user ${figures.userCpuUsPerRequest?.toFixed(0)} us)`);
    }
  }
  const has = (...ids) => ids.every((id) => results[id] !== undefined);
  const ratio = (a, b) => (has(a, b) ? median(results[a].map((r, i) => r.rps / results[b][i].rps)) : undefined);
  const cpuRatio = (a, b) => (has(a, b) ? median(results[a].map((r, i) => r.cpuUsPerRequest / results[b][i].cpuUsPerRequest)) : undefined);
  const summary = {
    machine: machine(),
    rounds,
    duration,
    connections,
    rate: opts.rate ?? null,
    events: eventCount,
    medians: Object.fromEntries(
      Object.entries(results).map(([id, rs]) => [id, { bytesPerResponse: Math.round(median(rs.map((r) => r.bytes / r.requests))), rps: Math.round(median(rs.map((r) => r.rps))), p50: median(rs.map((r) => r.latencyMs.p50)), p99: median(rs.map((r) => r.latencyMs.p99)), cpuUsPerRequest: Math.round(median(rs.map((r) => r.cpuUsPerRequest))), userCpuUsPerRequest: Math.round(median(rs.map((r) => r.userCpuUsPerRequest))) }]),
    ),
    ratios: {
      'list/expand (req/s, <= 1.5 aimed)': ratio('list', 'expand'),
      'listobjects/expand (req/s)': ratio('listobjects', 'expand'),
      'expand/ongetjoin (req/s, >= 5 aimed)': ratio('expand', 'ongetjoin'),
      'expand/list (CPU per request)': cpuRatio('expand', 'list'),
      'expand/listobjects (CPU per request)': cpuRatio('expand', 'listobjects'),
    },
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} finally {
  if (server) await stop(server);
  await stopAll();
  closeAgent();
  rmSync(dir, { recursive: true, force: true });
}
