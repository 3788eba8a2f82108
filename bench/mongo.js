// svc's own cost on the MongoDB path (issue 14): svc --db against a hand-written node:http server
// doing the same queries with the official driver (servers/hand-mongo.js), on the same database.
// The database (FerretDB here, bounding throughput at a few hundred to a few thousand req/s) is
// the same for both, so the node process's CPU per request is what is compared; the database's
// own time is in the latency and req/s.
//
//   SVC_TEST_MONGODB_URL=mongodb://127.0.0.1:27117/ node bench/mongo.js [--rounds 3] [--duration 8] [--connections 10]
//
// Skipped (exit 0, said on stderr) without SVC_TEST_MONGODB_URL. Writes bench/results/mongo-<date>.json
// and the "mongo" section of bench/RESULTS.md. Stops what it starts by PID; drops its database.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { parseArgs } from './lib/args.js';
import { freePort, pinning, pinSelf, spawnNode, stop, stopAll, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { machine } from './lib/machine.js';
import { runLoad } from './lib/load.js';
import { request, seed, startSession, closeAgent } from './lib/http.js';
import { median } from './lib/stats.js';
import { seed as seedSpec } from './scenarios.js';

const args = parseArgs(process.argv.slice(2), { rounds: 'number', duration: 'number', warmup: 'number', connections: 'number', 'no-write': 'boolean' });
const base = process.env.SVC_TEST_MONGODB_URL;
if (!base) {
  process.stderr.write('SKIPPED bench/mongo.js: set SVC_TEST_MONGODB_URL (a MongoDB or FerretDB URL) to measure the MongoDB path\n');
  process.exit(0);
}
const rounds = args.rounds ?? 3;
const duration = args.duration ?? 8;
const warmup = args.warmup ?? 2;
const connections = args.connections ?? 10;
const repo = fileURLToPath(new URL('..', import.meta.url));
const svcBin = join(repo, 'apps/server/bin/svc.js');
const log = (line) => process.stderr.write(`${line}\n`);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => stopAll().finally(() => process.exit(130)));
const mach = machine();
const pin = pinning();
if (pin) pinSelf(pin.load);

const dbName = `svcbench_${process.pid}`;
const url = `${base.replace(/\/[^/]*$/, '')}/${dbName}`;
const appDir = mkdtempSync(join(tmpdir(), 'svc-mongo-bench-'));
cpSync(join(repo, 'bench/app'), appDir, { recursive: true });

const variants = {
  svc: (port) => [...SVC_NODE_FLAGS, svcBin, appDir, '--port', String(port), '--env', 'production', '--db', url],
  driver: (port) => [fileURLToPath(new URL('./servers/hand-mongo.js', import.meta.url)), '--port', String(port), '--db', url],
};

async function start(id) {
  const port = await freePort();
  const child = spawnNode(variants[id](port), { core: pin?.server, env: { NODE_ENV: 'production' }, cwd: repo });
  await waitListening(child, 60_000);
  return { child, port };
}

function load(target, headers, serverPid) {
  return runLoad({ url: target, method: 'GET', headers, connections, warmup, duration, serverPid, serverCore: pin?.server }, pin?.load);
}

const results = [];
let ids;
try {
  // Seed through svc: the same objects (and ids) for both.
  {
    const srv = await start('svc');
    const cookie = await startSession(srv.port, '/todos?{"$limit":1}');
    ids = await seed(srv.port, seedSpec, cookie);
    await stop(srv.child);
  }
  const scenarios = {
    'get-one': `/todos/${ids[Math.floor(ids.length / 2)]}`,
    'get-filter-sort': `/todos?${encodeURIComponent(JSON.stringify({ done: false, $sort: { n: 1 }, $limit: 100 }))}`,
  };
  for (let round = 0; round < rounds; round++) {
    for (const [scenario, path] of Object.entries(scenarios)) {
      const order = round % 2 === 0 ? ['svc', 'driver'] : ['driver', 'svc'];
      const bodies = {};
      for (const id of order) {
        const srv = await start(id);
        try {
          const cookie = await startSession(srv.port, '/todos?{"$limit":1}');
          const check = await request(srv.port, { path, headers: { cookie } });
          if (check.status !== 200) throw new Error(`${id} ${path}: ${check.status} ${check.body.toString('utf8').slice(0, 200)}`);
          bodies[id] = check.body.toString('utf8');
          const m = await load(`http://127.0.0.1:${srv.port}${path}`, { cookie }, srv.child.pid);
          results.push({ round, scenario, variant: id, rps: m.rps, p50Ms: m.latencyMs.p50, p99Ms: m.latencyMs.p99, cpuUsPerRequest: m.cpuUsPerRequest, serverCores: m.serverCores, non2xx: m.non2xx, errors: m.errors });
          log(`round ${round + 1} ${scenario} ${id}: ${Math.round(m.rps)} req/s, ${m.cpuUsPerRequest.toFixed(1)} us CPU/request (node process), p99 ${m.latencyMs.p99.toFixed(2)} ms`);
        } finally {
          await stop(srv.child);
        }
      }
      if (bodies.svc !== bodies.driver) log(`!! ${scenario}: svc and the driver server answered different bytes (${bodies.svc.length} vs ${bodies.driver.length})`);
    }
  }
} finally {
  closeAgent();
  rmSync(appDir, { recursive: true, force: true });
  const client = new MongoClient(url);
  await client.db().dropDatabase().catch(() => undefined);
  await client.close();
}

const date = new Date().toISOString();
mkdirSync(join(repo, 'bench/results'), { recursive: true });
writeFileSync(join(repo, `bench/results/mongo-${date.replace(/[:.]/g, '-')}.json`), JSON.stringify({ date, machine: mach, rounds, duration, warmup, connections, results }, null, 2));

const signed = (n) => `${n >= 0 ? '+' : ''}${n.toFixed(1)}`;
const rows = [];
for (const scenario of ['get-one', 'get-filter-sort']) {
  const of = (variant, key) => median(results.filter((r) => r.scenario === scenario && r.variant === variant).map((r) => r[key]));
  const deltas = [];
  for (let round = 0; round < rounds; round++) {
    const a = results.find((r) => r.scenario === scenario && r.variant === 'svc' && r.round === round);
    const b = results.find((r) => r.scenario === scenario && r.variant === 'driver' && r.round === round);
    if (a && b) deltas.push({ diff: a.cpuUsPerRequest - b.cpuUsPerRequest, ratio: a.cpuUsPerRequest / b.cpuUsPerRequest });
  }
  rows.push(
    `| ${scenario === 'get-one' ? 'GET /todos/<id>' : 'GET /todos done=false, sort n, limit 100'} | ${Math.round(of('driver', 'rps')).toLocaleString('en-US')} | ${Math.round(of('svc', 'rps')).toLocaleString('en-US')} | ${of('driver', 'cpuUsPerRequest').toFixed(1)} | ${of('svc', 'cpuUsPerRequest').toFixed(1)} | ${signed(median(deltas.map((d) => d.diff)))} (${median(deltas.map((d) => d.ratio)).toFixed(2)}x) | ${of('driver', 'p99Ms').toFixed(1)} / ${of('svc', 'p99Ms').toFixed(1)} |`,
  );
}
const section = [
  '<!-- bench:mongo:begin -->',
  '## MongoDB path: svc over the raw driver, same queries, same database (issue 14)',
  '',
  `- Command: \`node bench/mongo.js --rounds ${rounds}\` against ${base.includes('27117') || base.includes('ferret') ? 'FerretDB v1.24.0 (SQLite)' : 'the database at SVC_TEST_MONGODB_URL'}; ${date.slice(0, 19).replace('T', ' ')} UTC; ${mach.nproc} cores, Node ${process.version}; load average at start ${mach.loadavg.join(' ')}`,
  `- 1,000 todos seeded through svc; each round starts svc (\`--db\`, production) and \`bench/servers/hand-mongo.js\` (node:http + the official driver, the same find/findOne, objects re-keyed as svc answers them) in alternating order, pinned to core 0 (the database is not pinned); autocannon on core 1, ${connections} connections, ${warmup} s warm-up + ${duration} s measured. Medians of ${rounds} rounds; the difference is of the same-round pairs.`,
  '- The database bounds req/s for both; the node process\'s CPU per request is what svc adds.',
  '',
  '| request | driver req/s | svc req/s | driver CPU µs/req | svc CPU µs/req | svc\'s own cost | p99 ms driver / svc |',
  '|---|---:|---:|---:|---:|---:|---:|',
  ...rows,
  '<!-- bench:mongo:end -->',
].join('\n');
if (!args['no-write']) {
  const file = join(repo, 'bench/RESULTS.md');
  const text = readFileSync(file, 'utf8');
  const re = /<!-- bench:mongo:begin -->[\s\S]*?<!-- bench:mongo:end -->/;
  writeFileSync(file, re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n${section}\n`);
}
process.stdout.write(`${section}\n`);
