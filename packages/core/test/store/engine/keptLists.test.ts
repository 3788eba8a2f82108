import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeptLists, facetOf } from '../../../src/store/embedded/keptLists.js';
import { createEngineStore } from '../../../src/store/embedded/index.js';
import type { Doc, Filter, Store, StoreCollection } from '../../../src/store/Store.js';

describe('KeptLists', () => {
  it('takes as facet a top-level equality to a string, finite number or boolean, an indexed one first', () => {
    const none = new Set<string>();
    expect(facetOf({ owner: 'u1', done: false }, none)).toEqual({ path: 'owner', value: 'u1' });
    expect(facetOf({ done: false, owner: 'u1' }, none)).toEqual({ path: 'done', value: false });
    expect(facetOf({ done: false, owner: 'u1' }, new Set(['owner']))).toEqual({ path: 'owner', value: 'u1' });
    expect(facetOf({ $and: [{ n: { $gt: 1 } }, { owner: 'u1' }] }, none)).toEqual({ path: 'owner', value: 'u1' });
    expect(facetOf({ n: 3 }, none)).toEqual({ path: 'n', value: 3 });
    for (const filter of [{}, { n: Number.NaN }, { n: null }, { when: new Date(1) }, { tags: ['a'] }, { o: { k: 1 } }, { owner: { $eq: 'u1' } }, { 'a.b': 'x' }, { $or: [{ owner: 'u1' }] }, { $nor: [{ owner: 'u1' }] }] as Filter[]) {
      expect(facetOf(filter, none), JSON.stringify(filter)).toBeUndefined();
    }
  });

  it('drops a list with a facet only at a write of an object that is, or holds, its value, before or after', () => {
    const lists = new KeptLists();
    const keep = (): void => {
      lists.clear();
      lists.keep('u1', [1], { path: 'owner', value: 'u1' });
      lists.keep('u2', [2], { path: 'owner', value: 'u2' });
      lists.keep('n1', [3], { path: 'n', value: 1 });
      lists.keep('plain', [4], undefined);
    };
    const left = (): string[] => ['u1', 'u2', 'n1', 'plain'].filter((key) => lists.get(key) !== undefined);
    const cases: [(Doc | undefined)[], string[]][] = [
      [[{ id: 'a', owner: 'u1' }], ['u2', 'n1']],
      [[{ id: 'a', owner: 'u3' }], ['u1', 'u2', 'n1']],
      [[{ id: 'a', owner: 'u3' }, { id: 'a', owner: 'u2' }], ['u1', 'n1']],
      [[{ id: 'a' }, undefined], ['u1', 'u2', 'n1']],
      [[{ id: 'a', owner: null, n: '1' }], ['u1', 'u2', 'n1']],
      [[{ id: 'a', owner: ['u3', 'u2', null] }], ['u1', 'n1']],
      [[{ id: 'a', owner: [{ k: 'u1' }] }], ['n1']],
      [[{ id: 'a', owner: { k: 'u1' } }], ['n1']],
      [[{ id: 'a', owner: new Date(1) }], ['n1']],
      [[{ id: 'a', n: 1 }], ['u1', 'u2']],
      [[{ id: 'a', n: -0 }], ['u1', 'u2', 'n1']],
      [[{ id: 'a', n: [2, 1] }], ['u1', 'u2']],
      [[{ id: 'a', n: Number.NaN }], ['u1', 'u2', 'n1']],
    ];
    for (const [docs, kept] of cases) {
      keep();
      lists.written(docs);
      expect(left(), JSON.stringify(docs)).toEqual(kept);
    }
    keep();
    lists.written([]);
    expect(left()).toEqual(['u1', 'u2', 'n1']);
  });

  it('drops a list whose facet names a prototype key at any write (the object answers a value of its prototype: unknown)', () => {
    const filter = JSON.parse('{"__proto__": "x", "constructor": "y"}') as Filter;
    expect(facetOf(filter, new Set())).toEqual({ path: '__proto__', value: 'x' });
    for (const path of ['__proto__', 'constructor', 'toString']) {
      const lists = new KeptLists();
      lists.keep('k', [1], { path, value: 'x' });
      lists.written([{ id: 'a', owner: 'u1' }]);
      expect(lists.get('k'), path).toBeUndefined();
    }
  });

  it('keeps at most MAX_PATHS facet paths: a list of another path is dropped by any write', () => {
    const lists = new KeptLists();
    for (let i = 0; i < KeptLists.MAX_PATHS + 5; i++) lists.keep(`k${i}`, [i], { path: `p${i}`, value: 'v' });
    lists.written([{ id: 'x', p0: 'other' }]);
    for (let i = 0; i < KeptLists.MAX_PATHS + 5; i++) expect(lists.get(`k${i}`) !== undefined, `k${i}`).toBe(i < KeptLists.MAX_PATHS);
  });

  it('keeps one answer with a list, found under its key only while that very list is kept', () => {
    const lists = new KeptLists();
    const kept = lists.keep('u1', [1, 2], { path: 'owner', value: 'u1' });
    expect(kept).toBeDefined();
    const list = kept as NonNullable<typeof kept>;
    expect(lists.list('u1')).toBe(list);
    list.keep('expand author', '[1,2]');
    expect(list.answer('expand author')).toBe('[1,2]');
    expect(list.answer('expand editor')).toBeUndefined();
    // Another answer replaces it, and counts instead of it.
    list.keep('expand editor', '[3]');
    expect(list.answer('expand author')).toBeUndefined();
    expect(list.answer('expand editor')).toBe('[3]');
    expect(lists.answerBytes).toBe(64 + 2 * ('expand editor'.length + 3));
    // A write dropping the list drops its answer; the same query kept again is another list, without one.
    lists.written([{ id: 'a', owner: 'u1' }]);
    expect(list.answer('expand editor')).toBeUndefined();
    expect(lists.answerBytes).toBe(0);
    const again = lists.keep('u1', [1], { path: 'owner', value: 'u1' });
    expect(again).not.toBe(list);
    expect(again?.answer('expand editor')).toBeUndefined();
    // The list dropped keeps nothing any more (an answer made of its rows after a write would be stale).
    list.keep('expand editor', '[3]');
    expect(list.answer('expand editor')).toBeUndefined();
    expect(again?.answer('expand editor')).toBeUndefined();
    expect(lists.answerBytes).toBe(0);
    // A list kept already is not replaced: keep answers nothing.
    expect(lists.keep('u1', [9], { path: 'owner', value: 'u1' })).toBeUndefined();
    // clear drops every answer.
    again?.keep('k', 'x');
    lists.clear();
    expect(again?.answer('k')).toBeUndefined();
    expect(lists.answerBytes).toBe(0);
  });

  it('holds answers within MAX_ANSWER_BYTES: past it every answer goes and the lists stay', () => {
    const lists = new KeptLists();
    const big = 'x'.repeat(KeptLists.MAX_ANSWER_BYTES / 2 / 16 - 64);
    // Over a sixteenth of the bound: not kept.
    const first = lists.keep('big', [0], undefined);
    first?.keep('k', `${big}${'y'.repeat(64)}`);
    expect(first?.answer('k')).toBeUndefined();
    const kept = [];
    for (let i = 0; i < 20; i++) {
      const list = lists.keep(`k${i}`, [i], { path: 'owner', value: `u${i}` });
      list?.keep('k', big.slice(1));
      kept.push(list);
      expect(lists.answerBytes).toBeLessThanOrEqual(KeptLists.MAX_ANSWER_BYTES);
    }
    // 16 fit; the 17th let every answer go before it was kept.
    expect(kept.map((list) => list?.answer('k') !== undefined)).toEqual([...Array(16).fill(false), true, true, true, true]);
    expect(kept.every((list, i) => lists.list(`k${i}`) === list)).toBe(true);
  });

  it('holds at most MAX_LISTS lists, and what it drops is gone from every facet', () => {
    const lists = new KeptLists();
    for (let i = 0; i < KeptLists.MAX_LISTS + 10; i++) lists.keep(`k${i}`, [i], { path: 'owner', value: `u${i % 7}` });
    expect(lists.size).toBeLessThanOrEqual(KeptLists.MAX_LISTS);
    const last = `k${KeptLists.MAX_LISTS + 9}`;
    expect(lists.get(last)).toEqual([KeptLists.MAX_LISTS + 9]);
    lists.written([{ id: 'x', owner: `u${(KeptLists.MAX_LISTS + 9) % 7}` }]);
    expect(lists.get(last)).toBeUndefined();
  });
});

// Lists read twice (kept) between random writes: each answer must equal the same query's answer
// through a filter with no facet (`$or` of the same conditions: dropped at every write, so read
// again after each one), on the engine.
describe('kept lists between writes (engine)', () => {
  let dir: string;
  let store: Store;
  let coll: StoreCollection;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-engine-kept-lists-'));
    store = await createEngineStore({ dir });
    coll = store.collection('todos');
    await coll.ensureIndex({ field: 'owner' });
  });

  afterAll(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers a list kept for its facet anew after each kind of write of an object of that facet', async () => {
    const writes: [string, (c: StoreCollection) => Promise<unknown>][] = [
      ['insert', (c) => c.insert({ id: 'new', owner: 'u1', n: 9 })],
      ['insertMany', (c) => (c.insertMany as NonNullable<StoreCollection['insertMany']>).call(c, [{ id: 'new', owner: 'u1', n: 9 }])],
      ['update by id, away from the facet', (c) => c.update({ id: 'a' }, { $set: { owner: 'u2' } })],
      ['update by id and owner, into the facet', (c) => c.update({ id: 'c', owner: 'u2' }, { $set: { owner: 'u1' } })],
      ['update by id, within the facet', (c) => c.update({ id: 'b' }, { $set: { n: 0 } })],
      ['update by a filter', (c) => c.update({ n: 2 }, { $set: { n: 7 } })],
      ['remove by id', (c) => c.remove({ id: 'a' })],
      ['remove by id and owner', (c) => c.remove({ id: 'b', owner: 'u1' })],
      ['remove by a filter', (c) => c.remove({ n: 1 })],
      ['an array holding the value', (c) => c.insert({ id: 'new', owner: ['x', 'u1'], n: 9 })],
    ];
    let n = 0;
    for (const [name, write] of writes) {
      const c = store.collection(`facet${n++}`);
      await c.ensureIndex({ field: 'owner' });
      for (const doc of [{ id: 'a', owner: 'u1', n: 1 }, { id: 'b', owner: 'u1', n: 2 }, { id: 'c', owner: 'u2', n: 3 }]) await c.insert(doc);
      for (let i = 0; i < 2; i++) await c.findJson?.({ owner: 'u1' }, { sort: { n: 1 } });
      await write(c);
      const expected = await c.findJson?.({ $or: [{ owner: 'u1' }] }, { sort: { n: 1 } });
      expect(await c.findJson?.({ owner: 'u1' }, { sort: { n: 1 } }), name).toBe(expected);
    }
  });

  it('answers every list as it is now, whatever was written between two reads', async () => {
    // mulberry32: a fixed sequence, all bits used.
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
    };
    const owners = ['u0', 'u1', 'u2', 'u3'];
    // Owners are strings until step 450, then sometimes an array holding one, null or none: a
    // list is kept only while its plan is exact, which an array on the owner's path ends.
    const ownerValue = (step: number): unknown => (step > 450 && random(4) === 0 ? [[owners[random(4)], 'z'], null, undefined][random(3)] : owners[random(4)]);
    const ids: string[] = [];
    let made = 0;
    const queries: [Filter, Filter, { sort?: Record<string, 1 | -1>; limit?: number; skip?: number }][] = [];
    for (const owner of owners) {
      queries.push([{ owner, done: false }, { $or: [{ owner, done: false }] }, { sort: { n: -1 }, limit: 5 }]);
      queries.push([{ owner }, { $or: [{ owner }] }, { sort: { n: 1 }, skip: 2, limit: 3 }]);
      queries.push([{ done: true, owner }, { $or: [{ done: true, owner }] }, {}]);
    }
    let compared = 0;
    for (let step = 0; step < 800; step++) {
      const kind = random(10);
      if (kind < 3 || ids.length < 5) {
        const id = `t${made++}`;
        ids.push(id);
        const doc: Doc = { id, done: random(2) === 0, n: random(20) };
        const owner = ownerValue(step);
        if (owner !== undefined) doc.owner = owner;
        if (random(2) === 0) await coll.insert(doc);
        else await coll.insertMany?.([doc]);
      } else if (kind < 6) {
        const id = ids[random(ids.length)] as string;
        const filter: Filter = random(2) === 0 ? { id } : { id, owner: owners[random(4)] as string };
        const owner = random(2) === 0 ? undefined : ownerValue(step);
        await coll.update(filter, owner === undefined ? { $set: { done: random(2) === 0, n: random(20) } } : { $set: { owner, n: random(20) } });
      } else if (kind < 7) {
        const at = random(ids.length);
        const id = ids[at] as string;
        if ((await coll.remove(random(2) === 0 ? { id } : { id, owner: owners[random(4)] as string })) === 1) ids.splice(at, 1);
      } else if (kind < 8 && random(4) === 0) {
        await coll.remove({ n: random(20) });
        for (const id of [...ids]) if ((await coll.findOne({ id })) === null) ids.splice(ids.indexOf(id), 1);
      } else {
        const [faceted, plain, options] = queries[random(queries.length)] as (typeof queries)[number];
        for (let twice = 0; twice < 2; twice++) {
          const got = await coll.findJson?.(faceted, options);
          const expected = await coll.findJson?.(plain, options);
          expect(got, `step ${step}: ${JSON.stringify(faceted)}`).toBe(expected);
          expect(await coll.find(faceted, options)).toEqual(await coll.find(plain, options));
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(200);
  });
});
