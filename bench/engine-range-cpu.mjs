// Issue 41: CPU per range query of the embedded engine in one process, without HTTP.
//
//   flock /work/bench.lock node bench/engine-range-cpu.mjs <checkout> <data folder> <objects> <bounds> [rounds] [cacheMb]
//
// Opens the data folder of an app seeded by bench/engine-scale.js (todos with `n` indexed) with
// <checkout>'s built store, then runs `findJson({n: {$gt: x}}, {sort: {n: 1}, limit: 50})` 5,000
// times per round, x drawn (seeded, the same for every checkout) from <bounds> values below
// <objects>. Prints the CPU µs per query of each round (the first warms up), the process's RSS and
// V8's committed heap at the end. Alternate checkouts (main's build, a branch's) in one run, or
// page cache sizes (`cacheMb`, app.json's `embeddedStore.cacheMb`; default: the engine's).
import { readFileSync } from 'node:fs';

const [checkout, dir, count, bounds, rounds] = [process.argv[2], process.argv[3], Number(process.argv[4]), Number(process.argv[5]), Number(process.argv[6] ?? 3)];
const cacheMb = process.argv[7] === undefined ? undefined : Number(process.argv[7]);
const { createEngineStore } = await import(`${checkout}/packages/core/dist/index.js`);
const store = await createEngineStore({ dir, warn: () => {}, cacheMb });
const todos = store.collection('todos');
let seed = 12345;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const xs = Array.from({ length: bounds }, () => Math.floor(random() * (count - 100)));
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 1024;
await todos.findJson({ n: { $gt: 1 } }, { sort: { n: 1 }, limit: 50 });
const perQuery = [];
for (let r = 0; r < rounds; r++) {
  const before = process.cpuUsage();
  const n = 5000;
  for (let i = 0; i < n; i++) await todos.findJson({ n: { $gt: xs[Math.floor(random() * bounds)] } }, { sort: { n: 1 }, limit: 50 });
  const used = process.cpuUsage(before);
  perQuery.push(Number(((used.user + used.system) / n).toFixed(1)));
}
console.log(JSON.stringify({ checkout, count, bounds, cacheMb, usPerQuery: perQuery, rssMb: Math.round(rssMb()), heapMb: Math.round(process.memoryUsage().heapTotal / 1048576) }));
await store.close();
