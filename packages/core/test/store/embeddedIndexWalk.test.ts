import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../../src/store/embeddedStore.js';

// A sort on an indexed property is answered by walking the index (stopping at the limit, skipping
// below a $gt/$lt bound). It must answer exactly what the same query answers without the index,
// across types, missing values, ties, updates and removals, and fall back when arrays are stored.

const value = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -5, max: 5 }) },
  fc.double({ min: -10, max: 10, noNaN: true }),
  fc.constantFrom('', 'a', 'B', 'b', '10'),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.record({ x: fc.integer({ min: 0, max: 2 }) }),
);
const withArrays = fc.oneof(value, fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }));
const bound = fc.oneof(fc.integer({ min: -6, max: 6 }), fc.constantFrom('a', 'b', ''));
const query = fc.oneof(
  fc.constant({}),
  fc.record({ done: fc.boolean() }),
  bound.map((v) => ({ n: { $gt: v } })),
  bound.map((v) => ({ n: { $gte: v } })),
  bound.map((v) => ({ n: { $lt: v } })),
  fc.tuple(bound, fc.boolean()).map(([v, done]) => ({ n: { $lte: v }, done })),
  fc.tuple(fc.integer({ min: -6, max: 0 }), fc.integer({ min: 0, max: 6 })).map(([lo, hi]) => ({ n: { $gte: lo, $lt: hi } })),
);

describe('embedded store: sorts answered by walking an index', () => {
  it('answer what the same query answers without the index (property test, 300 cases)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-walk-'));
    const store = await createEmbeddedStore({ dir });
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ n: value, done: fc.boolean() }, { requiredKeys: ['done'] }), { minLength: 0, maxLength: 30 }),
          fc.option(withArrays, { nil: undefined }),
          query,
          fc.constantFrom(1, -1),
          fc.integer({ min: 0, max: 4 }),
          fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
          async (docs, extra, filter, direction, skip, limit) => {
            const indexed = store.collection(`i${run}`);
            const plain = store.collection(`p${run++}`);
            await indexed.ensureIndex({ field: 'n' });
            for (const [u, d] of docs.entries()) {
              const doc = { id: `id${String(u).padStart(2, '0')}`, ...d, u };
              await indexed.insert(structuredClone(doc));
              await plain.insert(structuredClone(doc));
            }
            const check = async () => {
              const options = { sort: { n: direction } as Record<string, 1 | -1>, skip, ...(limit ? { limit } : {}) };
              const ours = (await indexed.find(filter, options)).map((d) => d.id);
              const theirs = (await plain.find(filter, options)).map((d) => d.id);
              expect(ours).toEqual(theirs);
              expect(await indexed.findJson!(filter, options)).toBe(await plain.findJson!(filter, options));
              // Each object once, also in a count, whatever its array holds.
              expect(await indexed.count(filter)).toBe((await plain.find(filter)).length);
            };
            await check();
            // Updates move objects in the index (ties must still come in insertion order).
            if (docs.length > 2) {
              for (const c of [indexed, plain]) {
                await c.update({ id: 'id00' }, { $set: { n: docs[1]?.n ?? 0 } });
                await c.remove({ id: `id${String(docs.length - 1).padStart(2, '0')}` });
              }
              await check();
            }
            // An array stored in the property: the walk must step aside (or agree).
            if (extra !== undefined) {
              for (const c of [indexed, plain]) await c.insert({ id: 'extra', n: extra, done: false, u: 99 });
              await check();
              for (const c of [indexed, plain]) await c.remove({ id: 'extra' });
              await check();
            }
          },
        ),
        { numRuns: 300 },
      );
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
