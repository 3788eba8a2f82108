// Store micro-benchmark: GET /<c>/aggregate's store part on the embedded store, 100,000 objects,
// 20 groups by an indexed property with a count and a sum (node bench/aggregate-embedded.mjs
// [repo root]; needs pnpm build). Prints the median of 15 runs: no filter, and a filter on the index.
const root = process.argv[2] ?? new URL('..', import.meta.url).pathname;
const { createEmbeddedStore } = await import(`${root}/packages/core/dist/index.js`);
const { mkdtempSync, rmSync } = await import('node:fs');
const { tmpdir } = await import('node:os');
const { join } = await import('node:path');
const dir = mkdtempSync(join(tmpdir(), 'svc-aggregate-bench-'));
const store = await createEmbeddedStore({ dir });
const c = store.collection('events');
await c.ensureIndex({ field: 'kind' });
// 16 writers at a time: the store commits the waiting inserts together.
await Promise.all(Array.from({ length: 16 }, async (_, w) => {
  for (let i = w; i < 100_000; i += 16) await c.insert({ id: `e${String(i).padStart(15, '0')}`, kind: `k${i % 20}`, amount: i % 100 });
}));
const spec = { group: ['kind'], count: true, sum: ['amount'], avg: [], min: [], max: [], limit: 1001, timeoutMs: 5000, maxScanned: 1_000_000 };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = async (filter) => {
  const ms = [];
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now();
    await c.aggregate(filter, spec);
    ms.push(performance.now() - t0);
  }
  return median(ms).toFixed(1);
};
console.log(`100,000 objects, 20 groups: no filter ${await time({})} ms | {kind: "k3"} (index, 5,000 objects) ${await time({ kind: 'k3' })} ms`);
await store.close();
rmSync(dir, { recursive: true, force: true });
