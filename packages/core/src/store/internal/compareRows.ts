import type { AggregateRow } from '../Store.js';

/** Rows in the order of their groups' values (null first, then numbers, strings, others). */
export function compareRows(a: AggregateRow, b: AggregateRow): number {
  const keys = Object.keys(a.group);
  for (const key of keys) {
    const c = compareValues(a.group[key], b.group[key]);
    if (c !== 0) return c;
  }
  return 0;
}

function rank(value: unknown): number {
  if (value === null || value === undefined) return 0;
  if (typeof value === 'number') return 1;
  if (typeof value === 'string') return 2;
  if (typeof value === 'boolean') return 4;
  return 3;
}

export function compareValues(a: unknown, b: unknown): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 1) return (a as number) - (b as number);
  if (ra === 2) return (a as string) < (b as string) ? -1 : (a as string) > (b as string) ? 1 : 0;
  if (ra === 4) return Number(a) - Number(b);
  const sa = JSON.stringify(a);
  const sb = JSON.stringify(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}
