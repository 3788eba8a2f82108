// Issue 41: where the server's memory goes at 1,000,000 todos, by part, under engine-scale.js's loads.
//
//   flock /work/bench.lock node bench/engine-memory.js <app folder seeded by engine-scale.js --keep>
//       [--min-requests 20000] [--trim] [--server-args "--max-semi-space-size=32"] [--duration 10]
//
// Starts svc (the launcher's node flags, plus `--server-args`) with bench/lib/memProbe.mjs preloaded,
// then GET by id at 100,000 random ids, the range n > count/2 (sort n, limit 50), and ranges at
// 5,000 random bounds, 50 connections, `duration` s each after 2 s of warm-up; `--min-requests`
// repeats the random ranges until about that many were answered (a loaded machine answers fewer
// in a window, and the young generation grows with the requests: compare runs at like counts).
// After each load it prints the server's memory by part (memProbe.mjs says what each part is);
// `--trim` then calls glibc's malloc_trim(0) in the server through gdb (what fragmentation holds:
// the RSS it gives back). The page cache is the app.json's (`embeddedStore.cacheMb`).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEngineBench } from './lib/engineBench.js';
import { freePort, spawnNode, stop, stopAll, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { runLoad } from './lib/load.js';
import { startSession, closeAgent } from './lib/http.js';
import { q } from './lib/engineSeed.js';

const { args, repo, svcBin, log, pin } = startEngineBench({ 'server-args': 'string', duration: 'number', trim: 'boolean', 'min-requests': 'number' });
const dir = args._[0];
if (!dir) throw new Error('usage: node bench/engine-memory.js <app folder> [--min-requests N] [--trim] [--server-args "..."]');
const seeded = JSON.parse(readFileSync(join(dir, 'seeded.json'), 'utf8'));
const count = Number(/engine-(\d+)\/?$/.exec(dir)?.[1] ?? 1_000_000);
const duration = args.duration ?? 10;
const minRequests = args['min-requests'] ?? 0;
const probeDir = mkdtempSync(join(tmpdir(), 'svc-engine-memory-'));
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

const port = await freePort();
const serverArgs = args['server-args']?.split(' ').filter(Boolean) ?? [];
const child = spawnNode([...SVC_NODE_FLAGS, '--import', join(repo, 'bench/lib/memProbe.mjs'), ...serverArgs, svcBin, dir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { NODE_ENV: 'production', MEMPROBE_DIR: probeDir }, cwd: repo });
try {
  await waitListening(child, 600_000);
  const pid = child.pid;
  log(`server ${pid} listening, RSS ${rssMb(pid).toFixed(0)} MB; node flags ${[...SVC_NODE_FLAGS, ...serverArgs].join(' ')}`);
  const cookie = await startSession(port, '/todos?{"$limit":1}');
  const pick = (list) => list[Math.floor(Math.random() * list.length)];
  const loads = {
    getRandom: Array.from({ length: 100_000 }, () => `/todos/${pick(seeded.sample)}`),
    range: [`/todos?${q({ n: { $gt: Math.floor(count / 2) }, $sort: { n: 1 }, $limit: 50 })}`],
    rangeRandom: Array.from({ length: 5000 }, () => `/todos?${q({ n: { $gt: Math.floor(Math.random() * (count - 100)) }, $sort: { n: 1 }, $limit: 50 })}`),
  };
  /** Asks the probe for a sample now and prints it. */
  const parts = async (why) => {
    process.kill(pid, 'SIGUSR2');
    await new Promise((resolve) => setTimeout(resolve, 300));
    log(`   ${why}: ${readFileSync(join(probeDir, `mem-${pid}.jsonl`), 'utf8').trim().split('\n').at(-1)}`);
  };
  let ranges = 0;
  for (let i = 0; i < 3 || (ranges < minRequests && i < 50); i++) {
    const key = Object.keys(loads)[Math.min(i, 2)];
    const file = join(probeDir, 'requests.json');
    writeFileSync(file, JSON.stringify(loads[key].map((path) => ({ method: 'GET', path, headers: { cookie } }))));
    const m = await runLoad({ url: `http://127.0.0.1:${port}${loads[key][0]}`, requestsFile: file, method: 'GET', headers: { cookie }, connections: 50, warmup: 2, duration, serverPid: pid, serverCore: pin?.server }, pin?.load);
    if (key === 'rangeRandom') ranges += m.rps * (duration + 2);
    log(`${key}: ${Math.round(m.rps)} req/s, p99 ${m.latencyMs.p99.toFixed(2)} ms, ${m.cpuUsPerRequest?.toFixed(1)} µs CPU/req; RSS ${rssMb(pid).toFixed(0)} MB`);
    await parts(`after it (~${Math.round(ranges)} random ranges so far)`);
  }
  if (args.trim) {
    const out = execFileSync('gdb', ['-p', String(pid), '-batch', '-ex', 'call (int)malloc_trim(0)'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    log(`malloc_trim(0): ${out.split('\n').filter((l) => l.startsWith('$')).join(' ')}; RSS ${rssMb(pid).toFixed(0)} MB`);
    await parts('after malloc_trim');
  }
} finally {
  await stop(child);
  closeAgent();
  await stopAll();
  rmSync(probeDir, { recursive: true, force: true });
}
