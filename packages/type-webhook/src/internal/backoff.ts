/**
 * The wait before attempt `attempt + 1` after `attempt` failed: `baseMs` doubled at each retry,
 * at most `maxMs`, with "equal jitter" (between half of it and all of it) so that deliveries that
 * failed together (a receiver down) do not all come back at the same moment. A Retry-After the
 * receiver sent is waited for at least (up to `maxMs`).
 */
export function retryDelay(attempt: number, baseMs: number, maxMs: number, retryAfterMs?: number, random: () => number = Math.random): number {
  const exponential = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40));
  const jittered = exponential / 2 + random() * (exponential / 2);
  return Math.round(Math.min(maxMs, Math.max(jittered, retryAfterMs ?? 0)));
}
