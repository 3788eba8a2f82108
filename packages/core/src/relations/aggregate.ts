import { SvcError } from '../errors.js';
import { compileFilter } from '../query/compileQuery.js';
import { AggregateTimeoutError } from '../store/Store.js';
import type { AggregateRow, AggregateSpec, Doc, Filter, StoreCollection } from '../store/Store.js';
import type { Context, PropertyDef, Reply } from '../types.js';
import { andFilters } from './filters.js';
import { compareRows, compareValues } from '../store/internal/compareRows.js';
import type { Relations } from './Relations.js';

/** Grouped properties an aggregate may have. */
export const MAX_GROUP_BY = 3;
const MEASURES = ['$sum', '$avg', '$min', '$max'] as const;
const AGGREGATE_COMMANDS = new Set(['$group', '$count', ...MEASURES]);

/**
 * GET /<c>/aggregate?{"$group": ["author"], "$count": true, "$sum": ["likes"], "done": true}:
 * the objects the query matches among those the caller may list (the access rules' filter ANDed
 * in), grouped by up to three properties the caller may filter by, with the count and the
 * sum/avg/min/max of properties the caller may read per group. Answers
 * `[{"group": {"author": "..."}, "count": 3, "sum": {"likes": 10}}]`, sorted by group.
 */
export async function aggregate(relations: Relations, ctx: Context): Promise<Reply> {
  const queryable = relations.owner.queryableFor(ctx);
  const spec = specOf(ctx.query, queryable, relations);
  const rest: Record<string, unknown> = {};
  for (const key of Object.keys(ctx.query)) if (!AGGREGATE_COMMANDS.has(key)) rest[key] = ctx.query[key];
  const filter = andFilters(compileFilter(rest, queryable), relations.owner.accessFilter(ctx, 'list'));
  const store = relations.store;
  const scanned = await store.count(filter);
  const { maxScanned, maxGroups } = relations.settings;
  if (scanned > maxScanned) throw new SvcError('PAYLOAD_TOO_LARGE', `the aggregate would read ${scanned} objects, more than ${maxScanned}; narrow the query (app.json aggregate.maxScanned)`);
  let rows: AggregateRow[];
  try {
    rows = store.aggregate ? await store.aggregate(filter, spec) : await aggregateByReading(store, filter, spec);
  } catch (err) {
    if (err instanceof AggregateTimeoutError) throw new SvcError('PAYLOAD_TOO_LARGE', `the aggregate took longer than ${spec.timeoutMs} ms; narrow the query (app.json aggregate.timeoutMs)`, { cause: err });
    throw err;
  }
  if (rows.length > maxGroups) throw new SvcError('PAYLOAD_TOO_LARGE', `the aggregate has more than ${maxGroups} groups; group by fewer or narrow the query (app.json aggregate.maxGroups)`);
  return { status: 200, body: rows };
}

function specOf(query: Record<string, unknown>, queryable: Record<string, PropertyDef>, relations: Relations): AggregateSpec {
  const group = namesOf('$group', query.$group, queryable);
  if (group.length > MAX_GROUP_BY) throw new SvcError('INVALID_QUERY', `$group: at most ${MAX_GROUP_BY} properties`);
  const spec: AggregateSpec = {
    group,
    count: false,
    sum: namesOf('$sum', query.$sum, queryable),
    avg: namesOf('$avg', query.$avg, queryable),
    min: namesOf('$min', query.$min, queryable),
    max: namesOf('$max', query.$max, queryable),
    limit: relations.settings.maxGroups + 1,
    timeoutMs: relations.settings.aggregateTimeoutMs,
  };
  for (const name of [...spec.sum, ...spec.avg]) {
    if (queryable[name]?.type !== 'number') throw new SvcError('INVALID_QUERY', `$sum/$avg: ${name} is not a number property`);
  }
  const count = query.$count;
  if (count !== undefined && count !== true && count !== 'true' && count !== false && count !== 'false') throw new SvcError('INVALID_QUERY', '$count must be true or false');
  const measured = spec.sum.length + spec.avg.length + spec.min.length + spec.max.length > 0;
  spec.count = count === true || count === 'true' || (count === undefined && !measured);
  return spec;
}

/** A property list (`"a"`, `"a,b"` or `["a", "b"]`) of properties the caller may filter by. */
function namesOf(command: string, value: unknown, queryable: Record<string, PropertyDef>): string[] {
  if (value === undefined) return [];
  const names = typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter((s) => s !== '') : value;
  if (!Array.isArray(names) || !names.every((n) => typeof n === 'string')) throw new SvcError('INVALID_QUERY', `${command} must be a property name or a list of them`);
  for (const name of names) {
    // A property the caller may not filter by is reported as absent, whatever the reason.
    if (name !== 'id' && !Object.hasOwn(queryable, name)) throw new SvcError('INVALID_QUERY', `${command}: no property ${name} you may group or measure`);
  }
  return [...new Set(names as string[])];
}

/**
 * A store without aggregation of its own (the embedded store): the matching objects' grouped and
 * measured properties are read (projected) and grouped here, checking the time as it goes.
 */
export async function aggregateByReading(store: StoreCollection, filter: Filter, spec: AggregateSpec): Promise<AggregateRow[]> {
  const started = Date.now();
  const fields: Record<string, 1> = { id: 1 };
  for (const name of [...spec.group, ...spec.sum, ...spec.avg, ...spec.min, ...spec.max]) fields[name] = 1;
  const docs = await store.find(filter, { fields });
  const groups = new Map<string, Accumulator>();
  let n = 0;
  for (const doc of docs) {
    if (++n % 4096 === 0 && Date.now() - started > spec.timeoutMs) throw new AggregateTimeoutError();
    const values = spec.group.map((name) => groupValue(doc, name));
    const key = JSON.stringify(values);
    let acc = groups.get(key);
    if (acc === undefined) {
      if (groups.size >= spec.limit) continue;
      groups.set(key, (acc = new Accumulator(spec, values)));
    }
    acc.add(doc);
  }
  if (Date.now() - started > spec.timeoutMs) throw new AggregateTimeoutError();
  return [...groups.values()].map((acc) => acc.row()).sort(compareRows);
}

function groupValue(doc: Doc, name: string): unknown {
  const value = doc[name];
  return value === undefined ? null : value;
}

/** One group's running measures. */
class Accumulator {
  private count = 0;
  private readonly sums = new Map<string, number>();
  private readonly avgs = new Map<string, { total: number; n: number }>();
  private readonly mins = new Map<string, unknown>();
  private readonly maxs = new Map<string, unknown>();

  constructor(
    private readonly spec: AggregateSpec,
    private readonly values: unknown[],
  ) {}

  add(doc: Doc): void {
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
