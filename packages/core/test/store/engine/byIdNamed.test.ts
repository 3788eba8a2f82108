import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineStore } from '../../../src/store/embedded/index.js';
import type { Doc, Filter, Store, StoreCollection } from '../../../src/store/Store.js';

// findOne and update with a filter that names an id among other conditions (a rule ANDed in:
// `{id, owner}`) read the one object by its id and test it with the matcher; `find` plans the same
// filter in SQL. Every pair below must agree, on objects of every kind the planner treats apart.

const DOCS: Doc[] = [
  { id: 'a', owner: 'u1', done: false, n: 3, tags: ['x', 'y'], when: new Date(1000), nested: { k: 'v' }, title: 'Alpha' },
  { id: 'b', owner: 'u2', done: true, n: 7.5, tags: [], when: new Date(5000), nested: { k: 'w' }, title: 'beta' },
  { id: 'c', owner: 'u1', done: true, n: '7', tags: ['y'], title: null },
  { id: 'd', owner: ['u1', 'u2'], n: -1, nested: { k: ['v'] } },
];

const CONDITIONS: Filter[] = [
  {},
  { owner: 'u1' },
  { owner: 'u2' },
  { owner: 'nobody' },
  { done: false },
  { done: { $ne: true } },
  { n: { $gt: 2, $lte: 7.5 } },
  { n: { $in: [3, '7', -1] } },
  { n: { $nin: [3] } },
  { tags: 'y' },
  { tags: { $size: 0 } },
  { tags: { $exists: false } },
  { when: { $gt: new Date(2000) } },
  { when: new Date(1000) },
  { 'nested.k': 'v' },
  { title: null },
  { title: { $regex: '^a', $options: 'i' } },
  { $or: [{ owner: 'u2' }, { done: false }] },
  { $nor: [{ owner: 'u1' }] },
  { $and: [{ owner: 'u1' }, { done: true }] },
];

describe('embedded engine: by id among other conditions', () => {
  let dir: string;
  let store: Store;
  let coll: StoreCollection;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-engine-named-'));
    store = await createEngineStore({ dir });
    coll = store.collection('things');
    await coll.ensureIndex({ field: 'owner' });
    for (const doc of DOCS) await coll.insert(doc);
  });

  afterAll(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const filtersOf = (id: string, condition: Filter): Filter[] => [
    { id, ...condition },
    { $and: [{ id }, condition] },
    { $and: [condition, { id }] },
    { ...condition, $and: [{ id }] },
  ];

  it('findOne answers what find answers, for every id (one missing) and condition', async () => {
    let found = 0;
    for (const id of ['a', 'b', 'c', 'd', 'missing']) {
      for (const condition of CONDITIONS) {
        for (const filter of filtersOf(id, condition)) {
          const planned = (await coll.find(filter))[0] ?? null;
          expect(await coll.findOne(filter), JSON.stringify(filter)).toEqual(planned);
          if (planned !== null) found++;
        }
      }
    }
    // Both answers were seen: some filters match, most do not.
    expect(found).toBeGreaterThan(20);
  });

  it('update changes the object only when it matches the whole filter', async () => {
    for (const id of ['a', 'b', 'c', 'd', 'missing']) {
      for (const condition of CONDITIONS) {
        const filter: Filter = { $and: [{ id }, condition] };
        const matches = (await coll.find(filter)).length === 1;
        const updated = await coll.update(filter, { $inc: { seen: 1 } });
        expect(updated !== null, JSON.stringify(filter)).toBe(matches);
        if (updated !== null) expect(updated.id).toBe(id);
      }
    }
    // Each object counted once per condition it matched, and nothing else changed.
    for (const doc of DOCS) {
      let expected = 0;
      for (const condition of CONDITIONS) if ((await coll.find({ $and: [{ id: doc.id }, condition] })).length === 1) expected++;
      const now = await coll.findOne({ id: doc.id as string });
      expect(now?.seen ?? 0).toBe(expected);
      expect({ ...now, seen: undefined }).toEqual({ ...doc, seen: undefined });
    }
  });
});

describe('embedded engine: remove by id among other conditions', () => {
  let dir: string;
  let store: Store;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-engine-named-rm-'));
    store = await createEngineStore({ dir });
  });

  afterAll(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('removes the object only when it matches the whole filter, and it is gone from every read (its kept text too)', async () => {
    let n = 0;
    for (const condition of CONDITIONS) {
      for (const doc of DOCS) {
        // A collection of its own for each case: the same objects each time.
        const coll = store.collection(`rm${n++}`);
        await coll.ensureIndex({ field: 'owner' });
        for (const d of DOCS) await coll.insert(d);
        const id = doc.id as string;
        // Read by id first: the text is kept (HotTexts), and must not outlive the remove.
        expect(await coll.findOneJson?.(id)).not.toBeNull();
        // And the whole list, twice: its rows are kept as a list, which the remove must drop.
        for (let i = 0; i < 2; i++) expect(await coll.findJson?.({})).toContain(`"id":"${id}"`);
        const filter: Filter = { $and: [{ id }, condition] };
        const matches = (await coll.find(filter)).length;
        expect(await coll.remove(filter), JSON.stringify(filter)).toBe(matches);
        expect(await coll.findOne({ id }), JSON.stringify(filter)).toEqual(matches === 1 ? null : expect.objectContaining({ id }));
        expect(await coll.findOneJson?.(id)).toEqual(matches === 1 ? null : expect.any(String));
        expect((await coll.find({})).map((d) => d.id)).toEqual(DOCS.map((d) => d.id).filter((x) => matches === 0 || x !== id));
        expect((JSON.parse((await coll.findJson?.({})) ?? '[]') as Doc[]).map((d) => d.id)).toEqual(DOCS.map((d) => d.id).filter((x) => matches === 0 || x !== id));
      }
    }
  });

  it('removes by id alone, and a missing id removes nothing', async () => {
    const coll = store.collection('rm-alone');
    for (const d of DOCS) await coll.insert(d);
    expect(await coll.findOneJson?.('b')).toEqual(expect.any(String));
    expect(await coll.remove({ id: 'missing' })).toBe(0);
    expect(await coll.remove({ id: 'b' })).toBe(1);
    expect(await coll.findOneJson?.('b')).toBeNull();
    expect(await coll.remove({ id: 'b' })).toBe(0);
    expect((await coll.find({})).map((d) => d.id)).toEqual(['a', 'c', 'd']);
  });
});
