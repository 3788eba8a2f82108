/** Deepest nesting of request data a script receives; deeper input is refused with a 400. */
export const MAX_INPUT_DEPTH = 64;

/** Whether a JSON-like value nests deeper than `limit` (iterative: deep input cannot overflow the stack). */
export function exceedsDepth(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (current === null || typeof current !== 'object') continue;
    if (depth >= limit) return true;
    if (Array.isArray(current)) for (const item of current) stack.push([item, depth + 1]);
    else for (const key in current) if (Object.hasOwn(current, key)) stack.push([(current as Record<string, unknown>)[key], depth + 1]);
  }
  return false;
}
