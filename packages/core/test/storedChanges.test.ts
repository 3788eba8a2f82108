import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GetChanges } from '../src/resources/events.js';
import { listFromChanges, memberSpan } from '../src/resources/storedChanges.js';
import { hideFrom } from '../src/resources/updates.js';

// A list with On Get answered from the stored texts and each run's changes (storedChanges.ts) must
// be, byte for byte, what the object path answers: the object with the changes set and deleted in
// place, its hidden properties removed, serialised. Checked for any objects and changes, with the
// store's spans known, unknown (-2) or absent (-1).

/** The object path: what runGetBatch's outcome serialised answers. */
function reference(text: string, change: GetChanges): string {
  const object = JSON.parse(text) as Record<string, unknown>;
  for (let k = 0; k < change.assigned.length; k++) {
    const key = change.assigned[k] as string;
    if (key === '__proto__') Object.defineProperty(object, key, { value: change.values[k], enumerable: true, writable: true, configurable: true });
    else object[key] = change.values[k];
  }
  for (const key of change.deleted) delete object[key];
  return JSON.stringify(hideFrom(object, change.hidden));
}

/** The store's spans for `keys`: exact where found, -1 where absent, or all unknown. */
function spansOf(texts: string[], keys: string[], known: boolean): Int32Array {
  const spans = new Int32Array(texts.length * keys.length * 2).fill(-2);
  if (!known) return spans;
  texts.forEach((text, i) => {
    keys.forEach((key, k) => {
      const span = memberSpan(text, key);
      const at = (i * keys.length + k) * 2;
      spans[at] = span === undefined ? -2 : span[0] < 0 ? -1 : (span[1] as number);
      spans[at + 1] = span === undefined ? -2 : span[0] < 0 ? -1 : (span[2] as number);
    });
  });
  return spans;
}

const names = ['id', 'a', 'b', 'title', 'seen', '0', '7', '12', '01', '__proto__', 'constructor', 'we"ird', 'é\u2028', '', 'x,y', '{}'];
const json: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ maxDepth: 3 }, fc.constantFrom(null, true, false, 0, -1.5, 1e21, 'a', 'a "b": c', '}', ',"a":1'), fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(fc.constantFrom(...names), tie('value'), { maxKeys: 3 })),
})).value;
const object = fc.dictionary(fc.constantFrom(...names), json, { maxKeys: 8 });
const change = fc.record({
  set: fc.dictionary(fc.constantFrom(...names), json, { maxKeys: 3 }),
  deleted: fc.uniqueArray(fc.constantFrom(...names), { maxLength: 3 }),
  hidden: fc.uniqueArray(fc.constantFrom(...names), { maxLength: 3 }),
  cancelled: fc.boolean(),
  share: fc.boolean(),
});

describe('listFromChanges', () => {
  it('answers what serialising each changed object answers, for any objects and changes', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(object, change), { maxLength: 6 }), fc.boolean(), (rows, known) => {
        // Stored objects are JSON texts of objects (own "__proto__" included, as JSON.parse makes it).
        const texts = rows.map(([o]) => JSON.stringify(JSON.parse(JSON.stringify(o)) as unknown));
        const changes: (GetChanges | null)[] = [];
        rows.forEach(([, c], i) => {
          // Runs with the same outcome share one change object (the runtime's repeats).
          const previous = changes[i - 1];
          if (c.share && previous !== undefined && previous !== null) return changes.push(previous);
          if (c.cancelled) return changes.push(null);
          const assigned = Object.keys(c.set).filter((key) => !c.deleted.includes(key));
          return changes.push({ assigned, values: assigned.map((key) => c.set[key]), deleted: c.deleted, hidden: c.hidden });
        });
        const keys = [...new Set(changes.flatMap((c) => (c === null ? [] : [...c.assigned, ...c.deleted])))];
        const answer = listFromChanges({ texts, values: [], spans: spansOf(texts, keys, known) }, keys, changes);
        const expected = `[${texts.flatMap((text, i) => (changes[i] ? [reference(text, changes[i])] : [])).join(',')}]`;
        expect(answer).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('splices the usual cases and keeps a changed property in its place', () => {
    const texts = ['{"id":"a","n":1,"tags":["x"]}', '{"id":"b","n":2}', '{}', '{"id":"d","n":4}'];
    const keys = ['n', 'tags', 'seen'];
    const changes: (GetChanges | null)[] = [
      { assigned: ['n', 'seen'], values: [2, true], deleted: [], hidden: [] },
      { assigned: [], values: [], deleted: ['n'], hidden: ['id'] },
      { assigned: ['seen'], values: [true], deleted: [], hidden: [] },
      null,
    ];
    expect(listFromChanges({ texts, values: [], spans: spansOf(texts, keys, true) }, keys, changes)).toBe('[{"id":"a","n":2,"tags":["x"],"seen":true},{},{"seen":true}]');
  });

  it('puts a new array-index property first, as the object path does', () => {
    const texts = ['{"id":"a"}'];
    const change: GetChanges = { assigned: ['5', 'b'], values: ['five', 1], deleted: [], hidden: [] };
    expect(listFromChanges({ texts, values: [], spans: spansOf(texts, ['5', 'b'], true) }, ['5', 'b'], [change])).toBe('[{"5":"five","id":"a","b":1}]');
  });

  it('finds top-level members only', () => {
    const text = '{"a":{"b":1,"c":"}\\""},"b":[1,{"b":2}],"c":"\\"b\\":"}';
    expect(memberSpan(text, 'b')).toEqual([23, 27, 38]);
    expect(memberSpan(text, 'c')).toEqual([39, 43, text.length - 1]);
    expect(memberSpan(text, 'd')).toEqual([-1, -1, -1]);
    expect(memberSpan('[1]', 'a')).toBeUndefined();
  });
});
