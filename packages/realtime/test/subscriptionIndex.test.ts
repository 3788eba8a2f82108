import { describe, expect, it } from 'vitest';
import { matchesFilter } from '@svc/core';
import type { Filter } from '@svc/core';
import { SubscriptionIndex, equalityOf } from '../src/internal/live/SubscriptionIndex.js';

describe('equalityOf: the equality a filter requires', () => {
  it.each<[string, Filter, ReturnType<typeof equalityOf>]>([
    ['a top-level equality', { owner: 'u1', done: false }, { field: 'owner', value: 'u1' }],
    ['$eq', { owner: { $eq: 'u1' } }, { field: 'owner', value: 'u1' }],
    ['inside a top-level $and (rules are ANDed so)', { $and: [{ title: { $regex: 'x' } }, { owner: 'u2' }] }, { field: 'owner', value: 'u2' }],
    ['none in $or', { $or: [{ owner: 'u1' }, { owner: 'u2' }] }, undefined],
    ['null is no equality (it matches a missing property too)', { owner: null }, undefined],
    ['a dotted path is not indexed', { 'meta.owner': 'u1' }, undefined],
    ['an operator is not an equality', { n: { $gt: 1 } }, undefined],
  ])('%s', (_name, filter, expected) => {
    expect(equalityOf(filter)).toEqual(expected);
  });
});

describe('SubscriptionIndex: a write is matched only against the subscriptions it can concern', () => {
  const filters: Record<string, Filter> = {
    a: { owner: 'u1' },
    b: { owner: 'u2' },
    c: { $and: [{ owner: 'u1' }, { done: false }] },
    d: { done: true },
    e: { n: 3 },
  };
  const index = new SubscriptionIndex<string>();
  for (const [name, filter] of Object.entries(filters)) index.add(name, filter);

  it.each<[string, Record<string, unknown> | undefined, Record<string, unknown> | undefined]>([
    ['a create', { owner: 'u1', done: false, n: 1 }, undefined],
    ['an update moving an object between owners', { owner: 'u2', n: 3 }, { owner: 'u1', n: 3 }],
    ['an array property', { owner: ['u1', 'u2'] }, undefined],
    ['a delete', undefined, { owner: 'u2', done: true }],
    ['an object with no indexed value', { title: 'x' }, undefined],
  ])('%s: every subscription that matches before or after is a candidate', (_name, now, before) => {
    const candidates = new Set(index.candidates(now, before));
    for (const [name, filter] of Object.entries(filters)) {
      const concerned = (now !== undefined && matchesFilter(now, filter)) || (before !== undefined && matchesFilter(before, filter));
      if (concerned) expect(candidates.has(name), name).toBe(true);
    }
    // Those indexed on another owner are not.
    if (now?.owner === 'u1' && before === undefined) expect(candidates.has('b')).toBe(false);
  });

  it('removes and re-adds (a subscription whose filter changed)', () => {
    const one = new SubscriptionIndex<string>();
    one.add('x', { owner: 'u1' });
    expect(one.candidates({ owner: 'u1' }, undefined)).toEqual(['x']);
    one.add('x', { owner: 'u9' });
    expect(one.candidates({ owner: 'u1' }, undefined)).toEqual([]);
    expect(one.candidates({ owner: 'u9' }, undefined)).toEqual(['x']);
    one.remove('x');
    expect(one.size).toBe(0);
    expect(one.candidates({ owner: 'u9' }, undefined)).toEqual([]);
  });
});
