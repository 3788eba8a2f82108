import { describe, expect, it } from 'vitest';
import { filterKeys, keepAllowed, pickWith } from '../src/resources/read/rowsAllowed.js';

// Issue 39 (6): `$expand` reads related objects by id at once also for a caller whose list rule
// limits them (an owner rule): the values the rule tests are read beside the texts and the rows it
// refuses are dropped, as the store query ANDed with the rule would drop them.

describe('related reads by id under a list rule', () => {
  it('filterKeys names the top-level properties a filter tests, through $and/$or/$nor; anything else is not testable', () => {
    expect(filterKeys({ owner: 'u1' })).toEqual(['owner']);
    expect(filterKeys({ $or: [{ owner: 'u1' }, { 'meta.public': true }], $nor: [{ hidden: true }] })).toEqual(['owner', 'meta', 'hidden']);
    expect(filterKeys({ id: { $in: [] } })).toEqual(['id']);
    expect(filterKeys({ $where: 'x' })).toBeUndefined();
  });

  it('pickWith appends what the filter tests and is missing, one list per set of names (bounded)', () => {
    const lists = new Map<string, readonly string[]>();
    const pick = ['id', 'author'];
    expect(pickWith(pick, ['author'], lists)).toBe(pick);
    const all = pickWith(pick, ['owner'], lists);
    expect(all).toEqual(['id', 'author', 'owner']);
    expect(pickWith(pick, ['owner'], lists)).toBe(all);
    for (let i = 0; i < 100; i++) pickWith(pick, [`k${i}`], lists);
    expect(lists.size).toBeLessThanOrEqual(64);
  });

  it('keepAllowed drops the refused rows, keeps the values and spans of the pick alone, and renumbers listedRows', () => {
    const all = ['id', 'owner'];
    const found = {
      texts: ['{"id":"a","owner":"u1"}', '{"id":"b","owner":"u2"}', '{"id":"c"}'],
      values: ['a', 'u1', 'b', 'u2', 'c', undefined],
      spans: [-2, -2, 16, 20, -2, -2, 16, 20, -2, -2, -1, -1],
      listedRows: [1, 0, -1, 2, 0],
    };
    const kept = keepAllowed(found, all, 1, { owner: 'u1' }, ['owner']);
    expect(kept.texts).toEqual(['{"id":"a","owner":"u1"}']);
    expect(kept.values).toEqual(['a']);
    expect(Array.from(kept.spans)).toEqual([-2, -2]);
    expect(kept.listedRows).toEqual([-1, 0, -1, -1, 0]);
    // A rule on a property an object lacks: {owner: {$exists: false}} keeps exactly that one.
    expect(keepAllowed(found, all, 1, { owner: { $exists: false } }, ['owner']).texts).toEqual(['{"id":"c"}']);
  });
});
