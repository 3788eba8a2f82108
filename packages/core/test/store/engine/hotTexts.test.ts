import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../../src/store/embedded/engine.js';
import { selectRows } from '../../../src/store/embedded/executor.js';
import { KeptLists } from '../../../src/store/embedded/keptLists.js';
import { HotTexts } from '../../../src/store/embedded/hotTexts.js';
import { createEngineStore, ENGINE_FILE } from '../../../src/store/embedded/index.js';

// The engine's texts read lately (GET by id, list pages): at most MAX_BYTES, the oldest let go
// first, an entry dropped by a write never answered again.
const key = (i: number): string => `k${String(i).padStart(6, '0')}`;
const text = (i: number): string => `{"id":"${key(i)}","title":"${'x'.repeat(1000)}"}`;
const PER = HotTexts.bytesOf(key(0), text(0));
/** The bound of the instances below (MAX_BYTES is 16 MiB: the same code, a quarter of the work). */
const BOUND = 4 * 1024 * 1024;

describe('HotTexts', () => {
  it('keeps at most MAX_BYTES of texts, letting the oldest go first', () => {
    const hot = new HotTexts(BOUND);
    const fit = Math.floor(BOUND / PER);
    for (let i = 0; i < fit * 3; i++) hot.set(i, key(i), text(i));
    // The newest `fit` are kept, the older ones gone.
    for (let i = fit * 2; i < fit * 3; i++) expect(hot.byId(key(i))).toBe(text(i));
    for (let i = 0; i < fit * 2; i += 97) expect(hot.byId(key(i))).toBeUndefined();
    expect(hot.bySeq(fit * 3 - 1)).toBe(text(fit * 3 - 1));
  });

  it('lets go of an entry by when it was last kept: one written again is the newest', () => {
    const hot = new HotTexts(BOUND);
    const fit = Math.floor(BOUND / PER);
    for (let i = 0; i < fit - 10; i++) hot.set(i, key(i), text(i));
    // 0 is dropped (an update) and kept again: now the newest; 1 stays the oldest.
    hot.delete(0, key(0));
    expect(hot.byId(key(0))).toBeUndefined();
    hot.set(0, key(0), text(0));
    for (let i = fit - 10; i < fit + 20; i++) hot.set(i, key(i), text(i));
    expect(hot.byId(key(1))).toBeUndefined();
    expect(hot.byId(key(0))).toBe(text(0));
    // Replaced under the same row (an update read again): the new text, once.
    hot.set(5000, key(5000), 'old');
    hot.set(5000, key(5000), text(5000));
    expect(hot.byId(key(5000))).toBe(text(5000));
  });

  it('stays right through many drops and reads again of few objects, and after clear', () => {
    const hot = new HotTexts(BOUND);
    for (let round = 0; round < 20_000; round++) {
      const i = round % 7;
      hot.set(i, key(i), text(i));
      if (round % 3 === 0) hot.delete(undefined, key(i));
    }
    for (let i = 0; i < 7; i++) expect([text(i), undefined]).toContain(hot.byId(key(i)));
    hot.clear();
    expect(hot.byId(key(1))).toBeUndefined();
    const fit = Math.floor(BOUND / PER);
    for (let i = 0; i < fit + 5; i++) hot.set(i, key(i), text(i));
    expect(hot.byId(key(0))).toBeUndefined();
    expect(hot.byId(key(fit + 4))).toBe(text(fit + 4));
  });

  it('keeps findTexts facts with a text: for the same names only, of that text only, gone with the entry, counted in the bound', () => {
    const hot = new HotTexts(BOUND);
    const names = ['title', 'done'];
    hot.set(1, key(1), text(1));
    hot.keepPicked(1, text(1), names, [-1, -1, -1, -1, undefined, undefined], 96);
    expect(hot.picked(1, text(1), names)).toEqual([-1, -1, -1, -1, undefined, undefined]);
    expect(hot.picked(1, text(1), ['title', 'done'])).toBeDefined();
    expect(hot.picked(1, text(1), ['done', 'title'])).toBeUndefined();
    expect(hot.picked(1, text(1), ['title'])).toBeUndefined();
    // Another text under the row (not what was kept): nothing.
    expect(hot.picked(1, text(2), names)).toBeUndefined();
    hot.keepPicked(2, text(2), names, [], 96); // no entry for row 2: not kept
    expect(hot.picked(2, text(2), names)).toBeUndefined();
    hot.delete(1, key(1));
    expect(hot.picked(1, text(1), names)).toBeUndefined();
    hot.set(1, key(1), text(1));
    expect(hot.picked(1, text(1), names)).toBeUndefined();
    // The facts' bytes count: big facts on the newest rows push the oldest rows out.
    const fit = Math.floor(BOUND / PER);
    for (let i = 0; i < fit; i++) hot.set(i, key(i), text(i));
    expect(hot.byId(key(0))).toBe(text(0));
    for (let i = fit - 10; i < fit; i++) hot.keepPicked(i, text(i), names, [], PER * 2);
    expect(hot.byId(key(0))).toBeUndefined();
    expect(hot.picked(fit - 1, text(fit - 1), names)).toEqual([]);
  });

  // The bound is of the heap the cache holds, not of its texts' characters: every entry costs its
  // object, two map entries, a queue slot and two string headers besides the characters (~6x the
  // characters of a 77-character text before the bound counted them: 24.8 MB held for "4 MiB").
  // Measured with V8's own count after a full collection: the heap grown by filling the cache past
  // its bound (with updates dropping entries meanwhile, and a tenth of the texts two bytes a character).
  it('holds at most its bound of heap, measured after a full garbage collection', () => {
    const gc = fullGc();
    // A bound of 4 MiB (MAX_BYTES is 16): the same accounting, a quarter of the work.
    const bound = 4 * 1024 * 1024;
    const hot = new HotTexts(bound);
    const before = heapAfter(gc);
    let n = 0;
    for (let i = 0; i < 40_000; i++) {
      hot.set(i, flatId(i), flatText(i));
      if (i % 5 === 4) hot.delete(undefined, flatId(i - 3));
    }
    const grown = heapAfter(gc) - before;
    for (let i = 0; i < 40_000; i++) if (hot.bySeq(i) !== undefined) n++;
    expect(grown).toBeLessThanOrEqual(bound);
    // Not emptied: most of the bound is texts kept (each entry's estimate, HotTexts.bytesOf, is its heap).
    expect(n * HotTexts.bytesOf(flatId(1), flatText(1))).toBeGreaterThan(bound * 0.8);
    expect(hot.bytes).toBeLessThanOrEqual(bound);
  });

  it('admits a row read by a list the second time it is read lately, and fewer while such rows are let go unread', () => {
    const bound = 256 * 1024;
    const hot = new HotTexts(bound);
    // First read: not kept; second: kept.
    expect(hot.admit(7)).toBe(false);
    expect(hot.admit(7)).toBe(true);
    // Seen long ago (past two windows of rows read by lists): first read again.
    for (let i = 0; i < 2 * 1024 + 10; i++) hot.admit(1_000_000 + i);
    expect(hot.admit(7)).toBe(false);
    // Rows kept for lists and never read, let go oldest first: admit keeps fewer and fewer (down
    // to one in 64) of the rows it would keep.
    const share = (): number => {
      let kept = 0;
      for (let i = 0; i < 640; i++) if (hot.admit(5) /* seen: the share decides */) kept++;
      return kept;
    };
    hot.admit(5);
    expect(share()).toBe(640);
    for (let i = 0; i < 10_000; i++) hot.set(i, flatId(i), flatText(i), true);
    expect(share()).toBe(10);
    // Rows kept for lists and read before they go: back to all.
    for (let i = 10_000; i < 20_000; i++) {
      hot.set(i, flatId(i), flatText(i), true);
      expect(hot.bySeq(i)).toBe(flatText(i));
    }
    expect(share()).toBe(640);
    // Texts a GET by id kept (not for a list) decide nothing.
    for (let i = 20_000; i < 30_000; i++) hot.set(i, flatId(i), flatText(i));
    expect(share()).toBe(640);
  });

  it('holds its lists of rows within KeptLists.MAX_BYTES of heap, long keys and facets included', () => {
    const gc = fullGc();
    const hot = new HotTexts(BOUND);
    const before = heapAfter(gc);
    for (let i = 0; i < 5_000; i++) {
      const facet = i % 3 === 0 ? undefined : { path: 'owner', value: Buffer.from(`user ${i}`).toString() };
      hot.keepList(Buffer.from(`[{"n":{"$gt":${i}}},${'x'.repeat(i % 2000)}]`).toString(), Array.from({ length: 50 }, (_, k) => i * 50 + k + 1_000_000), facet);
    }
    const grown = heapAfter(gc) - before;
    expect(grown).toBeLessThanOrEqual(KeptLists.MAX_BYTES);
    expect(hot.list(Buffer.from(`[{"n":{"$gt":4999}},${'x'.repeat(4999 % 2000)}]`).toString())?.seqs).toHaveLength(50);
  });
});

describe('texts kept of a list', () => {
  // A query asked once (a range with bounds at random over a large collection) kept its page's
  // texts, pushing out texts read again for texts never read again: at 1,000,000 objects that churn
  // grew the server by ~200 MB (bench/RESULTS.md). A list asked again (polled) keeps them.
  it('keeps the texts of a page when the same query is asked again, or its rows were read lately, and answers the same each time', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-hot-list-'));
    try {
      const store = await createEngineStore({ dir });
      await store.collection('todos').insertMany?.(Array.from({ length: 100 }, (_, i) => ({ id: `t${i}`, n: (i * 37) % 100 })));
      await store.close();
      const engine = new Engine(join(dir, ENGINE_FILE), 'normal');
      try {
        const info = engine.schema.table('todos');
        if (info === undefined) throw new Error('no table');
        const hot = new HotTexts(BOUND);
        const page = (): string[] => selectRows(engine, info, { n: { $gt: 10 } }, { sort: { n: 1 }, limit: 20 }, hot).texts;
        const first = page();
        expect(first.map((t) => JSON.parse(t).n)).toEqual(Array.from({ length: 20 }, (_, i) => 11 + i));
        expect(hot.bytes).toBe(0);
        // Other bounds, each asked once, pages apart (n 40-59, 60-79): nothing kept either.
        selectRows(engine, info, { n: { $gt: 39 } }, { sort: { n: 1 }, limit: 20 }, hot);
        selectRows(engine, info, { n: { $gt: 59 } }, { sort: { n: 1 }, limit: 20 }, hot);
        expect(hot.bytes).toBe(0);
        // A bound whose page overlaps one read before (n 70-89): the rows read twice (70-79) are kept.
        const overlap = selectRows(engine, info, { n: { $gt: 69 } }, { sort: { n: 1 }, limit: 20 }, hot);
        expect(overlap.seqs.map((seq) => hot.bySeq(seq) !== undefined)).toEqual(Array.from({ length: 20 }, (_, i) => i < 10));
        expect(page()).toEqual(first);
        const seqs = selectRows(engine, info, { n: { $gt: 10 } }, { sort: { n: 1 }, limit: 20 }, hot).seqs;
        expect(seqs.map((seq) => hot.bySeq(seq))).toEqual(first);
        expect(page()).toEqual(first);
      } finally {
        await engine.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('texts kept of a read by id', () => {
  // Every text a GET by id read was kept: GETs at random over 10,000,000 objects kept a text per
  // read for nothing (each promoted to V8's old generation, then let go; bench/RESULTS.md, "Issue
  // 41, round 14"). A text is kept the second time it is read lately, as a list's rows are. Seen
  // from outside: another connection changes the row behind the store's back; a kept text still
  // answers the old one.
  it("keeps an object's text the second time it is read by id, not the first, and answers it until a write", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-hot-id-'));
    const store = await createEngineStore({ dir });
    const behind = new DatabaseSync(join(dir, ENGINE_FILE));
    try {
      const todos = store.collection('todos');
      await todos.insert({ id: 't1', n: 1 });
      const tbl = (behind.prepare('SELECT tbl FROM svc_collections WHERE name = ?').get('todos') as { tbl: string }).tbl;
      // The store's reads of one turn of the event loop share a read transaction (Engine.reading):
      // a change behind its back is seen from the next turn on.
      const change = async (n: number): Promise<void> => {
        behind.prepare(`UPDATE "${tbl}" SET doc = ? WHERE id = ?`).run(JSON.stringify({ id: 't1', n }), 't1');
        await new Promise((resolve) => setImmediate(resolve));
      };
      const read = async (): Promise<unknown> => JSON.parse((await todos.findOneJson?.('t1')) ?? 'null');
      expect(await read()).toEqual({ id: 't1', n: 1 });
      await change(2);
      // Read once before: not kept, so the row is read again.
      expect(await read()).toEqual({ id: 't1', n: 2 });
      await change(3);
      // Read twice: kept, the row is not read.
      expect(await read()).toEqual({ id: 't1', n: 2 });
      expect(await todos.findOne({ id: 't1' })).toEqual({ id: 't1', n: 2 });
      // A write through the store drops it.
      await todos.update({ id: 't1' }, { $set: { n: 4 } });
      expect(await read()).toEqual({ id: 't1', n: 4 });
    } finally {
      behind.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** V8's full collection (the flag set at run time; the function from a new context). */
function fullGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function heapAfter(gc: () => void): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Flat strings as SQLite's rows give them (a template makes a cons string, larger). */
const flatId = (i: number): string => Buffer.from(i.toString(16).padStart(16, '0')).toString();
const flatText = (i: number): string =>
  Buffer.from(`{"id":"${i.toString(16).padStart(16, '0')}","title":"w6gc wceg ${i % 10 === 0 ? '\u2192' : 'w4cg'} woe w1qc","done":true,"n":${i}}`).toString();

