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
