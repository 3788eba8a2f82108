import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SwapSet } from '../src/http/swapSet.js';

// ConnectionDrain keeps the answers in flight and the open connections in a SwapSet instead of a
// Set (see swapSet.ts for the measured reason): it must answer as a Set would, for any sequence.

describe('SwapSet', () => {
  it('answers size, has and iteration as a Set does, for any adds and deletes', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 15 })), { maxLength: 200 }), (steps) => {
        const members = Array.from({ length: 16 }, (_, i) => ({ i }));
        const model = new Set<{ i: number }>();
        const set = new SwapSet<{ i: number }>();
        for (const [add, i] of steps) {
          const member = members[i] as { i: number };
          if (add) {
            model.add(member);
            set.add(member);
          } else {
            expect(set.delete(member)).toBe(model.delete(member));
          }
          expect(set.size).toBe(model.size);
          for (const m of members) expect(set.has(m)).toBe(model.has(m));
          expect(new Set(set)).toEqual(model);
        }
      }),
    );
  });

  it('lets a member be deleted while iterating (the drain closes sockets as it walks them)', () => {
    const set = new SwapSet<{ i: number }>();
    const members = Array.from({ length: 5 }, (_, i) => ({ i }));
    for (const m of members) set.add(m);
    const seen: number[] = [];
    for (const m of set) {
      seen.push(m.i);
      set.delete(m);
    }
    expect(seen.sort()).toEqual([0, 1, 2, 3, 4]);
    expect(set.size).toBe(0);
  });

  it('keeps members of two sets apart (each set has its own slot)', () => {
    const a = new SwapSet<object>();
    const b = new SwapSet<object>();
    const shared = {};
    a.add({});
    a.add(shared);
    b.add(shared);
    expect(b.delete(shared)).toBe(true);
    expect(a.has(shared)).toBe(true);
    expect(a.size).toBe(2);
  });
});
