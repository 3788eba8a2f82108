import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AggregateSpec, Doc, Filter, Store } from '../../../src/store/Store.js';
import { groupRows } from '../../../src/store/internal/groupRows.js';
import { createEngineStore } from '../../../src/store/embedded/index.js';

// Issue 41: aggregates in the engine run as one GROUP BY where SQL means what groupRows means (an
// exact filter, grouped and measured properties of one scalar kind): the same answers as grouping
// the same objects in the process, for random objects and specs; and where it does not (mixed
// kinds, arrays), the process groups them.

let seed = 41;
const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;

function spec(overrides: Partial<AggregateSpec>): AggregateSpec {
  return { group: [], count: false, sum: [], avg: [], min: [], max: [], limit: 1000, timeoutMs: 60_000, maxScanned: 1_000_000, ...overrides };
}

describe('aggregates of the embedded engine', () => {
  let dir: string;
  let store: Store;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-engine-agg-'));
    store = await createEngineStore({ dir });
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers what grouping in the process answers, for random objects, filters and specs', async () => {
    const plain = store.collection('plain');
    const mixed = store.collection('mixed');
    await plain.ensureIndex({ field: 'city' });
    const docs: Doc[] = [];
    for (let i = 0; i < 400; i++) {
      const doc: Doc = { id: `d${i}`, city: pick(['Oslo', 'Bergen', 'Århus', null, undefined]), n: pick([1, 2, 2.5, -3, 10, null, undefined]), flag: pick([true, false, null, undefined]), word: pick(['a', 'b', 'zz', 'É', undefined]) };
      for (const key of Object.keys(doc)) if (doc[key] === undefined) delete doc[key];
      docs.push(doc);
    }
    for (const doc of docs) await plain.insert(doc);
    // Mixed kinds in n and city: grouped in the process.
    for (const doc of docs) await mixed.insert({ ...doc, ...(random() < 0.2 ? { n: 'seven', city: 7 } : {}), ...(random() < 0.1 ? { word: ['x'] } : {}) });
    const filters: Filter[] = [{}, { city: 'Oslo' }, { n: { $gt: 1 } }, { flag: true }, { city: { $in: ['Oslo', 'Bergen'] }, n: { $ne: null } }, { word: { $regex: /^z/ } }, { city: 'nowhere' }];
    const fields = ['city', 'n', 'flag', 'word', 'id', 'missing'];
    for (let round = 0; round < 60; round++) {
      const s = spec({
        group: Array.from({ length: Math.floor(random() * 3) }, () => pick(fields)).filter((f, i, all) => all.indexOf(f) === i),
        count: random() < 0.7,
        sum: random() < 0.5 ? ['n'] : [],
        avg: random() < 0.5 ? [pick(['n', 'flag'])] : [],
        min: random() < 0.5 ? [pick(['n', 'word', 'flag', 'city'])] : [],
        max: random() < 0.5 ? [pick(['n', 'word', 'flag', 'city'])] : [],
      });
      const filter = pick(filters);
      for (const coll of [plain, mixed]) {
        const inProcess = groupRows(await coll.find(filter), spec({ ...s }), { started: Date.now(), idKey: 'id' });
        expect(await coll.aggregate?.(filter, s), `${coll.name} ${JSON.stringify(s)} ${JSON.stringify(filter)}`).toEqual(inProcess);
      }
    }
  });

  it('counts before grouping: more matches than maxScanned is refused', async () => {
    const c = store.collection('c');
    for (let i = 0; i < 20; i++) await c.insert({ id: `x${i}`, g: i % 3 });
    await expect(c.aggregate?.({}, spec({ group: ['g'], count: true, maxScanned: 10 }))).rejects.toMatchObject({ name: 'AggregateScanError', scanned: 20 });
    expect(await c.aggregate?.({ g: 1 }, spec({ group: ['g'], count: true, maxScanned: 10 }))).toEqual([{ group: { g: 1 }, count: 7 }]);
    expect(await c.aggregate?.({ g: 9 }, spec({ count: true }))).toEqual([]);
    expect(await c.aggregate?.({}, spec({ count: true, sum: ['g'] }))).toEqual([{ group: {}, count: 20, sum: { g: 19 } }]);
  });
});
