// Store micro-benchmark: what app.json embeddedStore.fsync costs (node bench/store-fsync.mjs [seconds] [dir]; needs pnpm build).
// Inserts by 1 writer (each its own append, so its own fsync) and by 50 writers at once (group
// commit: one append and one fsync per batch), and updates by 1 writer, with fsync off and on.
// [dir]: where the data folder goes (default the system temp folder): fsync's cost is the disk's.
const root = new URL('..', import.meta.url).pathname;
const { createEmbeddedStore } = await import(`${root}/packages/core/dist/index.js`);
const { mkdtempSync, rmSync } = await import('node:fs');
const { tmpdir } = await import('node:os');
const { join } = await import('node:path');
const seconds = Number(process.argv[2] ?? 3);
const base = process.argv[3] ?? tmpdir();

async function measure(fsync, writers, op) {
  const dir = mkdtempSync(join(base, 'svc-fsync-bench-'));
  const store = await createEmbeddedStore({ dir, fsync, compactionIntervalMs: 2 ** 31 - 1 });
  const c = store.collection('todos');
  for (let w = 0; w < writers; w++) await c.insert({ id: `counter${w}`, n: 0 });
  let done = 0;
  const latencies = [];
  const end = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: writers }, async (_, w) => {
    for (let i = 0; performance.now() < end; i++) {
      const t0 = performance.now();
      if (op === 'insert') await c.insert({ id: `w${w}-${i}`, title: 'x', done: false });
      else await c.update({ id: `counter${w}` }, { $inc: { n: 1 } });
      latencies.push(performance.now() - t0);
      done++;
    }
  }));
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  const p = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(2);
  return { perSecond: Math.round(done / seconds), p50: p(0.5), p99: p(0.99) };
}

console.log(`data folder under ${base}; ${seconds} s per cell`);
console.log('| writes | fsync off: writes/s (p50 / p99 ms) | fsync on: writes/s (p50 / p99 ms) | on / off |');
console.log('|---|---|---|---|');
for (const [label, writers, op] of [['insert, 1 writer', 1, 'insert'], ['insert, 50 writers', 50, 'insert'], ['update, 1 writer', 1, 'update']]) {
  const off = await measure(false, writers, op);
  const on = await measure(true, writers, op);
  console.log(`| ${label} | ${off.perSecond} (${off.p50} / ${off.p99}) | ${on.perSecond} (${on.p50} / ${on.p99}) | ${(on.perSecond / off.perSecond).toFixed(3)} |`);
}
