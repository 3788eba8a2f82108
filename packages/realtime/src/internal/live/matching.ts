import { matchesFilter } from '@svc/core';
import type { Doc, Filter } from '@svc/core';

/**
 * How a subscription tests objects: for a filter made only of equalities on top-level properties
 * with a string, number or boolean (`{owner: "u1", done: false}`), directly, with the store's
 * meaning (an array property matches when one of its elements is equal); else `matchesFilter`.
 */
export function matcherOf(filter: Filter): (object: Doc) => boolean {
  const keys = Object.keys(filter);
  const simple = keys.length > 0 && keys.every((k) => !k.startsWith('$') && !k.includes('.') && isPrimitive(filter[k]));
  if (!simple) return (object) => matchesFilter(object, filter);
  return (object) => {
    for (const key of keys) {
      const value = object[key];
      const wanted = filter[key];
      if (value === wanted) continue;
      if (!Array.isArray(value) || !value.includes(wanted)) return false;
    }
    return true;
  };
}

function isPrimitive(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** A subscription's own filter and the caller's access filter (the list rule), together. */
export function withAccess(own: Filter, access: Filter): Filter {
  return Object.keys(access).length === 0 ? own : { $and: [own, access] };
}

/** `$fields` on an object already shown: include-list (with id) or exclude-list. */
export function project(object: Record<string, unknown>, fields: Record<string, 0 | 1> | undefined): Record<string, unknown> {
  if (fields === undefined) return object;
  const including = Object.keys(fields).some((k) => k !== 'id' && fields[k] === 1);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(object)) {
    const flag = fields[key];
    if (including ? flag === 1 || (key === 'id' && flag !== 0) : flag !== 0) out[key] = object[key];
  }
  return out;
}
