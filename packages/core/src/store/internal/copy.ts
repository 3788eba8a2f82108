/**
 * Deep copies of nedb's cached objects, the way nedb's own `model.deepCopy` makes them (booleans,
 * numbers, strings, null and Dates as they are; arrays and objects copied; own enumerable keys;
 * anything else undefined), fused with the renaming of `_id` to `id` so a read copies each object
 * once instead of twice.
 */
export function copyValue(value: unknown): unknown {
  if (typeof value !== 'object') {
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : undefined;
  }
  if (value === null) return null;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyValue(value[i]);
    return out;
  }
  if (isDate(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (Object.hasOwn(value, key)) out[key] = copyValue((value as Record<string, unknown>)[key]);
  }
  return out;
}

/**
 * The embedded store's hidden insertion number of each object: lists without `$sort` come back in
 * insertion order, as MongoDB's natural order does in practice. Never answered, never written by a
 * caller.
 */
export const SEQ = '__svcSeq';

/** A copy of a cached object with `_id` renamed to `id` (first key, as before), without SEQ. */
export function copyDoc(raw: { _id: string } & Record<string, unknown>): { id: string } & Record<string, unknown> {
  const out: Record<string, unknown> = { id: raw._id };
  for (const key in raw) {
    if (key !== '_id' && key !== SEQ && Object.hasOwn(raw, key)) out[key] = copyValue(raw[key]);
  }
  return out as { id: string } & Record<string, unknown>;
}

function isDate(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return false;
  return value instanceof Date || Object.prototype.toString.call(value) === '[object Date]';
}
