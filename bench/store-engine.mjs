// The embedded engine (SQLite) against the old embedded store, in-process, store calls only
// (issue 41): `flock /work/bench.lock node bench/store-engine.mjs [--count 100000] [--rounds 5]`
// (needs pnpm build). Each store gets the same todos (title, done, n indexed, ~80 bytes), then per
// round, the stores alternated: GET by id (findOneJsonNow, as the server's fast path, random ids),
// insert (16 writers at a time, so group commits form), the indexed range query
// (findJson({n: {$gt: x}}, sort n, limit 50)), count with a filter ({done: true}); and a reopen
// (close, then open and answer the first GET by id: the restart's store part). Figures: CPU µs
// per call of this process (user + system), median over rounds, and the engine / old ratio.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from './lib/args.js';

const args = parseArgs(process.argv.slice(2), { count: 'number', rounds: 'number' });
const count = args.count ?? 100_000;
const rounds = args.rounds ?? 5;
const root = new URL('..', import.meta.url).pathname;
const { createEmbeddedStore, createEngineStore } = await import(`${root}/packages/core/dist/index.js`);

const ids = Array.from({ length: count }, () => randomBytes(8).toString('hex'));
const todo = (i) => ({ id: ids[i] ?? randomBytes(8).toString('hex'), title: `todo ${i}`, done: i % 2 === 0, n: (i * 7919) % count });
const kinds = {
  old: (dir) => createEmbeddedStore({ dir, compactionIntervalMs: 2 ** 31 - 1 }),
  engine: (dir) => createEngineStore({ dir }),
};

async function seed(name) {
  const dir = mkdtempSync(join(tmpdir(), `svc-store-engine-${name}-`));
  const store = await kinds[name](dir);
  const c = store.collection('todos');
  await c.ensureIndex({ field: 'n' });
  await Promise.all(Array.from({ length: 16 }, async (_, w) => {
    for (let i = w; i < count; i += 16) await c.insert(todo(i));
  }));
  return { name, dir, store, c };
}

async function cpu(n, fn) {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await fn(i);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

let extra = count;
const workloads = {
  'GET by id (findOneJsonNow)': (s) => cpu(20_000, () => s.c.findOneJsonNow(ids[(Math.random() * count) | 0])),
  'insert, 16 writers': async (s) => {
    const start = process.cpuUsage();
    await Promise.all(Array.from({ length: 16 }, async () => {
      for (let k = 0; k < 125; k++) await s.c.insert(todo(extra++));
    }));
    const used = process.cpuUsage(start);
    return (used.user + used.system) / 2000;
  },
  'indexed range, 50 (findJson)': (s) => cpu(1_000, () => s.c.findJson({ n: { $gt: Math.floor(Math.random() * count) } }, { sort: { n: 1 }, limit: 50 })),
  'count {done: true}': (s) => cpu(20, () => s.c.count({ done: true })),
};

const setups = { old: await seed('old'), engine: await seed('engine') };
const results = {};
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? ['old', 'engine'] : ['engine', 'old'];
  for (const [work, run] of Object.entries(workloads)) {
    for (const name of order) ((results[work] ??= {})[name] ??= []).push(await run(setups[name]));
  }
}
// Reopen: close, open again, first answer by id (wall ms: the restart's store part).
for (const name of ['old', 'engine']) {
  const s = setups[name];
  await s.store.close();
  const t0 = performance.now();
  s.store = await kinds[name](s.dir);
  s.c = s.store.collection('todos');
  await s.c.findOne({ id: ids[1] });
  (results['reopen + first GET by id, wall ms'] ??= {})[name] = [performance.now() - t0];
}
const median = (xs) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${count} objects, ${rounds} rounds, Node ${process.version}; CPU µs per call (reopen: wall ms)`);
console.log('| workload | old store | engine | engine / old |');
console.log('|---|---:|---:|---:|');
for (const [work, byName] of Object.entries(results)) {
  const ratios = byName.engine.map((x, i) => x / byName.old[i]);
  console.log(`| ${work} | ${median(byName.old).toFixed(1)} | ${median(byName.engine).toFixed(1)} | ${median(ratios).toFixed(2)}x |`);
}
for (const s of Object.values(setups)) {
  await s.store.close();
  rmSync(s.dir, { recursive: true, force: true });
}
