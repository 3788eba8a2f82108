/** One counted hit: how many in the current window, and when that window ends. */
export interface RateHit {
  count: number;
  /** Milliseconds until the window ends. */
  resetMs: number;
}

/**
 * Fixed-window counters (account mails per recipient and per client). In memory per process by
 * default; shared by every process through Redis with `--redis` (see redisLoginLimits.ts).
 */
export interface RateCounter {
  /** Counts one hit on `key` and answers the window's count so far. */
  hit(key: string, windowMs: number): Promise<RateHit>;
}

/** Counters in this process's memory. */
export function memoryRateCounter(): RateCounter {
  const windows = new Map<string, { count: number; resetAt: number }>();
  return {
    hit(key, windowMs) {
      const now = Date.now();
      if (windows.size > 100_000) for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k);
      let window = windows.get(key);
      if (window === undefined || window.resetAt <= now) {
        window = { count: 0, resetAt: now + windowMs };
        windows.set(key, window);
      }
      window.count++;
      return Promise.resolve({ count: window.count, resetMs: window.resetAt - now });
    },
  };
}
