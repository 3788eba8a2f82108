import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEngineStore } from '../../../src/store/embedded/index.js';
import { snapshotEngineStore } from '../../../src/store/embedded/snapshot.js';

// Issue 41: the online backup of the engine (svc backup, the dashboard's, the scheduled ones) reads
// a snapshot on a connection of its own while the server writes: one read transaction, so every
// collection is as it was at one instant, whatever is committed while it is read.

describe('snapshot of the embedded engine', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-engine-snap-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('a folder without a database has no collections (and none is made)', async () => {
    const snapshot = await snapshotEngineStore(join(dir, 'missing'));
    expect(snapshot.collections).toEqual([]);
    await snapshot.close();
  });

  it('reads every collection as it was when taken, while writers go on; pages and counts agree', async () => {
    const store = await createEngineStore({ dir });
    const orders = store.collection('orders');
    const lines = store.collection('shop/lines');
    for (let i = 0; i < 2500; i++) await orders.insert({ id: `o${i}`, n: i, at: new Date(i) });
    // Writers: a line always after its order is acknowledged, and updates of old orders.
    let stop = false;
    let written = 0;
    const writers = [0, 1, 2].map(async (w) => {
      for (let i = 0; !stop; i++) {
        const id = `w${w}-${i}`;
        await orders.insert({ id, n: -1 });
        await lines.insert({ id, order: id });
        await orders.update({ id: `o${i % 2500}` }, { $inc: { n: 1000000 } });
        written++;
      }
    });
    while (written < 50) await new Promise((r) => setTimeout(r, 5));
    const before = await orders.count({});
    const snapshot = await snapshotEngineStore(dir);
    try {
      const byName = new Map(snapshot.collections.map((c) => [c.name, c]));
      expect([...byName.keys()]).toEqual(['orders', 'shop/lines']);
      const countOrders = await byName.get('orders')?.count();
      // Writes go on after the snapshot began: it does not see them.
      while (written < 150) await new Promise((r) => setTimeout(r, 5));
      const paged: string[] = [];
      for await (const page of byName.get('orders')?.pages(700) ?? []) {
        expect(page.length).toBeLessThanOrEqual(700);
        for (const doc of page) paged.push(doc.id);
      }
      const all = (await byName.get('orders')?.read()) ?? [];
      const lineIds = ((await byName.get('shop/lines')?.read()) ?? []).map((d) => d.id);
      expect(paged).toEqual(all.map((d) => d.id));
      expect(all.length).toBe(countOrders);
      expect(all.length).toBeGreaterThanOrEqual(before);
      // One instant: every line's order is there (it was acknowledged before the line was written).
      const ids = new Set(all.map((d) => d.id));
      expect(lineIds.filter((id) => !ids.has(id))).toEqual([]);
      // Insertion order, dates as dates, every acknowledged order before the snapshot included.
      expect(all.slice(0, 3).map((d) => d.id)).toEqual(['o0', 'o1', 'o2']);
      expect(all[5]?.at).toEqual(new Date(5));
      expect(await orders.count({})).toBeGreaterThan(all.length);
    } finally {
      await snapshot.close();
      stop = true;
      await Promise.all(writers);
    }
    // The writer was never blocked, and the store reads on after the snapshot closed.
    expect(await orders.count({})).toBe(2500 + (await lines.count({})));
    await store.close();
  });
});
