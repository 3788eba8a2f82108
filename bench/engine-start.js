// Issue 41: does a start of svc on the embedded engine cost more with more objects? Starts svc
// (production, pinned to core 0) on a large app folder of bench/engine-scale.js and on a small one
// (the same app, `--small` todos), alternately, and reports the medians of spawn-to-`listening`
// and the server's CPU at that moment, and their ratio per round (so the machine's load, which
// stretches both alike, is taken out).
//
//   node bench/engine-scale.js --sizes 1000000 --keep <dir> --seed-only      (once, outside the lock)
//   flock /work/bench.lock node bench/engine-start.js --keep <dir> [--size 1000000] [--small 1000]
//       [--rounds 7] [--cpu-prof <dir>] [--other <checkout>]
//
// `--other <checkout>`: each round also starts the large app with another checkout's built svc
// (e.g. /work/main), for a before/after ratio of one run (the same database file: same format).
// `--cpu-prof <dir>`: the large app's starts also write a V8 CPU profile there (--cpu-prof; the
// server is stopped with SIGINT once listening, so the profile covers the start and nothing more).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEngineBench } from './lib/engineBench.js';
import { cpuSeconds, freePort, spawnNode, stop, stopAll, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { appFolder, seedEngine } from './lib/engineSeed.js';

const { args, repo, svcBin, log, mach, pin } = startEngineBench({ keep: 'string', size: 'number', small: 'number', rounds: 'number', 'cpu-prof': 'string', other: 'string' });
if (!args.keep) throw new Error('--keep <dir>: the folder where bench/engine-scale.js --keep seeded the large app');
const size = args.size ?? 1_000_000;
const small = args.small ?? 1000;
const rounds = args.rounds ?? 7;

const large = join(args.keep, `engine-${size}`);
if (!existsSync(join(large, 'seeded.json'))) throw new Error(`${large} is not seeded: run bench/engine-scale.js --sizes ${size} --keep ${args.keep} --seed-only first`);
const smallDir = join(args.keep, `engine-${small}`);
if (!existsSync(join(smallDir, 'seeded.json'))) {
  appFolder(args.keep, `engine-${small}`, 'sqlite');
  writeFileSync(join(smallDir, 'seeded.json'), JSON.stringify(await seedEngine(smallDir, small)));
}

async function start(dir, prof, bin = svcBin) {
  const port = await freePort();
  const started = performance.now();
  const flags = prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : [];
  const child = spawnNode([...SVC_NODE_FLAGS, ...flags, bin, dir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { NODE_ENV: 'production' }, cwd: repo });
  await waitListening(child, 600_000);
  const ms = performance.now() - started;
  const cpuMs = cpuSeconds(child.pid) * 1000;
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  await stop(child);
  return { ms, cpuMs, rss };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = { large: [], small: [], other: [] };
const otherBin = args.other ? join(args.other, 'apps/server/bin/svc.js') : undefined;
try {
  // A first start of each (declares what is already declared), not counted.
  await start(large);
  await start(smallDir);
  if (args['cpu-prof']) mkdirSync(args['cpu-prof'], { recursive: true });
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['large', 'small', 'other'] : ['other', 'small', 'large'];
    for (const which of order) {
      if (which === 'other' && otherBin === undefined) continue;
      const r = which === 'other' ? await start(large, undefined, otherBin) : await start(which === 'large' ? large : smallDir, which === 'large' ? args['cpu-prof'] : undefined);
      results[which].push(r);
      log(`round ${round + 1} ${which}: ${Math.round(r.ms)} ms to listening, ${Math.round(r.cpuMs)} ms CPU, RSS ${Math.round(r.rss)} MB`);
    }
  }
} finally {
  await stopAll();
}
const ratio = (key, of = results.small) => median(results.large.map((r, i) => r[key] / of[i][key]));
const row = (name, rs) => `| ${name} | ${fmt(median(rs.map((r) => r.ms)))} | ${fmt(median(rs.map((r) => r.cpuMs)))} | ${fmt(median(rs.map((r) => r.rss)))} |`;
const fmt = (n) => Math.round(n).toLocaleString('en-US');
process.stdout.write(
  [
    `- Command: \`node bench/engine-start.js --size ${size} --small ${small} --rounds ${rounds}\`; ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ${mach.nproc} cores, Node ${process.version}; load average at start ${mach.loadavg?.join(' ') ?? '?'}`,
    '',
    `| app | spawn to listening (median ms) | CPU at listening (median ms) | RSS at listening (median MB) |`,
    '|---|---:|---:|---:|',
    `| ${size.toLocaleString('en-US')} todos | ${fmt(median(results.large.map((r) => r.ms)))} | ${fmt(median(results.large.map((r) => r.cpuMs)))} | ${fmt(median(results.large.map((r) => r.rss)))} |`,
    `| ${small.toLocaleString('en-US')} todos | ${fmt(median(results.small.map((r) => r.ms)))} | ${fmt(median(results.small.map((r) => r.cpuMs)))} | ${fmt(median(results.small.map((r) => r.rss)))} |`,
    `| large / small (median of same-round ratios) | ${ratio('ms').toFixed(2)}x | ${ratio('cpuMs').toFixed(2)}x | ${ratio('rss').toFixed(2)}x |`,
    ...(otherBin === undefined
      ? []
      : [row(`${size.toLocaleString('en-US')} todos, ${args.other}`, results.other), `| this / ${args.other} (median of same-round ratios) | ${ratio('ms', results.other).toFixed(2)}x | ${ratio('cpuMs', results.other).toFixed(2)}x | ${ratio('rss', results.other).toFixed(2)}x |`]),
    '',
  ].join('\n'),
);
