import { AggregateTimeoutError } from '../Store.js';
import type { AggregateRow, AggregateSpec } from '../Store.js';
import { compareRows, compareValues } from './compareRows.js';

/**
 * Groups objects in the process (the embedded store, and stores without aggregation of their
 * own), checking the time every 4,096 objects: at most `spec.limit` groups are kept (the caller
 * tells more than it allows by their number), sorted by their values. `idKey` is the stored name
 * of `id` (`_id` in the embedded store's cache).
 */
export function groupRows(docs: Iterable<Record<string, unknown>>, spec: AggregateSpec, options: { started: number; idKey: string }): AggregateRow[] {
  const groups = new Map<unknown, Accumulator>();
  const names = spec.group.map((name) => (name === 'id' ? options.idKey : name));
  const single = names.length === 1 ? names[0] : undefined;
  let n = 0;
  for (const doc of docs) {
    if (++n % 4096 === 0 && Date.now() - options.started > spec.timeoutMs) throw new AggregateTimeoutError();
    let key: unknown;
    let values: unknown[] | undefined;
    if (single !== undefined) {
      // One grouped property: its value is the key (a Map tells 1 from "1"); objects and arrays by their text.
      const value = doc[single] ?? null;
      key = typeof value === 'object' && value !== null ? `\u0000${JSON.stringify(value)}` : value;
    } else {
      values = names.map((name) => doc[name] ?? null);
      key = JSON.stringify(values);
    }
    let acc = groups.get(key);
    if (acc === undefined) {
      if (groups.size >= spec.limit) continue;
      groups.set(key, (acc = new Accumulator(spec, values ?? [doc[single as string] ?? null])));
    }
    acc.add(doc);
  }
  if (Date.now() - options.started > spec.timeoutMs) throw new AggregateTimeoutError();
  return [...groups.values()].map((acc) => acc.row()).sort(compareRows);
}

/** One group's running measures. */
class Accumulator {
  private count = 0;
  private readonly sums = new Map<string, number>();
  private readonly avgs = new Map<string, { total: number; n: number }>();
  private readonly mins = new Map<string, unknown>();
  private readonly maxs = new Map<string, unknown>();

  private readonly spec: AggregateSpec;
  private readonly values: unknown[];

  // Fields assigned by hand: node runs the store's sources with types stripped (no parameter properties).
  constructor(spec: AggregateSpec, values: unknown[]) {
    this.spec = spec;
    this.values = values;
  }

  add(doc: Record<string, unknown>): void {
    this.count++;
    for (const name of this.spec.sum) {
      const v = doc[name];
      this.sums.set(name, (this.sums.get(name) ?? 0) + (typeof v === 'number' ? v : 0));
    }
    for (const name of this.spec.avg) {
      const v = doc[name];
      if (typeof v !== 'number') continue;
      const a = this.avgs.get(name) ?? { total: 0, n: 0 };
      this.avgs.set(name, { total: a.total + v, n: a.n + 1 });
    }
    for (const name of this.spec.min) keepExtreme(this.mins, name, doc[name], -1);
    for (const name of this.spec.max) keepExtreme(this.maxs, name, doc[name], 1);
  }

  row(): AggregateRow {
    const row: AggregateRow = { group: Object.fromEntries(this.spec.group.map((name, i) => [name, this.values[i]])) };
    if (this.spec.count) row.count = this.count;
    if (this.spec.sum.length > 0) row.sum = Object.fromEntries(this.spec.sum.map((name) => [name, this.sums.get(name) ?? 0]));
    if (this.spec.avg.length > 0) {
      row.avg = Object.fromEntries(this.spec.avg.map((name) => {
        const a = this.avgs.get(name);
        return [name, a === undefined || a.n === 0 ? null : a.total / a.n];
      }));
    }
    if (this.spec.min.length > 0) row.min = Object.fromEntries(this.spec.min.map((name) => [name, this.mins.get(name) ?? null]));
    if (this.spec.max.length > 0) row.max = Object.fromEntries(this.spec.max.map((name) => [name, this.maxs.get(name) ?? null]));
    return row;
  }
}

/** min/max over numbers and strings (MongoDB's $min/$max skip null and missing values). */
function keepExtreme(into: Map<string, unknown>, name: string, value: unknown, sign: 1 | -1): void {
  if (value === null || value === undefined || (typeof value !== 'number' && typeof value !== 'string' && typeof value !== 'boolean')) return;
  const current = into.get(name);
  if (current === undefined || compareValues(value, current) * sign > 0) into.set(name, value);
}
