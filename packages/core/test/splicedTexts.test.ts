import { describe, expect, it } from 'vitest';
import { SplicedTexts } from '../src/relations/splicedTexts.js';

// The memo of `$expand`'s spliced texts (relations/splicedTexts.ts): a hit only for the same text
// with the same edits (compared by value), and never more characters held than two generations.

describe('SplicedTexts', () => {
  const post = '{"id":"p1","author":"a1"}';
  const ann = '{"id":"a1","name":"ann"}';

  it('answers a kept splice only for the same text with the same edits', () => {
    const memo = new SplicedTexts();
    const out = `{"id":"p1","author":${ann}}`;
    memo.set(post, [20, 24, ann], undefined, out);
    // The same edits, even as other strings of the same characters: the same answer.
    expect(memo.get(post, [20, 24, ann], undefined)).toBe(out);
    expect(memo.get(`{"id":"p1",${'"author":"a1"}'}`, [20, 24, `{"id":"a1",${'"name":"ann"}'}`], undefined)).toBe(out);
    // Another related text (the author changed, or this caller sees null), another place, an
    // appended property, another text: no answer.
    expect(memo.get(post, [20, 24, '{"id":"a1","name":"bea"}'], undefined)).toBeUndefined();
    expect(memo.get(post, [20, 24, 'null'], undefined)).toBeUndefined();
    expect(memo.get(post, [20, 25, ann], undefined)).toBeUndefined();
    expect(memo.get(post, [20, 24, ann], ['"x":[]'])).toBeUndefined();
    expect(memo.get(post, [20, 24, ann, 5, 6, 'null'], undefined)).toBeUndefined();
    expect(memo.get('{"id":"p2","author":"a1"}', [20, 24, ann], undefined)).toBeUndefined();
    // getOne is get of one replaced value: the same answers.
    expect(memo.getOne(post, 20, 24, ann, undefined)).toBe(out);
    expect(memo.getOne(post, 20, 24, 'null', undefined)).toBeUndefined();
    expect(memo.getOne(post, 20, 25, ann, undefined)).toBeUndefined();
    expect(memo.getOne(post, 20, 24, ann, ['"x":[]'])).toBeUndefined();
    // Several replaced values, and only appended ones, are kept and compared too.
    const two = `{"id":"p1","author":${ann},"editor":null}`;
    memo.set(post, [20, 24, ann, 30, 34, 'null'], undefined, two);
    expect(memo.get(post, [20, 24, ann, 30, 34, 'null'], undefined)).toBe(two);
    expect(memo.get(post, [20, 24, ann, 30, 34, ann], undefined)).toBeUndefined();
    expect(memo.get(post, [20, 24, ann], undefined)).toBeUndefined();
    expect(memo.getOne(post, 20, 24, ann, undefined)).toBeUndefined();
    memo.set(post, undefined, ['"x":[]'], '{"id":"p1","author":"a1","x":[]}');
    expect(memo.get(post, undefined, ['"x":[]'])).toBe('{"id":"p1","author":"a1","x":[]}');
    expect(memo.get(post, undefined, ['"x":[1]'])).toBeUndefined();
    expect(memo.get(post, undefined, undefined)).toBeUndefined();
    // A new splice of the same text replaces the kept one.
    memo.set(post, [20, 24, 'null'], undefined, '{"id":"p1","author":null}');
    expect(memo.get(post, [20, 24, 'null'], undefined)).toBe('{"id":"p1","author":null}');
    expect(memo.get(post, [20, 24, ann], undefined)).toBeUndefined();
  });

  it('holds at most two generations of its budget, the recently used ones', () => {
    const budget = 10_000;
    const memo = new SplicedTexts(budget);
    const text = (i: number): string => `{"id":"${String(i).padStart(40, '0')}","author":"a"}`;
    for (let i = 0; i < 1000; i++) {
      memo.set(text(i), [0, 1, 'x'], undefined, `${text(i)}!`);
      expect(memo.chars).toBeLessThanOrEqual(2 * budget);
      // One text used all along stays (a hit in the older generation moves it to the younger one).
      if (i === 0 || memo.get(text(0), [0, 1, 'x'], undefined) === undefined) memo.set(text(0), [0, 1, 'x'], undefined, 'kept');
    }
    expect(memo.get(text(0), [0, 1, 'x'], undefined)).toBe('kept');
    expect(memo.get(text(1), [0, 1, 'x'], undefined)).toBeUndefined();
    expect(memo.get(text(999), [0, 1, 'x'], undefined)).toBe(`${text(999)}!`);
    // An entry larger than the budget is not kept.
    const huge = 'y'.repeat(budget);
    memo.set(huge, undefined, ['"z":1'], `${huge}!`);
    expect(memo.get(huge, undefined, ['"z":1'])).toBeUndefined();
  });
});
