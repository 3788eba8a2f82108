import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../../src/store/embeddedStore.js';
import type { AggregateSpec, Store, StoreCollection } from '../../src/store/Store.js';

// Issue 25: the embedded store's reads for $expand (findTexts, `{id: {$in}}` from the id index)
// and aggregates (every object collected once until the next write).

let dir: string;
let store: Store;
let coll: StoreCollection;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-reads-'));
  store = await createEmbeddedStore({ dir });
  coll = store.collection('things');
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const spec: AggregateSpec = { group: ['kind'], count: true, sum: ['n'], avg: [], min: [], max: [], limit: 10, timeoutMs: 10_000, maxScanned: 1000 };

describe('embedded store reads', () => {
  it('an aggregate over every object follows each kind of write', async () => {
    for (let i = 0; i < 20; i++) await coll.insert({ id: `t${i}`, kind: `k${i % 2}`, n: i });
    const sums = async (): Promise<unknown> => (await coll.aggregate?.({}, spec))?.map((r) => [r.group.kind, r.count, r.sum?.n]);
    expect(await sums()).toEqual([['k0', 10, 90], ['k1', 10, 100]]);
    expect(await sums()).toEqual([['k0', 10, 90], ['k1', 10, 100]]);
    await coll.insert({ id: 'new', kind: 'k2', n: 5 });
    expect(await sums()).toEqual([['k0', 10, 90], ['k1', 10, 100], ['k2', 1, 5]]);
    await coll.update({ id: 't0' }, { $set: { n: 1000 } });
    expect(await sums()).toEqual([['k0', 10, 1090], ['k1', 10, 100], ['k2', 1, 5]]);
    await coll.remove({ kind: 'k1' });
    expect(await sums()).toEqual([['k0', 10, 1090], ['k2', 1, 5]]);
    // Concurrent inserts: the store writes them as one batch.
    await Promise.all([coll.insert({ id: 'm1', kind: 'k3', n: 1 }), coll.insert({ id: 'm2', kind: 'k3', n: 2 }), sums()]);
    expect(await sums()).toEqual([['k0', 10, 1090], ['k2', 1, 5], ['k3', 2, 3]]);
  });

  it('{id: {$in}} answers what matching every object answers: order, duplicates, missing ids, skip and limit', async () => {
    for (let i = 0; i < 10; i++) await coll.insert({ id: `t${i}`, n: (i * 7) % 10 });
    const ids = ['t5', 't1', 'nope', 't5', 't8', 't2'];
    const byIndex = async (options: object): Promise<unknown> => (await coll.find({ id: { $in: ids } }, options)).map((d) => d.id);
    // The same filter with a condition the id index cannot answer alone: nedb matches each object.
    const byMatching = async (options: object): Promise<unknown> => (await coll.find({ id: { $in: ids }, n: { $exists: true } }, options)).map((d) => d.id);
    for (const options of [{}, { sort: { n: -1 } }, { skip: 1, limit: 2 }, { sort: { n: 1 }, skip: 1 }]) expect(await byIndex(options)).toEqual(await byMatching(options));
    expect(await byIndex({})).toEqual(['t1', 't2', 't5', 't8']);
    expect(await coll.find({ id: { $in: [] } })).toEqual([]);
    // anyOrder (a reader that looks each object up by id): the same objects, here in the list's order; a sort still sorts.
    expect(await byIndex({ anyOrder: true })).toEqual(['t5', 't1', 't8', 't2']);
    expect(await byIndex({ anyOrder: true, sort: { n: -1 } })).toEqual(await byMatching({ sort: { n: -1 } }));
    expect(await byMatching({ anyOrder: true })).toEqual(await byMatching({}));
    // findTexts tells where each listed id's object is in its answer (-1: none), repeats included.
    const texts = await coll.findTexts?.({ id: { $in: ids } }, { anyOrder: true }, ['id']);
    expect(texts?.values).toEqual(['t5', 't1', 't8', 't2']);
    expect(texts?.listedRows).toEqual([0, 1, -1, 0, 2, 3]);
    expect(texts?.texts).toEqual((await coll.find({ id: { $in: ['t5', 't1', 't8', 't2'] } }, { anyOrder: true })).map((d) => JSON.stringify(d)));
    // With a skip or a limit (or a sort), nothing is told: the reader joins by id.
    expect((await coll.findTexts?.({ id: { $in: ids } }, { anyOrder: true, limit: 2 }, ['id']))?.listedRows).toBeUndefined();
  });

  it('findTextsOfIdsNow answers what findTexts of {id: {$in}} in any order answers, and nothing while a write is under way', async () => {
    for (let i = 0; i < 10; i++) await coll.insert({ id: `t${i}`, n: i, author: `a${i % 3}` });
    const pick = ['id', 'author'];
    for (const ids of [['t5', 't1', 'nope', 't5', 't8', 't2'], [], ['nope'], ['t0', 't0', 't0'], ['t9', 't8', 't7', 't6', 't5', 't4', 't3', 't2', 't1', 't0']]) {
      const now = coll.findTextsOfIdsNow?.(ids, pick);
      expect(now).toEqual(await coll.findTexts?.({ id: { $in: ids } }, { anyOrder: true }, pick));
      expect(now?.listedRows).toHaveLength(ids.length);
      // Nothing picked (a last level of $expand joins by the store's places): the same texts and places.
      const bare = coll.findTextsOfIdsNow?.(ids, []);
      expect([bare?.texts, bare?.listedRows, bare?.values, bare?.spans]).toEqual([now?.texts, now?.listedRows, [], []]);
    }
    // An object changed is read changed; one removed is not read.
    await coll.update({ id: 't5' }, { $set: { n: 50 } });
    await coll.remove({ id: 't1' });
    expect(coll.findTextsOfIdsNow?.(['t5', 't1'], pick)?.texts).toEqual([JSON.stringify({ id: 't5', n: 50, author: 'a2' })]);
    expect(coll.findTextsOfIdsNow?.(['t5', 't1'], pick)?.listedRows).toEqual([0, -1]);
    // While a write waits in the queue, the cache may be about to change: not at once (the reader then awaits findTexts).
    // (The write counts itself once the store is open, a few promise turns in; its disk append
    // needs the event loop, which these turns never give it.)
    const writing = coll.update({ id: 't5' }, { $set: { n: 51 } });
    let refused = false;
    for (let turn = 0; turn < 50 && !refused; turn++) {
      await Promise.resolve();
      refused = coll.findTextsOfIdsNow?.(['t5'], pick) === undefined;
    }
    expect(refused).toBe(true);
    await writing;
    expect(coll.findTextsOfIdsNow?.(['t5'], pick)?.texts).toEqual([JSON.stringify({ id: 't5', n: 51, author: 'a2' })]);
  });

  it('findTexts: each object\'s text as find would serialise it, the picked values, and where each value is in the text', async () => {
    await coll.insert({ id: 'a', title: 'one "quoted" é', author: 'u1', tags: ['x', 'y'] });
    await coll.insert({ id: 'b', title: 'two', meta: { author: 'u2' }, author: 'u2' });
    await coll.insert({ id: 'c', title: '"author":"u3"' });
    const found = await coll.findTexts?.({}, {}, ['id', 'author', 'tags', 'other']);
    if (found === undefined) throw new Error('the embedded store keeps texts');
    expect(found.texts).toEqual((await coll.find({})).map((d) => JSON.stringify(d)));
    expect(found.values).toEqual(['a', 'u1', ['x', 'y'], undefined, 'b', 'u2', undefined, undefined, 'c', undefined, undefined, undefined]);
    const at = (i: number, k: number): string | number => {
      const start = found.spans[(i * 4 + k) * 2] as number;
      return start < 0 ? start : (found.texts[i] as string).slice(start, found.spans[(i * 4 + k) * 2 + 1]);
    };
    // a: the values where they are; b: "author" named twice (a nested key): cannot tell; c: named only inside a string.
    expect([at(0, 0), at(0, 1), at(0, 2), at(0, 3)]).toEqual([-2, '"u1"', '["x","y"]', -1]);
    expect([at(1, 1), at(1, 2)]).toEqual([-2, -1]);
    expect([at(2, 1), at(2, 3)]).toEqual([-1, -1]);
    // Asked again (the places are kept per object), and after an update (a new object, found anew).
    expect((await coll.findTexts?.({ id: 'a' }, {}, ['author']))?.spans).toEqual([found.spans[2] as number, found.spans[3] as number]);
    await coll.update({ id: 'a' }, { $set: { title: 'longer title than before', author: 'u9' } });
    const updated = await coll.findTexts?.({ id: 'a' }, {}, ['author']);
    expect((updated?.texts[0] as string).slice(updated?.spans[0], updated?.spans[1])).toBe('"u9"');
  });

  it('what a read keeps with each object answers the next read as the first, and stays out of what is handed out', async () => {
    await coll.insert({ id: 'a', author: 'u1', tags: ['x', 'y'] });
    await coll.insert({ id: 'b', author: 'u2', tags: [] });
    const pick = ['id', 'author', 'tags'];
    const first = await coll.findTexts?.({}, {}, pick);
    if (first === undefined) throw new Error('the embedded store keeps texts');
    expect(first.values).toEqual(['a', 'u1', ['x', 'y'], 'b', 'u2', []]);
    // An object value is a copy each time: changing one handed out changes nothing kept.
    (first.values[2] as string[]).push('changed');
    for (const names of [pick, [...pick]]) {
      const again = await coll.findTexts?.({}, {}, names);
      expect(again?.values).toEqual(['a', 'u1', ['x', 'y'], 'b', 'u2', []]);
      expect(again?.spans).toEqual(first.spans);
    }
    // Other names for the same objects, then the first ones again.
    expect((await coll.findTexts?.({}, {}, ['author']))?.values).toEqual(['u1', 'u2']);
    expect((await coll.findTexts?.({}, {}, pick))?.values).toEqual(['a', 'u1', ['x', 'y'], 'b', 'u2', []]);
    // Nothing of it is on the objects find answers, nor in their texts.
    for (const doc of await coll.find({})) {
      expect(Object.getOwnPropertySymbols(doc)).toEqual([]);
      expect(Object.keys({ ...doc }).sort()).toEqual(['author', 'id', 'tags']);
    }
    expect(JSON.parse((await coll.findJson?.({})) ?? '[]')).toEqual([
      { id: 'a', author: 'u1', tags: ['x', 'y'] },
      { id: 'b', author: 'u2', tags: [] },
    ]);
  });
});
