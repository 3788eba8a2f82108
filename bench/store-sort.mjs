// Store micro-benchmark: sorted find() on the embedded store, 1,000 objects (node bench/store-sort.mjs <repo root>; needs pnpm build).
const root = process.argv[2] ?? new URL('..', import.meta.url).pathname;
const { createEmbeddedStore } = await import(`${root}/packages/core/dist/index.js`);
const { mkdtempSync, rmSync } = await import('node:fs');
const { tmpdir } = await import('node:os');
const { join } = await import('node:path');
const dir = mkdtempSync(join(tmpdir(), 'svc-sort-bench-'));
const store = await createEmbeddedStore({ dir });
const c = store.collection('todos');
for (let i = 0; i < 1000; i++) await c.insert({ id: Math.random().toString(16).slice(2, 18).padEnd(16, '0'), title: 'todo number ' + ((i * 7919) % 1000), done: i % 2 === 0, order: (i * 7919) % 1000 });
const time = async (label, fn, n = 1000) => {
  for (let i = 0; i < 200; i++) await fn();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  return `${label} ${(Number(process.hrtime.bigint() - t0) / n / 1000).toFixed(1)} µs`;
};
console.log(root.split('/').pop(),
  await time('sort order limit 100', () => c.find({ done: true }, { sort: { order: 1 }, limit: 100 })), '|',
  await time('sort title all', () => c.find({}, { sort: { title: -1 } })), '|',
  await time('sort done,order', () => c.find({}, { sort: { done: 1, order: -1 }, limit: 50 })));
await store.close();
rmSync(dir, { recursive: true, force: true });
