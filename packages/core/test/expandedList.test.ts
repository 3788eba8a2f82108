import { describe, expect, it } from 'vitest';
import { ExpandedList } from '../src/relations/expandedList.js';
import { jsonList } from '../src/jsonList.js';

// The kept join of a collection's last `$expand` answer (relations/expandedList.ts): for any
// sequence of lists, the same string jsonList makes of each, whether the kept answer was used or not.

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('ExpandedList', () => {
  it('answers what jsonList answers, for random lists asked again, changed, shortened and lengthened', () => {
    const next = random(25);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
    // Texts as the splice memo answers them (the same strings again) and as new strings of the
    // same characters, beside others; `null` as a hidden object's place, and non-ASCII text.
    const pool = ['{"id":"a"}', '{"id":"b","author":{"id":"x","name":"ann"}}', '{"id":"c","author":null}', '{"id":"é","t":"\u{1F600}"}', '{}'];
    const list = (): string[] => Array.from({ length: Math.floor(next() * 6) }, () => (next() < 0.5 ? pick(pool) : `${pick(pool).slice(0, -1)}}`));
    const joined = new ExpandedList();
    let last: string[] = list();
    for (let round = 0; round < 2000; round++) {
      const r = next();
      // Mostly the last list again (as its own copy), else one text changed, one more or one fewer, or another list.
      let texts = r < 0.5 ? [...last] : r < 0.7 ? last.map((t, i) => (i === 0 ? pick(pool) : t)) : r < 0.8 ? [...last, pick(pool)] : r < 0.9 ? last.slice(1) : list();
      if (texts.length === 0 && next() < 0.5) texts = [];
      last = [...texts];
      const answer = joined.join([...texts]);
      expect(answer).toBe(jsonList([...texts]));
      expect(JSON.parse(answer)).toEqual(last.map((t) => JSON.parse(t)));
    }
  });

  it('an empty list is `[]`, and a list after it is joined anew', () => {
    const joined = new ExpandedList();
    expect(joined.join([])).toBe('[]');
    expect(joined.join([])).toBe('[]');
    expect(joined.join(['{"id":"a"}'])).toBe('[{"id":"a"}]');
    expect(joined.join(['{"id":"a"}'])).toBe('[{"id":"a"}]');
    expect(joined.join(['{"id":"a"}', '{"id":"b"}'])).toBe('[{"id":"a"},{"id":"b"}]');
    expect(joined.join(['{"id":"a"}', 'null'])).toBe('[{"id":"a"},null]');
    expect(joined.join([])).toBe('[]');
  });
});
