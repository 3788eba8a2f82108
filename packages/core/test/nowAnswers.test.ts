import { describe, expect, it } from 'vitest';
import { NowAnswers } from '../src/resources/nowAnswers.js';

describe('NowAnswers', () => {
  it('answers only for the stored text the answer was made from', () => {
    const kept = new NowAnswers();
    kept.set('a', '{"id":"a","n":1}', '{"id":"a","n":1,"seen":true}');
    expect(kept.get('a', '{"id":"a","n":1}')).toBe('{"id":"a","n":1,"seen":true}');
    // Equal text made anew (another string object): the same answer.
    expect(kept.get('a', ['{"id":"a",', '"n":1}'].join(''))).toBe('{"id":"a","n":1,"seen":true}');
    expect(kept.get('a', '{"id":"a","n":2}')).toBeUndefined();
    expect(kept.get('b', '{"id":"a","n":1}')).toBeUndefined();
    kept.set('a', '{"id":"a","n":2}', '{"id":"a","n":2,"seen":true}');
    expect(kept.get('a', '{"id":"a","n":1}')).toBeUndefined();
    expect(kept.get('a', '{"id":"a","n":2}')).toBe('{"id":"a","n":2,"seen":true}');
    expect(kept.size).toBe(1);
  });

  it('stays within its characters, the oldest dropped first', () => {
    const kept = new NowAnswers(100);
    for (let i = 0; i < 10; i++) kept.set(`id${i}`, 'x'.repeat(10), 'y'.repeat(10));
    expect(kept.characters).toBeLessThanOrEqual(100);
    expect(kept.size).toBe(5);
    expect(kept.get('id4', 'x'.repeat(10))).toBeUndefined();
    expect(kept.get('id5', 'x'.repeat(10))).toBe('y'.repeat(10));
    // Replacing one counts its old size out.
    kept.set('id9', 'x'.repeat(10), 'z'.repeat(10));
    expect(kept.characters).toBe(100);
    expect(kept.get('id5', 'x'.repeat(10))).toBe('y'.repeat(10));
    // One too large for the whole bound is not kept, and drops nothing.
    kept.set('big', 'x'.repeat(60), 'y'.repeat(60));
    expect(kept.get('big', 'x'.repeat(60))).toBeUndefined();
    expect(kept.size).toBe(5);
  });
});
