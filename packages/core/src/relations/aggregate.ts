import { SvcError } from '../errors.js';
import { compileFilter } from '../query/compileQuery.js';
import { AggregateScanError, AggregateTimeoutError } from '../store/Store.js';
import type { AggregateRow, AggregateSpec, Filter, StoreCollection } from '../store/Store.js';
import { groupRows } from '../store/internal/groupRows.js';
import type { Context, PropertyDef, Reply } from '../types.js';
import { andFilters } from './filters.js';
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
  const filter = andFilters(compileFilter(rest, relations.owner.properties, relations.refusals(ctx)), relations.owner.accessFilter(ctx, 'list'));
  const store = relations.store;
  const { maxScanned, maxGroups } = relations.settings;
  let rows: AggregateRow[];
  try {
    rows = store.aggregate ? await store.aggregate(filter, spec) : await aggregateByReading(store, filter, spec);
  } catch (err) {
    if (err instanceof AggregateScanError) throw new SvcError('PAYLOAD_TOO_LARGE', `the aggregate would read ${err.scanned} objects, more than ${maxScanned}; narrow the query (app.json aggregate.maxScanned)`, { cause: err });
    if (err instanceof AggregateTimeoutError) throw new SvcError('PAYLOAD_TOO_LARGE', `the aggregate took longer than ${spec.timeoutMs} ms; narrow the query (app.json aggregate.timeoutMs)`, { cause: err });
    throw err;
  }
  // Without groups there is one answer, also over no object (count 0), as SQL's would be.
  if (spec.group.length === 0 && rows.length === 0) rows = [emptyRow(spec)];
  if (rows.length > maxGroups) throw new SvcError('PAYLOAD_TOO_LARGE', `the aggregate has more than ${maxGroups} groups; group by fewer or narrow the query (app.json aggregate.maxGroups)`);
  return { status: 200, body: rows };
}

function emptyRow(spec: AggregateSpec): AggregateRow {
  const row: AggregateRow = { group: {} };
  if (spec.count) row.count = 0;
  const each = <T>(names: string[], value: T): Record<string, T> => Object.fromEntries(names.map((name) => [name, value]));
  if (spec.sum.length > 0) row.sum = each(spec.sum, 0);
  if (spec.avg.length > 0) row.avg = each(spec.avg, null);
  if (spec.min.length > 0) row.min = each(spec.min, null);
  if (spec.max.length > 0) row.max = each(spec.max, null);
  return row;
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
    maxScanned: relations.settings.maxScanned,
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
  const idAllowed = command === '$group';
  if (value === undefined) return [];
  const names = typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter((s) => s !== '') : value;
  if (!Array.isArray(names) || !names.every((n) => typeof n === 'string')) throw new SvcError('INVALID_QUERY', `${command} must be a property name or a list of them`);
  for (const name of names) {
    // A property the caller may not filter by is reported as absent, whatever the reason.
    if (!(name === 'id' && idAllowed) && !Object.hasOwn(queryable, name)) throw new SvcError('INVALID_QUERY', `${command}: no property ${name} you may group or measure`);
  }
  return [...new Set(names as string[])];
}

/**
 * A store without aggregation of its own: the matching objects' grouped and measured properties
 * are read (projected) and grouped here.
 */
export async function aggregateByReading(store: StoreCollection, filter: Filter, spec: AggregateSpec): Promise<AggregateRow[]> {
  const started = Date.now();
  const scanned = await store.count(filter);
  if (scanned > spec.maxScanned) throw new AggregateScanError(scanned);
  const fields: Record<string, 1> = { id: 1 };
  for (const name of [...spec.group, ...spec.sum, ...spec.avg, ...spec.min, ...spec.max]) fields[name] = 1;
  const docs = await store.find(filter, { fields });
  return groupRows(docs, spec, { started, idKey: 'id' });
}
