import type { Filter, FindOptions } from '../Store.js';
import { ARRAY, BOOL, DATE, NULL, NUMBER, OBJECT, STRING } from './paths.js';
import type { PathFacts } from './paths.js';
import { isSearchFilter } from '../../query/search.js';
import type { SearchFilter } from '../../query/search.js';
import { matchQuery } from './search.js';
import type { SearchInfo } from './search.js';
import { Params, ident, jsonPath, pathLiteral, renumber } from './sqlText.js';
import type { SqlValue } from './sqlText.js';

/**
 * The planner: a store filter and find options to the WHERE and ORDER BY of a statement, with
 * every value bound as a parameter (never written into the SQL). Pure: it reads only the
 * collection's path facts and indexed properties, so it is table-tested without a database.
 *
 * Every condition it writes selects a superset of the objects the filter matches; it is `exact`
 * when it selects those objects and no others. When a plan is not exact, the executor tests each
 * selected object with the query language's matcher (matchesFilter), and pages and counts in the
 * process. What is translated exactly: equality, ranges, `$in`/`$nin`, `$ne`, `$exists`, `$size`,
 * `$and`/`$or`/`$nor`/`$not` of those, on `id` and on property paths that no object holds an
 * array on the way to (see PathFacts). Arrays, `$regex`, `$elemMatch`, object equality and
 * comparisons across kinds are left to the matcher.
 */

/** What the planner needs to know about a collection. */
export interface PlanContext {
  facts: PathFacts;
  /** Properties with an expression index, written as the index's literal expression so SQLite uses it. */
  indexed: ReadonlySet<string>;
  /** Its full-text search table, when it has one (search.ts). */
  search?: SearchInfo;
}

/**
 * A `$search` without `$sort` answers the most relevant first (see rank.ts), ranking at most this
 * many matches: the newest ones of the whole query (the search, the other conditions, the access
 * rules ANDed in). Matches past them (older) follow, newest first. The bound keeps the cost of a
 * search that matches many objects to this many objects read and scored.
 */
export const MAX_RANKED = 500;

/** A translated condition: SQL selecting a superset of the matches, and whether exactly them. */
export interface Condition {
  sql: string;
  exact: boolean;
}

/** How a find is run. */
export interface ReadPlan {
  /** SQL boolean expression over the table's columns (`id`, `doc`, `seq`). */
  where: string;
  /** ORDER BY expressions: the sort's, then insertion order (`seq`). */
  orderBy: string;
  params: SqlValue[];
  /** The WHERE selects exactly the matches: no object is tested in the process. */
  exact: boolean;
  /** The sort cannot be written in SQL (kinds mixed, arrays): the matches are sorted in the process. */
  sortInProcess: boolean;
  /** LIMIT and OFFSET can go to SQL (exact, sorted there). */
  pageInSql: boolean;
  /** A ranked `$search` (see {@link RankedPlan}): answered by it, not by `where` and `orderBy`. */
  ranked?: RankedPlan;
}

/**
 * A `$search` that orders the answer (no `$sort`): the matches of the whole filter newest first,
 * found by the search table (`<fts> CROSS JOIN <table> ON seq = <fts>.rowid`, in `<fts>.rowid DESC`
 * order: the search table drives, and stops when enough are found). The first MAX_RANKED of them
 * are ordered by relevance in the process (rank.ts), the ones after them stay newest first. The
 * order of the matches depends on them alone (no count over other objects): the objects the rest
 * of the filter (the access rules among it) leaves out have no say in it.
 */
export interface RankedPlan {
  /** The search table's name, quoted. */
  fts: string;
  /** `<fts> MATCH ?1` AND the rest of the filter (a superset when not exact). */
  where: string;
  params: SqlValue[];
  /** The rest of the filter is exact: no object is tested in the process. */
  exact: boolean;
  /** The search whose words rank. */
  search: SearchFilter;
  /**
   * When the rest of the filter holds exact conditions on indexed properties (an owner's rule,
   * a range): those (`probe`, counted through their index) and the rest alone (`restWhere`). When
   * the probe selects few objects, the executor reads them and tests the search in the process
   * instead of walking every match of the search (a common word's tens of thousands).
   */
  selective?: { probe: string; probeParams: SqlValue[]; restWhere: string; restParams: SqlValue[] };
}

const TRUE: Condition = { sql: '1', exact: true };
const FALSE: Condition = { sql: '0', exact: true };
/** Nothing narrows it: every object is selected and tested. */
const ANYTHING: Condition = { sql: '1', exact: false };

/**
 * Plans a find (or count, update, remove: options empty). `ranked`: a find whose `$search` (one
 * that every match must satisfy) orders the answer when there is no sort.
 */
export function planRead(filter: Filter, options: Omit<FindOptions, 'fields'>, ctx: PlanContext, ranked = false): ReadPlan {
  const params = new Params();
  const where = translateFilter(filter, ctx, params);
  const sorted = options.sort !== undefined && Object.keys(options.sort).length > 0 ? sortSql(options.sort, ctx, params) : '';
  const sortInProcess = sorted === undefined;
  const orderBy = sorted ? `${sorted}, seq` : 'seq';
  const { sqls, values } = renumber([where.sql, orderBy], params.values);
  const rankedBy = ranked && sorted === '' ? rankedPlan(filter, ctx) : undefined;
  return {
    where: sqls[0] as string,
    orderBy: sqls[1] as string,
    params: values,
    exact: where.exact,
    sortInProcess,
    pageInSql: where.exact && !sortInProcess,
    ...(rankedBy === undefined ? {} : { ranked: rankedBy }),
  };
}

/** The plan of a ranked search (see RankedPlan), or undefined when the search table cannot answer its search. */
function rankedPlan(filter: Filter, ctx: PlanContext): RankedPlan | undefined {
  const search = requiredSearch(filter);
  if (search === undefined || search.words.length === 0 || ctx.search === undefined) return undefined;
  const query = matchQuery(search, ctx.search);
  if (query === undefined) return undefined;
  const fts = ident(ctx.search.fts);
  const params = new Params();
  const match = `${fts} MATCH ${params.bind(query)}`;
  const rest = translateFilter(withoutRequiredSearch(filter), ctx, params);
  const { sqls, values } = renumber([rest.sql === '1' ? match : `${match} AND (${rest.sql})`], params.values);
  const plan: RankedPlan = { fts, where: sqls[0] as string, params: values, exact: rest.exact, search };
  const probeParams = new Params();
  const probe = and(indexedParts(withoutRequiredSearch(filter), ctx, probeParams));
  if (probe.sql !== '1' && probe.sql !== '0') {
    const restParams = new Params();
    const alone = translateFilter(withoutRequiredSearch(filter), ctx, restParams);
    const a = renumber([probe.sql], probeParams.values);
    const b = renumber([alone.sql], restParams.values);
    plan.selective = { probe: a.sqls[0] as string, probeParams: a.values, restWhere: b.sqls[0] as string, restParams: b.values };
  }
  return plan;
}

/** The exact conditions on indexed properties that every match satisfies (top-level keys, and those of a top-level `$and`). */
function indexedParts(filter: Filter, ctx: PlanContext, params: Params): Condition[] {
  const parts: Condition[] = [];
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (key === '$and' && Array.isArray(value)) {
      for (const part of value as Filter[]) if (typeof part === 'object' && part !== null) parts.push(...indexedParts(part, ctx, params));
    } else if (!key.startsWith('$') && (key === 'id' || ctx.indexed.has(key))) {
      const c = field(key, value, ctx, params);
      if (c.exact && c.sql !== '1') parts.push(c);
    }
  }
  return parts;
}

/** The filter without the `$search` that requiredSearch finds (the same one: the first, at the top or in a top-level `$and`). */
function withoutRequiredSearch(filter: Filter): Filter {
  if (isSearchFilter(filter.$search)) {
    const { $search: _, ...rest } = filter;
    return rest;
  }
  const parts = filter.$and as Filter[];
  const at = parts.findIndex((part) => typeof part === 'object' && part !== null && requiredSearch(part) !== undefined);
  return { ...filter, $and: parts.map((part, i) => (i === at ? withoutRequiredSearch(part) : part)) };
}

/** The `$search` every match satisfies: at the top of the filter, or in a top-level `$and`. */
function requiredSearch(filter: Filter): SearchFilter | undefined {
  if (isSearchFilter(filter.$search)) return filter.$search;
  if (!Array.isArray(filter.$and)) return undefined;
  for (const part of filter.$and as Filter[]) {
    const found = typeof part === 'object' && part !== null ? requiredSearch(part) : undefined;
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * `$search`: the objects whose search table row matches (exact: the table holds the words as
 * the matcher cuts them); a collection without one, or a field it does not hold, is left to the
 * matcher. No word matches nothing.
 */
function searchCondition(value: unknown, ctx: PlanContext, params: Params): Condition {
  if (!isSearchFilter(value)) throw new Error('$search needs words and fields');
  if (value.words.length === 0) return FALSE;
  if (ctx.search === undefined) return ANYTHING;
  const query = matchQuery(value, ctx.search);
  if (query === undefined) return ANYTHING;
  const fts = ident(ctx.search.fts);
  return { sql: `seq IN (SELECT rowid FROM ${fts} WHERE ${fts} MATCH ${params.bind(query)})`, exact: true };
}

/** Translates a whole filter (top-level keys ANDed). */
export function translateFilter(filter: Filter, ctx: PlanContext, params: Params): Condition {
  const parts: Condition[] = [];
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (key === '$and') parts.push(and(subFilters(key, value).map((f) => translateFilter(f, ctx, params))));
    else if (key === '$or') parts.push(or(subFilters(key, value).map((f) => translateFilter(f, ctx, params))));
    else if (key === '$nor') parts.push(not(or(subFilters(key, value).map((f) => translateFilter(f, ctx, params)))));
    else if (key === '$search') parts.push(searchCondition(value, ctx, params));
    else if (key.startsWith('$')) throw new Error(`unsupported query operator ${key}`);
    else parts.push(field(key, value, ctx, params));
  }
  return and(parts);
}

function subFilters(operator: string, value: unknown): Filter[] {
  if (!Array.isArray(value)) throw new Error(`${operator} needs an array of filters`);
  return value as Filter[];
}

/** Where a path's value is, in SQL, and what is known of it. */
interface Operand {
  /** Its value as SQLite reads it (`json_extract`: strings TEXT, numbers and booleans INTEGER/REAL, objects their JSON text, null and missing NULL). */
  value: string;
  /** Its JSON type (`json_type`: 'text', 'integer', 'real', 'true', 'false', 'null', 'object', 'array'; missing NULL). */
  type: string;
  /** The JSON path for table-valued functions (json_each, json_array_length). */
  path: string;
  /** A date's milliseconds (NULL for anything else); its path is bound when asked (a statement takes no unused parameter). */
  date(): string;
  kinds: number;
  /** No array on the way to it: one value per object. */
  plain: boolean;
  isId: boolean;
}

const ID: Operand = { value: 'id', type: "'text'", path: "'$'", date: () => 'NULL', kinds: STRING, plain: true, isId: true };

function operand(key: string, ctx: PlanContext, params: Params): Operand | undefined {
  if (key === 'id') return ID;
  const json = jsonPath(key);
  if (json === undefined) return undefined;
  return new PathOperand(json, ctx.indexed.has(key) ? pathLiteral(key) : undefined, params, ctx.facts.kindsOf(key), ctx.facts.plainWayTo(key));
}

/** A property path's operand: its path is bound when first written into the SQL (a statement takes no unused parameter). */
class PathOperand implements Operand {
  readonly kinds: number;
  readonly plain: boolean;
  readonly isId = false;
  readonly #json: string;
  readonly #literal: string | undefined;
  readonly #params: Params;
  #path: string | undefined;

  constructor(json: string, literal: string | undefined, params: Params, kinds: number, plain: boolean) {
    this.#json = json;
    this.#literal = literal;
    this.#params = params;
    this.kinds = kinds;
    this.plain = plain;
  }

  get path(): string {
    return (this.#path ??= this.#literal ?? this.#params.bind(this.#json));
  }

  get value(): string {
    return `json_extract(doc, ${this.path})`;
  }

  get type(): string {
    return `json_type(doc, ${this.path})`;
  }

  date(): string {
    return `json_extract(doc, ${this.#params.bind(`${this.#json}."$$date"`)})`;
  }
}

function field(key: string, condition: unknown, ctx: PlanContext, params: Params): Condition {
  if (!isOperatorObject(condition)) {
    const o = operand(key, ctx, params);
    return o === undefined ? ANYTHING : equals(o, condition, params);
  }
  if ('$options' in condition && !('$regex' in condition)) throw new Error('$options without $regex');
  const o = operand(key, ctx, params);
  const parts: Condition[] = [];
  for (const op of Object.keys(condition)) {
    const value = condition[op];
    switch (op) {
      case '$eq':
        parts.push(o === undefined ? ANYTHING : equals(o, value, params));
        break;
      case '$ne':
        parts.push(o === undefined ? ANYTHING : not(equals(o, value, params)));
        break;
      case '$in':
        parts.push(o === undefined ? (checkList(value), ANYTHING) : oneOf(o, value, params));
        break;
      case '$nin':
        parts.push(o === undefined ? (checkList(value), ANYTHING) : not(oneOf(o, value, params)));
        break;
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        parts.push(o === undefined ? ANYTHING : compare(o, op, value, params));
        break;
      case '$exists':
        parts.push(o === undefined ? ANYTHING : exists(o, Boolean(value)));
        break;
      case '$size':
        parts.push(o === undefined ? ANYTHING : size(o, value, params));
        break;
      case '$not':
        parts.push(not(field(key, value, ctx, params)));
        break;
      case '$regex':
      case '$options':
      case '$elemMatch':
        parts.push(ANYTHING);
        break;
      default:
        throw new Error(`unsupported query operator ${op}`);
    }
  }
  return and(parts);
}

/** A condition that is an object of operators (`{$gt: 1}`), not a value to equal. */
export function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof RegExp || value instanceof Date) return false;
  const keys = Object.keys(value);
  const operators = keys.filter((k) => k.startsWith('$')).length;
  if (operators > 0 && operators < keys.length) throw new Error('a condition cannot mix operators and properties');
  return operators > 0;
}

function checkList(value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new Error('$in and $nin need an array');
  return value;
}

const NUMBER_TYPES = "IN ('integer', 'real')";

/** `path = value` with the query language's meaning (an array matches when an element is equal; null matches missing). */
function equals(o: Operand, value: unknown, params: Params): Condition {
  if (!o.plain || value instanceof RegExp) return ANYTHING;
  if (o.isId) return typeof value === 'string' ? { sql: `id = ${params.bind(value)}`, exact: true } : FALSE;
  const arrays = (o.kinds & ARRAY) !== 0;
  if (value === null || value === undefined) return arrays ? ANYTHING : { sql: `${o.value} IS NULL`, exact: true };
  if (value instanceof Date) return arrays ? ANYTHING : { sql: `${o.date()} = ${params.bind(value.getTime())}`, exact: true };
  if (typeof value === 'string') {
    const p = params.bind(value);
    if (arrays) return { sql: `EXISTS (SELECT 1 FROM json_each(doc, ${o.path}) WHERE value = ${p} AND type = 'text')`, exact: false };
    const guard = (o.kinds & (OBJECT | DATE)) !== 0 ? ` AND ${o.type} = 'text'` : '';
    return { sql: `${o.value} = ${p}${guard}`, exact: true };
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return ANYTHING;
    const p = params.bind(value);
    if (arrays) return { sql: `EXISTS (SELECT 1 FROM json_each(doc, ${o.path}) WHERE value = ${p} AND type ${NUMBER_TYPES})`, exact: false };
    const guard = (o.kinds & BOOL) !== 0 ? ` AND ${o.type} ${NUMBER_TYPES}` : '';
    return { sql: `${o.value} = ${p}${guard}`, exact: true };
  }
  if (typeof value === 'boolean') {
    if (arrays) return ANYTHING;
    const guard = (o.kinds & NUMBER) !== 0 ? ` AND ${o.type} = '${value ? 'true' : 'false'}'` : '';
    return { sql: `${o.value} = ${value ? 1 : 0}${guard}`, exact: true };
  }
  return ANYTHING;
}

/** `$in`: any listed value equals (each with equals' meaning); a long list of strings is bound as one JSON array. */
function oneOf(o: Operand, list: unknown, params: Params): Condition {
  const values = checkList(list);
  if (values.length === 0) return FALSE;
  const strings = values.every((v) => typeof v === 'string');
  if (strings && o.plain && (o.isId || (o.kinds & (ARRAY | OBJECT | DATE)) === 0)) {
    const members = values.length > 16 ? `SELECT value FROM json_each(${params.bind(JSON.stringify(values))})` : values.map((v) => params.bind(v as string)).join(', ');
    return { sql: `${o.value} IN (${members})`, exact: true };
  }
  return or(values.map((v) => equals(o, v, params)));
}

const SQL_COMPARE: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

/**
 * A range bound. Only values of the bound's kind compare (numbers with numbers, strings with
 * strings, dates with dates); strings compare by code point (UTF-8 bytes), as MongoDB does.
 */
function compare(o: Operand, op: string, value: unknown, params: Params): Condition {
  const sign = SQL_COMPARE[op] as string;
  if (!o.plain || (o.kinds & ARRAY) !== 0) return ANYTHING;
  if (o.isId) return typeof value === 'string' ? { sql: `id ${sign} ${params.bind(value)}`, exact: true } : FALSE;
  if (value instanceof Date) return { sql: `${o.date()} ${sign} ${params.bind(value.getTime())}`, exact: true };
  if (typeof value === 'number' && Number.isFinite(value)) {
    const guard = (o.kinds & ~(NULL | NUMBER)) !== 0 ? ` AND ${o.type} ${NUMBER_TYPES}` : '';
    return { sql: `${o.value} ${sign} ${params.bind(value)}${guard}`, exact: true };
  }
  if (typeof value === 'string') {
    const guard = (o.kinds & ~(NULL | STRING)) !== 0 ? ` AND ${o.type} = 'text'` : '';
    return { sql: `${o.value} ${sign} ${params.bind(value)}${guard}`, exact: true };
  }
  return ANYTHING;
}

function exists(o: Operand, wanted: boolean): Condition {
  if (o.isId) return wanted ? TRUE : FALSE;
  if (!o.plain) return ANYTHING;
  return { sql: `${o.type} IS ${wanted ? 'NOT ' : ''}NULL`, exact: true };
}

function size(o: Operand, value: unknown, params: Params): Condition {
  if (o.isId) return FALSE;
  if (!o.plain || typeof value !== 'number' || !Number.isInteger(value)) return ANYTHING;
  return { sql: `(${o.type} = 'array' AND json_array_length(doc, ${o.path}) = ${params.bind(value)})`, exact: true };
}

/** The negation: exact only when the condition is (a superset's complement is no superset). */
export function not(c: Condition): Condition {
  if (!c.exact) return ANYTHING;
  if (c.sql === '1') return FALSE;
  if (c.sql === '0') return TRUE;
  // SQL's NULL (a missing value compared) is not a match, so its negation is one.
  return { sql: `NOT COALESCE((${c.sql}), 0)`, exact: true };
}

export function and(parts: Condition[]): Condition {
  let exact = true;
  const sql: string[] = [];
  for (const c of parts) {
    if (!c.exact) exact = false;
    if (c.sql === '0' && c.exact) return FALSE;
    if (c.sql !== '1') sql.push(c.sql);
  }
  if (sql.length === 0) return exact ? TRUE : ANYTHING;
  return { sql: sql.length === 1 ? (sql[0] as string) : sql.map((s) => `(${s})`).join(' AND '), exact };
}

export function or(parts: Condition[]): Condition {
  let exact = true;
  const sql: string[] = [];
  for (const c of parts) {
    if (c.sql === '1') return c.exact ? TRUE : ANYTHING;
    if (!c.exact) exact = false;
    if (c.sql !== '0') sql.push(c.sql);
  }
  if (sql.length === 0) return exact ? FALSE : ANYTHING;
  return { sql: sql.length === 1 ? (sql[0] as string) : sql.map((s) => `(${s})`).join(' OR '), exact };
}

/**
 * ORDER BY for a sort, or undefined when SQL would order differently from the query language:
 * a property that holds arrays, or values of more than one kind (SQLite puts numbers before
 * strings but reads booleans as numbers and objects as text). Missing, then null, sort first
 * ascending and last descending (the old embedded store's order; MongoDB ties them).
 */
function sortSql(sort: Record<string, 1 | -1>, ctx: PlanContext, params: Params): string | undefined {
  const keys: string[] = [];
  for (const key of Object.keys(sort)) {
    const direction = Number(sort[key]) < 0 ? 'DESC' : 'ASC';
    const o = operand(key, ctx, params);
    if (o === undefined || !o.plain) return undefined;
    const kinds = o.kinds & ~NULL;
    if (kinds !== 0 && kinds !== NUMBER && kinds !== STRING && kinds !== BOOL && kinds !== DATE) return undefined;
    // Missing before null (the old store's order): a key of its own, only where nulls are stored.
    if ((o.kinds & NULL) !== 0) keys.push(`(${o.type} IS NOT NULL) ${direction}`);
    keys.push(`${kinds === DATE ? o.date() : o.value} ${direction}`);
  }
  return keys.join(', ');
}
