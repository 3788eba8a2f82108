// The engine's crash cases, shared by the quick tests (engine.test.ts, diskFull.test.ts: without a
// memory map) and mmap-crash.test.ts (with one, in pnpm test:reliability).
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { copyFile, mkdir, mkdtemp, rm, stat, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngineStore, ENGINE_FILE } from '../../../src/store/embedded/index.js';
import { TS_SOURCES_HOOK, writeUntilKilled } from '../../helpers/tsChild.js';

const storeModule = fileURLToPath(new URL('../../../src/store/embedded/index.ts', import.meta.url));

// A child node writing without pause (Node strips the types; the hook maps `.js` specifiers of
// our sources to their `.ts` files): four writers, inserts and an $inc/$push on one counter.
const writer = `${TS_SOURCES_HOOK}const { createEngineStore } = await import(process.env.STORE_MODULE);
const store = await createEngineStore({ dir: process.env.STORE_DIR, mmapMb: Number(process.env.STORE_MMAP_MB ?? 0) });
const coll = store.collection('crash/test');
await coll.ensureIndex({ field: 'w' });
await coll.insert({ id: 'counter', n: 0 });
const payload = 'p'.repeat(500);
await Promise.all([0, 1, 2, 3].map(async (w) => {
  for (let i = 0; ; i++) {
    const id = 'w' + w + '-' + i;
    await coll.insert({ id, w, i, payload, flag: i % 7 === 0 ? true : i });
    process.stdout.write('insert ' + id + '\\n');
    const after = await coll.update({ id: 'counter' }, { $inc: { n: 1 }, $push: { seen: [id] } });
    process.stdout.write('inc ' + after.n + '\\n');
  }
}));
`;

/**
 * A child writing without pause into `dir` (the engine with `mmapMb`) killed with SIGKILL after
 * 400 acknowledged inserts; then every acknowledged write must be there, the counter's $inc and
 * $push together, and the path facts with them (engine.test.ts; with a map, mmap-crash.test.ts).
 */
export async function killWhileWriting(dir: string, mmapMb: number): Promise<void> {
  const { inserted: acknowledged, counter } = await writeUntilKilled(writer, { STORE_MODULE: storeModule, STORE_DIR: dir, STORE_MMAP_MB: String(mmapMb) });

  const store = await createEngineStore({ dir, mmapMb });
  const coll = store.collection('crash/test');
  const stored = new Set((await coll.find({ id: { $ne: 'counter' } }, { fields: { id: 1 } })).map((d) => d.id));
  expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
  const after = await coll.findOne({ id: 'counter' });
  expect(after?.n).toBeGreaterThanOrEqual(counter);
  expect((after?.seen as unknown[]).length).toBe(after?.n);
  // The path facts came through too: `flag` holds booleans and numbers, so {flag: 1} is guarded.
  expect(await coll.count({ flag: 1 })).toBe(await coll.count({ i: 1 }));
  expect(await coll.count({ w: 0 })).toBe((await coll.find({ w: 0 })).length);
  await store.close();
}

/**
 * A running store's files copied (what a crash leaves), its WAL cut at many places, each copy
 * opened with `mmapMb` (mmap-crash.test.ts runs it with a memory map).
 */
export async function tornWal(mmapMb: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-engine-torn-'));
  try {
    const store = await createEngineStore({ dir, mmapMb });
    const things = store.collection('things');
    await things.ensureIndex({ field: 'n' });
    // One transaction each (awaited one by one): a pair of objects written together.
    for (let i = 0; i < 120; i++) await Promise.all([things.insert({ id: `x${i}`, n: i, pad: 'q'.repeat(300) }), things.insert({ id: `y${i}`, n: i })]);
    const copy = join(dir, 'copy');
    await mkdir(copy);
    for (const f of [ENGINE_FILE, `${ENGINE_FILE}-wal`]) await copyFile(join(dir, f), join(copy, f));
    await store.close();
    const wal = join(copy, `${ENGINE_FILE}-wal`);
    const full = (await stat(wal)).size;
    expect(full).toBeGreaterThan(100_000);
    let last = -1;
    for (const fraction of [0.97, 0.8, 0.61, 0.43, 0.25, 0.11, 0.02]) {
      const cut = Math.floor(full * fraction) + 77;
      const torn = join(dir, `torn-${fraction}`);
      await mkdir(torn);
      for (const f of [ENGINE_FILE, `${ENGINE_FILE}-wal`]) await copyFile(join(copy, f), join(torn, f));
      await truncate(join(torn, `${ENGINE_FILE}-wal`), cut);
      const reopened = await createEngineStore({ dir: torn, mmapMb });
      const c = reopened.collection('things');
      const docs = await c.find({});
      // Whole pairs, a prefix of what was written, and the index agrees with the objects.
      const xs = docs.filter((d) => d.id.startsWith('x')).map((d) => d.n);
      const ys = docs.filter((d) => d.id.startsWith('y')).map((d) => d.n);
      expect(xs).toEqual(ys);
      expect(xs).toEqual(Array.from({ length: xs.length }, (_, i) => i));
      expect(await c.count({ n: { $gte: 0 } })).toBe(docs.length);
      if (last !== -1) expect(xs.length).toBeLessThanOrEqual(last);
      last = xs.length;
      await c.insert({ id: 'after', n: -1 });
      await reopened.close();
    }
    expect(last).toBeLessThan(120);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
