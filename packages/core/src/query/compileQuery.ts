import { SvcError } from '../errors.js';
import type { Filter, FindOptions } from '../store/Store.js';
import type { PropertyDef } from '../types.js';
import { isPlainObject } from './parseQueryString.js';
import { MAX_SEARCH_LENGTH, MAX_SEARCH_WORDS, MAX_WORD_LENGTH, searchWords } from './search.js';
import type { SearchFilter } from './search.js';

/** A query string object turned into a store filter, find options and svc commands. */
export interface CompiledQuery {
  filter: Filter;
  options: FindOptions;
  /** `$limitRecursion`, when given. */
  limitRecursion?: number;
  /** `$skipEvents: true` was asked for (the caller honours it for root only). */
  skipEvents: boolean;
}

/**
 * Properties a query may not name, for this caller (access rules, `private`): a filter, an
 * operator or a `$sort` on one of them is refused with 400 rather than ignored, so that no answer
 * depends on a value the caller may not read. `$fields` reveals nothing (the answer leaves such a
 * property out anyway): one named there is left out of `$fields`, as if it were not named.
 */
export interface QueryRefusals {
  /** May not be filtered or sorted on (top-level names; `a.b` is refused when `a` is). */
  readonly unqueryable?: ReadonlySet<string>;
  /** Left out of `$fields` (top-level names; `a.b` goes when `a` does). */
  readonly unprojectable?: ReadonlySet<string>;
}

const NO_REFUSALS: QueryRefusals = {};

/** Commands valid at the top of a query. */
const COMMANDS = new Set(['$fields', '$sort', '$limit', '$skip', '$limitRecursion', '$skipEvents', '$or', '$and', '$nor', '$search']);
/** Operators valid on a property. */
const OPERATORS = new Set(['$gt', '$gte', '$lt', '$lte', '$ne', '$in', '$nin', '$regex', '$options', '$exists', '$size', '$all', '$elemMatch', '$not']);
/** Operators that run code or reach outside the query: never accepted. */
const FORBIDDEN = new Set(['$where', '$function', '$accumulator', '$expr', '$jsonSchema', '$text', '$lookup', '$merge', '$out']);
const MAX_REGEX_LENGTH = 512;
const MAX_DEPTH = 8;

/**
 * Validates a parsed query against a Collection's properties and compiles it: values are coerced
 * by property type, `$` commands are checked, operators that do not belong are refused with 400.
 * Keys that are neither properties nor `id` nor commands do not filter (scripts still see them).
 */
export function compileQuery(query: Record<string, unknown>, properties: Record<string, PropertyDef>, refusals: QueryRefusals = NO_REFUSALS): CompiledQuery {
  const compiled: CompiledQuery = { filter: {}, options: {}, skipEvents: false };
  for (const key of Object.keys(query)) {
    const value = query[key];
    if (key.startsWith('$')) {
      compileCommand(compiled, key, value, properties, refusals);
    } else {
      assertQueryable(key, refusals.unqueryable);
      const def = propertyFor(key, properties);
      if (def !== undefined) compiled.filter[key] = compileCondition(key, value, def, 0);
    }
  }
  return compiled;
}

/** Compiles only the filter part of a query (a precondition or an `$or` branch). */
export function compileFilter(query: Record<string, unknown>, properties: Record<string, PropertyDef>, refusals: QueryRefusals = NO_REFUSALS, depth = 0): Filter {
  if (depth > MAX_DEPTH) throw new SvcError('INVALID_QUERY', 'query nested too deeply');
  const filter: Filter = {};
  for (const key of Object.keys(query)) {
    const value = query[key];
    if (key === '$or' || key === '$and' || key === '$nor') {
      filter[key] = compileLogical(key, value, properties, refusals, depth + 1);
    } else if (key === '$search') {
      filter.$search = compileSearch(value, properties, refusals);
    } else if (key.startsWith('$')) {
      if (FORBIDDEN.has(key)) throw forbidden(key);
      if (!COMMANDS.has(key)) throw new SvcError('INVALID_QUERY', `unknown query operator ${key}`);
    } else {
      assertQueryable(key, refusals.unqueryable);
      const def = propertyFor(key, properties);
      if (def !== undefined) filter[key] = compileCondition(key, value, def, depth);
    }
  }
  return filter;
}

/** Refuses a key naming a property the caller may not read (or a path inside one). */
function assertQueryable(key: string, unqueryable: ReadonlySet<string> | undefined): void {
  if (unqueryable === undefined || unqueryable.size === 0) return;
  const head = headOf(key);
  if (unqueryable.has(head)) throw new SvcError('INVALID_QUERY', `${head} may not be queried`, { errors: { [head]: 'may not be queried' } });
}

/** The top-level property a key names: `a` for `a.b`. */
function headOf(key: string): string {
  const dot = key.indexOf('.');
  return dot > 0 ? key.slice(0, dot) : key;
}

/** `id` is a string property of every object; `a.b` filters inside an object property `a`. */
function propertyFor(key: string, properties: Record<string, PropertyDef>): PropertyDef | undefined {
  if (key === 'id') return { type: 'string' };
  const own = Object.hasOwn(properties, key) ? properties[key] : undefined;
  if (own) return own;
  const dot = key.indexOf('.');
  if (dot > 0) {
    const head = key.slice(0, dot);
    const parent = Object.hasOwn(properties, head) ? properties[head] : undefined;
    if (parent && (parent.type === 'object' || parent.type === 'array')) return { type: 'object' };
  }
  return undefined;
}

function compileCommand(compiled: CompiledQuery, key: string, value: unknown, properties: Record<string, PropertyDef>, refusals: QueryRefusals): void {
  switch (key) {
    case '$or':
    case '$and':
    case '$nor':
      compiled.filter[key] = compileLogical(key, value, properties, refusals, 1);
      return;
    case '$fields': {
      const fields = compileFields(value, refusals.unprojectable);
      // Nothing left (it named only what the caller may not read): as a query without $fields.
      if (Object.keys(fields).length > 0) compiled.options.fields = fields;
      return;
    }
    case '$sort':
      compiled.options.sort = compileSort(value, properties, refusals.unqueryable);
      return;
    case '$limit':
      compiled.options.limit = toCount(key, value);
      return;
    case '$skip':
      compiled.options.skip = toCount(key, value);
      return;
    case '$search':
      compiled.filter.$search = compileSearch(value, properties, refusals);
      return;
    case '$limitRecursion':
      compiled.limitRecursion = toCount(key, value);
      return;
    case '$skipEvents':
      compiled.skipEvents = value === true || value === 'true';
      return;
    default:
      if (FORBIDDEN.has(key)) throw forbidden(key);
      throw new SvcError('INVALID_QUERY', `unknown query command ${key}`);
  }
}

/**
 * `$search`: a text of at most MAX_SEARCH_LENGTH characters and MAX_SEARCH_WORDS words, over every
 * property declared searchable (`"search": true`). A caller who may not read one of them is
 * refused (400), as for a filter on it: which objects a search finds must not tell what such a
 * property holds.
 */
function compileSearch(value: unknown, properties: Record<string, PropertyDef>, refusals: QueryRefusals): SearchFilter {
  if (typeof value !== 'string') throw new SvcError('INVALID_QUERY', '$search must be a string of words');
  if (value.length > MAX_SEARCH_LENGTH) throw new SvcError('INVALID_QUERY', `$search is longer than ${MAX_SEARCH_LENGTH} characters`);
  const fields = Object.keys(properties).filter((name) => properties[name]?.search === true);
  if (fields.length === 0) throw new SvcError('INVALID_QUERY', '$search: no property of this collection is searchable (declare one with "search": true)');
  for (const field of fields) assertQueryable(field, refusals.unqueryable);
  const words = searchWords(value);
  if (words.length > MAX_SEARCH_WORDS) throw new SvcError('INVALID_QUERY', `$search takes at most ${MAX_SEARCH_WORDS} words`);
  if (words.some((word) => word.length > MAX_WORD_LENGTH)) throw new SvcError('INVALID_QUERY', `$search: a word is longer than ${MAX_WORD_LENGTH} characters`);
  return { words, fields };
}

function compileLogical(key: string, value: unknown, properties: Record<string, PropertyDef>, refusals: QueryRefusals, depth: number): Filter[] {
  if (!Array.isArray(value) || value.length === 0) throw new SvcError('INVALID_QUERY', `${key} must be a non-empty array of queries`);
  return value.map((branch) => {
    if (!isPlainObject(branch)) throw new SvcError('INVALID_QUERY', `${key} must be an array of query objects`);
    return compileFilter(branch, properties, refusals, depth);
  });
}

/** A property's condition: a plain value (coerced) or an object of operators. */
function compileCondition(key: string, value: unknown, def: PropertyDef, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new SvcError('INVALID_QUERY', 'query nested too deeply');
  if (!isPlainObject(value)) return coerce(key, value, def);
  const keys = Object.keys(value);
  const operatorKeys = keys.filter((k) => k.startsWith('$'));
  if (operatorKeys.length === 0) {
    assertNoOperators(key, value, 0);
    return value;
  }
  if (operatorKeys.length !== keys.length) throw new SvcError('INVALID_QUERY', `${key}: operators cannot be mixed with plain keys`);
  const out: Record<string, unknown> = {};
  for (const op of keys) {
    const arg = value[op];
    if (FORBIDDEN.has(op)) throw forbidden(op);
    if (!OPERATORS.has(op)) throw new SvcError('INVALID_QUERY', `${key}: unknown operator ${op}`);
    switch (op) {
      case '$in':
      case '$nin':
      case '$all':
        if (!Array.isArray(arg)) throw new SvcError('INVALID_QUERY', `${key}: ${op} needs an array`);
        out[op] = arg.map((v) => coerce(key, v, elementDef(def)));
        break;
      case '$regex':
        out.$regex = compileRegex(key, arg, value.$options);
        break;
      case '$options':
        if (value.$regex === undefined) throw new SvcError('INVALID_QUERY', `${key}: $options needs $regex`);
        break;
      case '$exists':
        out.$exists = arg === true || arg === 'true' || arg === 1;
        break;
      case '$size':
        out.$size = toCount(`${key}.$size`, arg);
        break;
      case '$elemMatch':
        if (!isPlainObject(arg)) throw new SvcError('INVALID_QUERY', `${key}: $elemMatch needs an object`);
        out.$elemMatch = compileElemMatch(key, arg, depth + 1);
        break;
      case '$not':
        if (!isPlainObject(arg)) throw new SvcError('INVALID_QUERY', `${key}: $not needs an operator object`);
        out.$not = compileCondition(key, arg, def, depth + 1);
        break;
      default:
        out[op] = coerce(key, arg, def);
    }
  }
  return out;
}

function compileElemMatch(key: string, arg: Record<string, unknown>, depth: number): unknown {
  const keys = Object.keys(arg);
  if (keys.every((k) => k.startsWith('$'))) return compileCondition(key, arg, { type: 'object' }, depth);
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    if (k.startsWith('$')) throw new SvcError('INVALID_QUERY', `${key}: operators cannot be mixed with plain keys`);
    out[k] = compileCondition(`${key}.${k}`, arg[k], { type: 'object' }, depth + 1);
  }
  return out;
}

/** Arrays hold values of any type, so their elements are not coerced. */
function elementDef(def: PropertyDef): PropertyDef {
  return def.type === 'array' ? { type: 'object' } : def;
}

/** Coerces a query value to the property's type; strings from plain query strings become numbers or booleans. */
function coerce(key: string, value: unknown, def: PropertyDef): unknown {
  if (value === null) return null;
  if (isPlainObject(value) || Array.isArray(value)) {
    assertNoOperators(key, value, 0);
    return value;
  }
  switch (def.type) {
    case 'number': {
      if (typeof value === 'number') return value;
      if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
      throw new SvcError('INVALID_QUERY', `${key} must be a number`, { errors: { [key]: 'must be a number' } });
    }
    case 'boolean': {
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === '1') return true;
      if (value === 'false' || value === '0') return false;
      throw new SvcError('INVALID_QUERY', `${key} must be a boolean`, { errors: { [key]: 'must be a boolean' } });
    }
    case 'string':
      return typeof value === 'number' || typeof value === 'boolean' ? String(value) : value;
    default:
      return value;
  }
}

/** Plain values (equality, $in elements) must not smuggle operators. */
function assertNoOperators(key: string, value: unknown, depth: number): void {
  if (depth > MAX_DEPTH) throw new SvcError('INVALID_QUERY', 'query value nested too deeply');
  if (Array.isArray(value)) {
    for (const v of value) assertNoOperators(key, v, depth + 1);
  } else if (isPlainObject(value)) {
    for (const k of Object.keys(value)) {
      if (k.startsWith('$')) {
        if (FORBIDDEN.has(k)) throw forbidden(k);
        throw new SvcError('INVALID_QUERY', `${key}: operator ${k} is not allowed inside a value`);
      }
      assertNoOperators(key, value[k], depth + 1);
    }
  }
}

function compileRegex(key: string, pattern: unknown, options: unknown): RegExp {
  if (typeof pattern !== 'string') throw new SvcError('INVALID_QUERY', `${key}: $regex needs a string`);
  if (pattern.length > MAX_REGEX_LENGTH) throw new SvcError('INVALID_QUERY', `${key}: $regex longer than ${MAX_REGEX_LENGTH} characters`);
  const flags = options === undefined ? '' : options;
  if (typeof flags !== 'string' || !/^[imsu]*$/.test(flags) || new Set(flags).size !== flags.length) {
    throw new SvcError('INVALID_QUERY', `${key}: $options may hold only the flags i, m, s and u`);
  }
  try {
    return new RegExp(pattern, flags);
  } catch {
    throw new SvcError('INVALID_QUERY', `${key}: invalid regular expression`);
  }
}

function compileFields(value: unknown, unprojectable: ReadonlySet<string> | undefined): Record<string, 0 | 1> {
  if (!isPlainObject(value)) throw new SvcError('INVALID_QUERY', '$fields must be an object of property: 0 or 1');
  const out: Record<string, 0 | 1> = {};
  let include = 0;
  let exclude = 0;
  for (const key of Object.keys(value)) {
    if (key.startsWith('$')) throw new SvcError('INVALID_QUERY', `$fields: invalid property ${key}`);
    // Deployd and the spec answer such a $fields (`{"password": 1}`) with 200: left out, as if
    // not named (its value unchecked too), before the rest is checked.
    if (unprojectable !== undefined && unprojectable.has(headOf(key))) continue;
    const v = value[key];
    const flag = v === 1 || v === true || v === '1' ? 1 : v === 0 || v === false || v === '0' ? 0 : undefined;
    if (flag === undefined) throw new SvcError('INVALID_QUERY', '$fields values must be 0 or 1');
    if (key !== 'id') {
      if (flag === 1) include++;
      else exclude++;
    }
    out[key] = flag;
  }
  if (include > 0 && exclude > 0) throw new SvcError('INVALID_QUERY', '$fields cannot mix inclusion and exclusion');
  return out;
}

/** Sorting by a key that is no property is dropped: it could order objects by hidden fields. */
function compileSort(value: unknown, properties: Record<string, PropertyDef>, unqueryable: ReadonlySet<string> | undefined): Record<string, 1 | -1> {
  if (!isPlainObject(value)) throw new SvcError('INVALID_QUERY', '$sort must be an object of property: 1 or -1');
  const out: Record<string, 1 | -1> = {};
  for (const key of Object.keys(value)) {
    if (key.startsWith('$')) throw new SvcError('INVALID_QUERY', `$sort: invalid property ${key}`);
    assertQueryable(key, unqueryable);
    const v = value[key];
    const direction = v === 1 || v === '1' || v === 'asc' ? 1 : v === -1 || v === '-1' || v === 'desc' ? -1 : undefined;
    if (direction === undefined) throw new SvcError('INVALID_QUERY', '$sort values must be 1 or -1');
    if (propertyFor(key, properties) !== undefined) out[key] = direction;
  }
  return out;
}

function toCount(key: string, value: unknown): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new SvcError('INVALID_QUERY', `${key} must be a non-negative integer`);
  return n;
}

function forbidden(op: string): SvcError {
  return new SvcError('FORBIDDEN_OPERATOR', `operator ${op} is not allowed`);
}
