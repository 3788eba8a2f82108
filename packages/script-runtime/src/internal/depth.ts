/** Deepest nesting of request data a script receives; deeper input is refused with a 400. */
export const MAX_INPUT_DEPTH = 64;

/**
 * Whether a JSON-like value nests deeper than `limit`. Recursive, but never deeper than `limit`
 * calls (deep input cannot overflow the stack), and it allocates nothing: every scripted request
 * walks its locals, and an explicit stack of pairs was a good part of what a trivial run allocated.
 */
export function exceedsDepth(value: unknown, limit: number): boolean {
  return value !== null && typeof value === 'object' && deeper(value, 0, limit);
}

function deeper(current: object, depth: number, limit: number): boolean {
  if (depth >= limit) return true;
  if (Array.isArray(current)) {
    for (const item of current as unknown[]) if (item !== null && typeof item === 'object' && deeper(item, depth + 1, limit)) return true;
    return false;
  }
  for (const key in current) {
    if (!Object.hasOwn(current, key)) continue;
    const item = (current as Record<string, unknown>)[key];
    if (item !== null && typeof item === 'object' && deeper(item, depth + 1, limit)) return true;
  }
  return false;
}
