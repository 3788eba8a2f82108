// Issue 41: CPU of a `$search` in the embedded engine's store, in one process (no HTTP): two words
// of bench/engine-scale.js's skewed vocabulary, `done: false`, limit 20, through `findJson` (what
// GET /todos answers), over a copy of the data folder that engine-scale.js seeded (1,000,000 todos,
// `title` searchable). Run it with two builds of @svc/core to compare them in one session:
//
//   cp -r <keep>/engine-1000000/data /tmp/copy
//   flock /work/bench.lock node bench/engine-search-cpu.mjs <repo>/packages/core/dist /tmp/copy <label> [searches]
//
// Prints the CPU ms per search (user + system of this process) of `searches` (default 1,000) word
// pairs drawn with a fixed seed (the same pairs for every build), after 100 unmeasured ones: mean,
// p50, p90, p99, max; then three common pairs (best of 5, a filter that differs each time so no
// kept list answers them). Some pairs repeat: a repeated search may be answered by the rows kept
// for it (hotTexts.ts), the same way in every build.
import { loadavg } from 'node:os';

const [dist, dir, label = dist, count = '1000'] = process.argv.slice(2);
if (!dist || !dir) throw new Error('usage: node bench/engine-search-cpu.mjs <core dist> <data folder> [label] [searches]');
const { createEngineStore } = await import(`${dist}/index.js`);
const store = await createEngineStore({ dir, warn: () => {} });
const todos = store.collection('todos');
const V = 2000;
const words = Array.from({ length: V }, (_, k) => `w${k.toString(36)}${'abcdefghij'[k % 10]}`);
let seed = 3;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const word = () => words[Math.floor(V * random() ** 2)];
const pairs = Array.from({ length: Number(count) }, () => [word(), word()]);
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const query = ([a, b], extra = {}) => ({ $search: { words: [...new Set([a, b])], fields: ['title'] }, done: false, ...extra });
for (const p of pairs.slice(0, 100)) await todos.findJson(query(p), { limit: 20 });
const times = [];
for (const p of pairs) {
  const t = cpu();
  await todos.findJson(query(p), { limit: 20 });
  times.push((cpu() - t) / 1000);
}
times.sort((a, b) => a - b);
const at = (f) => times[Math.min(times.length - 1, Math.floor(f * times.length))].toFixed(2);
const common = [];
for (const p of [['w0a', 'w0a'], ['w0a', 'w1b'], ['w2c', 'w3d']]) {
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const t = cpu();
    await todos.findJson(query(p, { n: { $gte: -1 - i - common.length * 10 } }), { limit: 20 });
    best = Math.min(best, (cpu() - t) / 1000);
  }
  common.push(best.toFixed(1));
}
const mean = times.reduce((a, b) => a + b, 0) / times.length;
process.stdout.write(`${label}: load ${loadavg().map((l) => l.toFixed(2)).join(' ')}; CPU ms per search: mean ${mean.toFixed(2)}, p50 ${at(0.5)}, p90 ${at(0.9)}, p99 ${at(0.99)}, max ${at(1)}; w0a w0a / w0a w1b / w2c w3d (best of 5): ${common.join(' / ')}\n`);
await store.close();
