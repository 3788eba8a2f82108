import { describe, expect, it } from 'vitest';
import { HotTexts } from '../../../src/store/embedded/hotTexts.js';

// The engine's texts read lately (GET by id, list pages): at most MAX_BYTES, the oldest let go
// first, an entry dropped by a write never answered again.
const key = (i: number): string => `k${String(i).padStart(6, '0')}`;
const text = (i: number): string => `{"id":"${key(i)}","title":"${'x'.repeat(1000)}"}`;
const PER = text(0).length + key(0).length;

describe('HotTexts', () => {
  it('keeps at most MAX_BYTES of texts, letting the oldest go first', () => {
    const hot = new HotTexts();
    const fit = Math.floor(HotTexts.MAX_BYTES / PER);
    for (let i = 0; i < fit * 3; i++) hot.set(i, key(i), text(i));
    // The newest `fit` are kept, the older ones gone.
    for (let i = fit * 2; i < fit * 3; i++) expect(hot.byId(key(i))).toBe(text(i));
    for (let i = 0; i < fit * 2; i += 97) expect(hot.byId(key(i))).toBeUndefined();
    expect(hot.bySeq(fit * 3 - 1)).toBe(text(fit * 3 - 1));
  });

  it('lets go of an entry by when it was last kept: one written again is the newest', () => {
    const hot = new HotTexts();
    const fit = Math.floor(HotTexts.MAX_BYTES / PER);
    for (let i = 0; i < fit - 10; i++) hot.set(i, key(i), text(i));
    // 0 is dropped (an update) and kept again: now the newest; 1 stays the oldest.
    hot.delete(0, key(0));
    expect(hot.byId(key(0))).toBeUndefined();
    hot.set(0, key(0), text(0));
    for (let i = fit - 10; i < fit + 20; i++) hot.set(i, key(i), text(i));
    expect(hot.byId(key(1))).toBeUndefined();
    expect(hot.byId(key(0))).toBe(text(0));
    // Replaced under the same row (an update read again): the new text, once.
    hot.set(5000, key(5000), 'old');
    hot.set(5000, key(5000), text(5000));
    expect(hot.byId(key(5000))).toBe(text(5000));
  });

  it('stays right through many drops and reads again of few objects, and after clear', () => {
    const hot = new HotTexts();
    for (let round = 0; round < 20_000; round++) {
      const i = round % 7;
      hot.set(i, key(i), text(i));
      if (round % 3 === 0) hot.delete(undefined, key(i));
    }
    for (let i = 0; i < 7; i++) expect([text(i), undefined]).toContain(hot.byId(key(i)));
    hot.clear();
    expect(hot.byId(key(1))).toBeUndefined();
    const fit = Math.floor(HotTexts.MAX_BYTES / PER);
    for (let i = 0; i < fit + 5; i++) hot.set(i, key(i), text(i));
    expect(hot.byId(key(0))).toBeUndefined();
    expect(hot.byId(key(fit + 4))).toBe(text(fit + 4));
  });

  it('keeps findTexts facts with a text: for the same names only, of that text only, gone with the entry, counted in the bound', () => {
    const hot = new HotTexts();
    const names = ['title', 'done'];
    hot.set(1, key(1), text(1));
    hot.keepPicked(1, text(1), names, [-1, -1, -1, -1, undefined, undefined], 96);
    expect(hot.picked(1, text(1), names)).toEqual([-1, -1, -1, -1, undefined, undefined]);
    expect(hot.picked(1, text(1), ['title', 'done'])).toBeDefined();
    expect(hot.picked(1, text(1), ['done', 'title'])).toBeUndefined();
    expect(hot.picked(1, text(1), ['title'])).toBeUndefined();
    // Another text under the row (not what was kept): nothing.
    expect(hot.picked(1, text(2), names)).toBeUndefined();
    hot.keepPicked(2, text(2), names, [], 96); // no entry for row 2: not kept
    expect(hot.picked(2, text(2), names)).toBeUndefined();
    hot.delete(1, key(1));
    expect(hot.picked(1, text(1), names)).toBeUndefined();
    hot.set(1, key(1), text(1));
    expect(hot.picked(1, text(1), names)).toBeUndefined();
    // The facts' bytes count: big facts on the newest rows push the oldest rows out.
    const fit = Math.floor(HotTexts.MAX_BYTES / PER);
    for (let i = 0; i < fit; i++) hot.set(i, key(i), text(i));
    expect(hot.byId(key(0))).toBe(text(0));
    for (let i = fit - 10; i < fit; i++) hot.keepPicked(i, text(i), names, [], PER * 2);
    expect(hot.byId(key(0))).toBeUndefined();
    expect(hot.picked(fit - 1, text(fit - 1), names)).toEqual([]);
  });
});
