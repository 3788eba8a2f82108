import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbeddedStore, snapshotEmbeddedStore } from '@svc/core';

// Issue 23 (6): an online backup of the embedded store, read from its files while a server
// writes them (no lock), holds every write acknowledged before it began, also across compactions.

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-snapshot-'));
  dirs.push(dir);
  return dir;
}

describe('snapshots of the embedded store', () => {
  it('taken during 50 concurrent writers and compactions every few ms: every acknowledged write is in it', async () => {
    const dir = await tempDir();
    // Compaction (the file rewritten and renamed over) every 5 ms: snapshots race with it.
    const store = await createEmbeddedStore({ dir, compactionIntervalMs: 5 });
    const items = store.collection('items');
    const counters = store.collection('a/counters');
    /** Per writer: ids inserted (acknowledged), its counter's acknowledged value, ids whose removal began, ids removed (acknowledged). */
    const acked = Array.from({ length: 50 }, () => ({ inserted: [] as string[], counter: 0, removing: [] as string[], removed: [] as string[] }));
    for (let w = 0; w < 50; w++) await counters.insert({ id: `c${w}`, n: 0 });
    let stop = false;
    const writers = acked.map(async (mine, w) => {
      for (let i = 0; !stop && i < 2000; i++) {
        const id = `w${w}-${i}`;
        await items.insert({ id, w, i, payload: 'x'.repeat(i % 7 === 0 ? 3000 : 40) });
        mine.inserted.push(id);
        await counters.update({ id: `c${w}` }, { $inc: { n: 1 } });
        mine.counter++;
        if (i % 5 === 4) {
          const gone = `w${w}-${i - 2}`;
          mine.removing.push(gone);
          await items.remove({ id: gone });
          mine.removed.push(gone);
        }
      }
    });
    const checked: number[] = [];
    try {
      for (let round = 0; round < 6; round++) {
        await new Promise((resolve) => setTimeout(resolve, 40));
        // What was acknowledged before the snapshot began: it must all be in it.
        const before = acked.map((a) => ({ inserted: [...a.inserted], counter: a.counter, removing: new Set(a.removing), removed: [...a.removed] }));
        const snapshot = await snapshotEmbeddedStore(dir);
        try {
          const byName = new Map(snapshot.collections.map((c) => [c.name, c]));
          expect([...byName.keys()].sort()).toEqual(['a/counters', 'items']);
          const got = new Map((await byName.get('items')?.read())?.map((d) => [d.id, d]));
          const n = new Map((await byName.get('a/counters')?.read())?.map((d) => [d.id, d.n as number]));
          for (let w = 0; w < 50; w++) {
            const b = before[w] as (typeof before)[number];
            // (A removal under way when the snapshot began may or may not be in it.)
            for (const id of b.inserted) if (!b.removing.has(id)) expect(got.has(id), `${id} acknowledged before the snapshot`).toBe(true);
            for (const id of b.removed) expect(got.has(id), `${id} removed before the snapshot`).toBe(false);
            expect(n.get(`c${w}`)).toBeGreaterThanOrEqual(b.counter);
          }
          // Objects come as the store answers them: no internal fields, in insertion order.
          const first = got.values().next().value as Record<string, unknown>;
          expect(Object.keys(first).sort()).toEqual(['i', 'id', 'payload', 'w']);
          const order = [...got.values()].filter((d) => d.w === 0).map((d) => d.i as number);
          expect(order).toEqual([...order].sort((x, y) => x - y));
          checked.push(got.size);
        } finally {
          await snapshot.close();
        }
      }
    } finally {
      stop = true;
      await Promise.all(writers);
      await store.close();
    }
    expect(checked.length).toBe(6);
    expect(checked.at(-1)).toBeGreaterThan(0);
  });

  it('leaves out a line being written at that instant, and names the line of corruption elsewhere', async () => {
    const dir = await tempDir();
    const line = (id: string, n: number) => JSON.stringify({ _id: id, n, __svcSeq: n });
    await writeFile(join(dir, 'things.db'), `${line('b', 2)}\n${line('a', 1)}\n{"$$deleted":true,"_id":"b"}\n${line('c', 3)}\n`);
    await appendFile(join(dir, 'things.db'), '{"_id":"d","n":');
    const snapshot = await snapshotEmbeddedStore(dir);
    expect(await snapshot.collections[0]?.read()).toEqual([
      { id: 'a', n: 1 },
      { id: 'c', n: 3 },
    ]);
    await snapshot.close();
    await writeFile(join(dir, 'other.db'), `${line('a', 1)}\nnot json\n${line('c', 3)}\n`);
    const broken = await snapshotEmbeddedStore(dir);
    await expect(broken.collections.find((c) => c.name === 'other')?.read()).rejects.toThrow(/other\.db: line 2 is corrupt/);
    await broken.close();
  });
});
