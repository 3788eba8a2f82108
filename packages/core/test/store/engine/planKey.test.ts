import { describe, expect, it } from 'vitest';
import { exactValues, planKey } from '../../../src/store/embedded/executor.js';
import type { Filter } from '../../../src/store/Store.js';

/** The key as the replacer alone writes it (planKey before its shortcut for plain filters). */
function replacerKey(filter: Filter, sort: Record<string, 1 | -1> | undefined, ranked: boolean): string {
  return JSON.stringify([filter, sort ?? 0, ranked], exactValues);
}

const withToJson = { toJSON: () => ({ $d: 5 }) };
const FILTERS: Filter[] = [
  {},
  { done: false },
  { owner: 'u1', done: false, n: { $gt: 3, $lte: 9.5 } },
  { id: { $in: ['a', 'b', 'c'] } },
  { tags: { $all: ['x', null] }, 'a.b': { $exists: true } },
  { $or: [{ n: 1 }, { n: { $ne: null } }], $and: [{ s: { $nin: [1, 'x', false] } }] },
  { when: new Date(5) },
  { when: { $gt: new Date(0), $lt: '1970-01-01T00:00:00.005Z' } },
  { s: /ab+c/i },
  { s: { $regex: /x/ } },
  { n: Number.NaN },
  { n: Number.POSITIVE_INFINITY },
  { n: null },
  { n: undefined },
  { list: [1, undefined, 2] },
  { deep: { a: { b: { c: [new Date(1)] } } } },
  { odd: withToJson as unknown as string },
  { made: Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 }) },
];

describe('planKey', () => {
  it('writes the key the replacer writes, for plain filters and for every value JSON would confuse', () => {
    for (const filter of FILTERS) {
      const sorts: (Record<string, 1 | -1> | undefined)[] = [undefined, { n: 1 }, { n: -1, s: 1 }];
      for (const sort of sorts) {
        for (const ranked of [false, true]) expect(planKey(filter, { sort }, ranked)).toBe(replacerKey(filter, sort, ranked));
      }
    }
  });

  it('tells apart what JSON alone would confuse', () => {
    const keys = [{ n: null }, { n: Number.NaN }, { n: undefined }, {}, { when: new Date(5) }, { when: '1970-01-01T00:00:00.005Z' }, { s: /x/ }, { s: {} }].map((f) => planKey(f as Filter, {}, false));
    expect(new Set(keys).size).toBe(keys.length);
  });
});
