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

/** One group's running measures, by the position of each measured property in the spec (arrays: 100,000 objects per request). */
class Accumulator {
  private count = 0;
  private readonly sums: number[];
  private readonly avgTotals: number[];
  private readonly avgCounts: number[];
  private readonly mins: unknown[];
  private readonly maxs: unknown[];

  private readonly spec: AggregateSpec;
  private readonly values: unknown[];

  // Fields assigned by hand: node runs the store's sources with types stripped (no parameter properties).
  constructor(spec: AggregateSpec, values: unknown[]) {
    this.spec = spec;
    this.values = values;
    this.sums = spec.sum.map(() => 0);
    this.avgTotals = spec.avg.map(() => 0);
    this.avgCounts = spec.avg.map(() => 0);
    this.mins = spec.min.map(() => undefined);
    this.maxs = spec.max.map(() => undefined);
  }

  add(doc: Record<string, unknown>): void {
    this.count++;
    const spec = this.spec;
    for (let i = 0; i < spec.sum.length; i++) {
      const v = doc[spec.sum[i] as string];
      if (typeof v === 'number') this.sums[i] = (this.sums[i] ?? 0) + v;
    }
    for (let i = 0; i < spec.avg.length; i++) {
      const v = doc[spec.avg[i] as string];
      if (typeof v !== 'number') continue;
      this.avgTotals[i] = (this.avgTotals[i] ?? 0) + v;
      this.avgCounts[i] = (this.avgCounts[i] ?? 0) + 1;
    }
    for (let i = 0; i < spec.min.length; i++) keepExtreme(this.mins, i, doc[spec.min[i] as string], -1);
    for (let i = 0; i < spec.max.length; i++) keepExtreme(this.maxs, i, doc[spec.max[i] as string], 1);
  }

  row(): AggregateRow {
    const spec = this.spec;
    const row: AggregateRow = { group: Object.fromEntries(spec.group.map((name, i) => [name, this.values[i]])) };
    if (spec.count) row.count = this.count;
    if (spec.sum.length > 0) row.sum = Object.fromEntries(spec.sum.map((name, i) => [name, this.sums[i] as number]));
    if (spec.avg.length > 0) row.avg = Object.fromEntries(spec.avg.map((name, i) => [name, this.avgCounts[i] === 0 ? null : (this.avgTotals[i] as number) / (this.avgCounts[i] as number)]));
    if (spec.min.length > 0) row.min = Object.fromEntries(spec.min.map((name, i) => [name, this.mins[i] ?? null]));
    if (spec.max.length > 0) row.max = Object.fromEntries(spec.max.map((name, i) => [name, this.maxs[i] ?? null]));
    return row;
  }
}

/** min/max over numbers and strings (MongoDB's $min/$max skip null and missing values). */
function keepExtreme(into: unknown[], i: number, value: unknown, sign: 1 | -1): void {
  if (value === null || value === undefined || (typeof value !== 'number' && typeof value !== 'string' && typeof value !== 'boolean')) return;
  const current = into[i];
  if (current === undefined || compareValues(value, current) * sign > 0) into[i] = value;
}
