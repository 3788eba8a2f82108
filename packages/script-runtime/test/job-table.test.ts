import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JobTable } from '../src/internal/job-table.js';

// The script pool keeps each process's jobs in flight in a JobTable instead of a Map (see
// job-table.ts for the measured reason): by id it must answer as a Map would, through growth,
// colliding ids (the table is indexed by id modulo its size) and deletions that shift a run back.

type Job = { id: number; n: number };

describe('JobTable', () => {
  it('answers get, has, size and values as a Map does, for any sets and deletes', () => {
    // Ids from a small range and multiples of 16/32/64: many share a home slot.
    const ids = fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 8 }).map((k) => k * 64), fc.integer({ min: 1, max: 0x7fffffff }));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), ids), { maxLength: 300 }), (steps) => {
        const model = new Map<number, Job>();
        const table = new JobTable<Job>();
        let n = 0;
        for (const [set, id] of steps) {
          if (set) {
            const job = { id, n: n++ };
            model.set(id, job);
            table.set(job);
          } else {
            expect(table.delete(id)).toBe(model.delete(id));
          }
          expect(table.size).toBe(model.size);
          for (const [id2, job] of model) expect(table.get(id2)).toBe(job);
          expect(table.has(id)).toBe(model.has(id));
          expect(new Set(table.values())).toEqual(new Set(model.values()));
        }
      }),
    );
  });

  it('keeps every job through many rounds of growth, and clears', () => {
    const table = new JobTable<Job>();
    for (let id = 1; id <= 5000; id++) table.set({ id, n: id });
    for (let id = 1; id <= 5000; id += 2) expect(table.delete(id)).toBe(true);
    expect(table.size).toBe(2500);
    for (let id = 1; id <= 5000; id++) expect(table.get(id)?.n).toBe(id % 2 === 0 ? id : undefined);
    table.clear();
    expect(table.size).toBe(0);
    expect(table.get(2)).toBeUndefined();
  });
});
