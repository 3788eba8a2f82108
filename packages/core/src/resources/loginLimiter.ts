/** Options of the failed-login limiter (app.json `loginRateLimit`). */
export interface LoginLimiterOptions {
  /** Failed logins allowed per window, per username and per client address. Default 10. */
  max?: number;
  /** The window in seconds. Default 60. */
  windowSeconds?: number;
}

/**
 * Counts failed logins per key (a username, a client address) in a fixed window. In memory, per
 * process: several processes each allow `max`, which still bounds guessing.
 */
export class LoginLimiter {
  private readonly max: number;
  private readonly windowMs: number;
  private readonly failures = new Map<string, { count: number; resetAt: number }>();

  constructor(options: LoginLimiterOptions = {}) {
    this.max = options.max ?? 10;
    this.windowMs = (options.windowSeconds ?? 60) * 1000;
  }

  /** Seconds until `keys` may try again, or 0 when they may now. */
  retryAfter(keys: readonly string[], now = Date.now()): number {
    let wait = 0;
    for (const key of keys) {
      const entry = this.failures.get(key);
      if (entry === undefined) continue;
      if (entry.resetAt <= now) this.failures.delete(key);
      else if (entry.count >= this.max) wait = Math.max(wait, Math.ceil((entry.resetAt - now) / 1000));
    }
    return wait;
  }

  fail(keys: readonly string[], now = Date.now()): void {
    if (this.failures.size > 100_000) this.prune(now);
    for (const key of keys) {
      const entry = this.failures.get(key);
      if (entry === undefined || entry.resetAt <= now) this.failures.set(key, { count: 1, resetAt: now + this.windowMs });
      else entry.count++;
    }
  }

  private prune(now: number): void {
    for (const [key, entry] of this.failures) if (entry.resetAt <= now) this.failures.delete(key);
  }
}
