// The embedded store at scale (issue 14): 100,000 and 1,000,000 todos.
//
//   node bench/scale.js [--sizes 100000,1000000] [--duration 10] [--warmup 2] [--connections 50] [--no-write]
//
// For each size: an app folder in a temporary directory whose data file is written directly
// (the embedded store's own line format), then svc (production, embedded store) is started twice
// (the first start builds the `n` index and folds it into the file; the second is a restart, the
// figure that matters), pinned to core 0. Measured: time from spawn to `listening on port`, the
// server's RSS, and an indexed query under load: GET /todos?{"n":{"$gt":<half>},"$sort":{"n":1},
// "$limit":50} with autocannon on core 1 (50 connections, no pipelining). Results go to
// bench/results/scale-<date>.json and the "scale" section of bench/RESULTS.md.
// Everything started is stopped by PID; the temporary folders are removed.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { parseArgs } from './lib/args.js';
import { freePort, pinning, pinSelf, spawnNode, stop, stopAll, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { machine } from './lib/machine.js';
import { runLoad } from './lib/load.js';
import { request, startSession, closeAgent } from './lib/http.js';

const args = parseArgs(process.argv.slice(2), { sizes: 'string', duration: 'number', warmup: 'number', connections: 'number', 'no-write': 'boolean' });
const sizes = (args.sizes ?? '100000,1000000').split(',').map(Number);
const duration = args.duration ?? 10;
const warmup = args.warmup ?? 2;
const connections = args.connections ?? 50;
const repo = fileURLToPath(new URL('..', import.meta.url));
const svcBin = join(repo, 'apps/server/bin/svc.js');
const log = (line) => process.stderr.write(`${line}\n`);

for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => stopAll().finally(() => process.exit(130)));
const mach = machine();
const pin = pinning();
if (pin) pinSelf(pin.load);

/** Writes the app folder with `count` todos in the embedded store's data file. */
async function writeApp(count) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-scale-'));
  mkdirSync(join(dir, 'resources/todos'), { recursive: true });
  writeFileSync(join(dir, 'resources/todos/config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, done: { type: 'boolean' }, n: { type: 'number', index: true } } }));
  mkdirSync(join(dir, 'data'));
  const out = createWriteStream(join(dir, 'data/todos.db'));
  const ids = randomBytes(8 * count).toString('hex');
  for (let i = 0; i < count; i++) {
    const line = `{"_id":"${ids.slice(i * 16, i * 16 + 16)}","title":"todo ${i}","done":${i % 2 === 0},"n":${(i * 7919) % count},"__svcSeq":${i + 1}}\n`;
    if (!out.write(line)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  return dir;
}

function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function start(dir) {
  const port = await freePort();
  const started = performance.now();
  const child = spawnNode([...SVC_NODE_FLAGS, svcBin, dir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { NODE_ENV: 'production' }, cwd: repo });
  await waitListening(child, 600_000);
  return { child, port, ms: performance.now() - started };
}

function load(url, headers, serverPid) {
  return runLoad({ url, method: 'GET', headers, connections, warmup, duration, serverPid, serverCore: pin?.server }, pin?.load);
}

const results = [];
for (const count of sizes) {
  log(`-- ${count.toLocaleString('en-US')} todos: writing the data file`);
  const dir = await writeApp(count);
  try {
    const first = await start(dir);
    log(`   first start (builds the n index): ${Math.round(first.ms)} ms`);
    await stop(first.child);
    const second = await start(dir);
    const pid = second.child.pid;
    const rssIdle = rssMb(pid);
    const cookie = await startSession(second.port, '/todos?{"$limit":1}');
    const half = Math.floor(count / 2);
    const path = `/todos?${encodeURIComponent(JSON.stringify({ n: { $gt: half }, $sort: { n: 1 }, $limit: 50 }))}`;
    const check = await request(second.port, { path, headers: { cookie } });
    const page = JSON.parse(check.body.toString('utf8'));
    if (check.status !== 200 || page.length !== 50 || page[0].n !== half + 1) throw new Error(`unexpected answer ${check.status}: ${check.body.toString('utf8').slice(0, 200)}`);
    const countAnswer = await request(second.port, { path: '/todos/count', headers: { cookie } });
    log(`   restart: ${Math.round(second.ms)} ms, RSS ${Math.round(rssIdle)} MB; count answers ${countAnswer.status}`);
    const measured = await load(`http://127.0.0.1:${second.port}${path}`, { cookie }, pid);
    const rssLoaded = rssMb(pid);
    await stop(second.child);
    const row = {
      count,
      firstStartMs: first.ms,
      restartMs: second.ms,
      rssMb: rssLoaded,
      rssPer100kMb: (rssLoaded / count) * 100_000,
      rps: measured.rps,
      p50Ms: measured.latencyMs.p50,
      p99Ms: measured.latencyMs.p99,
      cpuUsPerRequest: measured.cpuUsPerRequest,
      serverCores: measured.serverCores,
      non2xx: measured.non2xx,
      errors: measured.errors,
    };
    results.push(row);
    log(`   indexed $gt + $sort + $limit 50: ${Math.round(row.rps).toLocaleString('en-US')} req/s, p50 ${row.p50Ms.toFixed(2)} ms, p99 ${row.p99Ms.toFixed(2)} ms, ${row.cpuUsPerRequest.toFixed(1)} us CPU/request, RSS ${Math.round(rssLoaded)} MB`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
closeAgent();

const date = new Date().toISOString();
mkdirSync(join(repo, 'bench/results'), { recursive: true });
writeFileSync(join(repo, `bench/results/scale-${date.replace(/[:.]/g, '-')}.json`), JSON.stringify({ date, machine: mach, duration, warmup, connections, results }, null, 2));

const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const section = [
  '<!-- bench:scale:begin -->',
  '## Embedded store at 100,000 and 1,000,000 objects (issue 14)',
  '',
  `- Command: \`node bench/scale.js --sizes ${sizes.join(',')}\`; ${date.slice(0, 19).replace('T', ' ')} UTC; ${mach.nproc} cores, Node ${process.version}; load average at start ${mach.loadavg?.join(' ') ?? '?'}`,
  `- Each size: todos written straight into the data file, svc started twice (the first start builds the \`n\` index; the second is the restart measured), pinned to core 0; autocannon on core 1, ${connections} connections, no pipelining, ${warmup} s warm-up + ${duration} s measured, on \`GET /todos?{"n":{"$gt":<half>},"$sort":{"n":1},"$limit":50}\` (an index walk from the bound). RSS is the server process's after the load.`,
  '',
  '| objects | first start (index built) | restart to listening | RSS | RSS per 100,000 | req/s | p50 ms | p99 ms | server CPU µs/req |',
  '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...results.map((r) => `| ${fmt(r.count)} | ${fmt(r.firstStartMs / 1000, 1)} s | ${fmt(r.restartMs / 1000, 1)} s | ${fmt(r.rssMb)} MB | ${fmt(r.rssPer100kMb)} MB | ${fmt(r.rps)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.cpuUsPerRequest.toFixed(1)} |`),
  '',
  'The embedded store keeps every object in memory and reads the whole data file at start: past a',
  'few hundred thousand objects per collection (start-up in seconds, memory in GB), or with several',
  'server processes, use MongoDB (`--db`).',
  '<!-- bench:scale:end -->',
].join('\n');
if (!args['no-write']) {
  const file = join(repo, 'bench/RESULTS.md');
  const text = readFileSync(file, 'utf8');
  const re = /<!-- bench:scale:begin -->[\s\S]*?<!-- bench:scale:end -->/;
  writeFileSync(file, re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n${section}\n`);
}
process.stdout.write(`${section}\n`);
