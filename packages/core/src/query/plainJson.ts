/**
 * Whether `value` holds nothing JSON would confuse or drop (no Date, RegExp, undefined nor NaN or
 * infinity: plain objects, arrays, strings, finite numbers, booleans and null), so that
 * JSON.stringify alone tells such values apart; false past a depth no query has. Keys made of
 * values: the store's plans (executor.ts, whose replacer takes the other values) and the kept
 * `$expand` answers (expandTexts.ts, which keep nothing for them).
 */
export function plainJson(value: unknown, depth: number): boolean {
  if (value === undefined || value instanceof Date || value instanceof RegExp) return false;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || value === null) return true;
  if (depth > 32) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!plainJson(value[i], depth + 1)) return false;
    return true;
  }
  // Only plain objects: another kind (a toJSON of its own) is the replacer's to judge.
  const proto = Object.getPrototypeOf(value) as unknown;
  if ((proto !== Object.prototype && proto !== null) || 'toJSON' in value) return false;
  for (const name in value) if (!plainJson((value as Record<string, unknown>)[name], depth + 1)) return false;
  return true;
}
