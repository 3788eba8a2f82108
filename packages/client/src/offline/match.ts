import type { ReplicaObject } from './types.js';

/**
 * Whether an object matches a query's filter, for objects the replica holds that the server has
 * not placed yet (created or changed offline). The common operators: equality, $eq, $ne, $in,
 * $nin, $gt, $gte, $lt, $lte, $exists, $or, $and, $nor; commands ($sort, $limit...) are not
 * filters. An operator it does not know matches (the server's next answer settles it).
 */
export function matches(object: Record<string, unknown>, query: Record<string, unknown>): boolean {
  for (const [key, condition] of Object.entries(query)) {
    if (key === '$or') {
      if (Array.isArray(condition) && !condition.some((q) => matches(object, q as Record<string, unknown>))) return false;
    } else if (key === '$and') {
      if (Array.isArray(condition) && !condition.every((q) => matches(object, q as Record<string, unknown>))) return false;
    } else if (key === '$nor') {
      if (Array.isArray(condition) && condition.some((q) => matches(object, q as Record<string, unknown>))) return false;
    } else if (!key.startsWith('$') && !holds(object[key], condition)) {
      return false;
    }
  }
  return true;
}

function holds(value: unknown, condition: unknown): boolean {
  if (typeof condition !== 'object' || condition === null || Array.isArray(condition) || !Object.keys(condition).some((k) => k.startsWith('$'))) {
    return Array.isArray(value) && !Array.isArray(condition) ? value.some((v) => same(v, condition)) : same(value, condition);
  }
  for (const [op, arg] of Object.entries(condition)) {
    if (op === '$eq' && !holds(value, arg)) return false;
    if (op === '$ne' && holds(value, arg)) return false;
    if (op === '$in' && Array.isArray(arg) && !arg.some((a) => holds(value, a))) return false;
    if (op === '$nin' && Array.isArray(arg) && arg.some((a) => holds(value, a))) return false;
    if (op === '$exists' && (value !== undefined) !== Boolean(arg)) return false;
    if ((op === '$gt' || op === '$gte' || op === '$lt' || op === '$lte') && !compares(value, op, arg)) return false;
  }
  return true;
}

function compares(value: unknown, op: string, arg: unknown): boolean {
  if (typeof value !== typeof arg || (typeof value !== 'number' && typeof value !== 'string')) return false;
  const a = value as number | string;
  const b = arg as number | string;
  return op === '$gt' ? a > b : op === '$gte' ? a >= b : op === '$lt' ? a < b : a <= b;
}

function same(a: unknown, b: unknown): boolean {
  return a === b || (a === undefined && b === null) || JSON.stringify(a) === JSON.stringify(b);
}

/** The objects ordered by a query's `$sort` (stable), cut by `$skip` and `$limit`. */
export function ordered(objects: ReplicaObject[], query: Record<string, unknown>): ReplicaObject[] {
  const sort = query.$sort;
  const keys = typeof sort === 'object' && sort !== null ? Object.entries(sort as Record<string, unknown>).map(([k, v]) => [k, Number(v) < 0 ? -1 : 1] as const) : [];
  const out = keys.length === 0 ? objects : [...objects].sort((x, y) => {
    for (const [k, dir] of keys) {
      const a = x[k];
      const b = y[k];
      if (a === b) continue;
      if (a === undefined || a === null) return -dir;
      if (b === undefined || b === null) return dir;
      return (a < b ? -1 : 1) * dir;
    }
    return 0;
  });
  const skip = Number(query.$skip) || 0;
  const limit = query.$limit === undefined ? undefined : Number(query.$limit);
  return limit === undefined || !Number.isFinite(limit) ? out.slice(skip) : out.slice(skip, skip + limit);
}
