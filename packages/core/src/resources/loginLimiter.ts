/** Options of the login limiter (app.json `loginRateLimit`). */
export interface LoginLimiterOptions {
  /** Login attempts allowed per window for one username from one client address. Default 10. */
  max?: number;
  /** The window in seconds. Default 60. */
  windowSeconds?: number;
  /** Attempts allowed per window from one client address, all usernames together. Default 10 x `max`. */
  maxPerAddress?: number;
  /**
   * Once a username has had more than `max` failed attempts in the window (from all addresses
   * together), further attempts for it from addresses that already tried it in the window wait
   * their turn, this many ms apart. Default 1000.
   */
  slowdownMs?: number;
}

/** One login attempt under way: say how it ended. */
export interface LoginAttempt {
  /** Seconds to wait when the attempt is refused (429), else 0. */
  retryAfter: number;
  /** How long to wait before checking the password (the username is being slowed down). */
  delayMs: number;
  /** The password was right: the attempt does not count against anyone. */
  succeeded(): void | Promise<void>;
}

/**
 * Where login attempts are counted. The default ({@link LoginLimiter}) counts in memory, per
 * process; a server with several processes gives one that they share (Redis).
 */
export interface LoginLimits {
  /** Starts an attempt; it counts from the moment it is made (before the password check). */
  attempt(address: string, username: string): LoginAttempt | Promise<LoginAttempt>;
}

/** Makes the login limits of one UserCollection from its options (ResourceHost.loginLimits). */
export type LoginLimitsFactory = (options: LoginLimiterOptions | undefined) => LoginLimits;

/** The options with their defaults filled in. */
export interface LoginLimitSettings {
  max: number;
  maxPerAddress: number;
  windowMs: number;
  slowdownMs: number;
}

/** Fills in the defaults of the login limiter's options. */
export function loginLimitSettings(options: LoginLimiterOptions = {}): LoginLimitSettings {
  const max = options.max ?? 10;
  return { max, maxPerAddress: options.maxPerAddress ?? max * 10, windowMs: (options.windowSeconds ?? 60) * 1000, slowdownMs: options.slowdownMs ?? 1000 };
}

interface Counter {
  count: number;
  resetAt: number;
}

/**
 * Limits login attempts so that they can neither be raced nor used to lock others out:
 * - an attempt counts when it starts, before the password check, so parallel requests cannot all
 *   pass a check that counts failures after the bcrypt wait (a successful attempt is refunded);
 * - the hard limits are per (address, username) and per address: 10 wrong passwords for a
 *   username from one address block that address for that username, not the user;
 * - across addresses a username is only slowed down: attempts from addresses that already tried
 *   it wait in line, so a correct password from an address that never failed logs in at once.
 * In memory, per process: N processes allow N x the limits unless the server shares its counts
 * (`--redis`).
 */
export class LoginLimiter implements LoginLimits {
  private readonly max: number;
  private readonly maxPerAddress: number;
  private readonly windowMs: number;
  private readonly slowdownMs: number;
  private readonly counters = new Map<string, Counter>();
  private readonly nextSlot = new Map<string, number>();

  constructor(options: LoginLimiterOptions = {}) {
    ({ max: this.max, maxPerAddress: this.maxPerAddress, windowMs: this.windowMs, slowdownMs: this.slowdownMs } = loginLimitSettings(options));
  }

  /** Starts an attempt (synchronously, so that concurrent attempts see each other). */
  attempt(address: string, username: string, now = Date.now()): LoginAttempt {
    if (this.counters.size > 100_000) this.prune(now);
    const pairKey = `p\n${address}\n${username}`;
    const addrKey = `a\n${address}`;
    const userKey = `u\n${username}`;
    const pair = this.counter(pairKey, now);
    const addr = this.counter(addrKey, now);
    if (pair.count >= this.max || addr.count >= this.maxPerAddress) {
      const resetAt = pair.count >= this.max ? pair.resetAt : addr.resetAt;
      return { retryAfter: Math.max(1, Math.ceil((resetAt - now) / 1000)), delayMs: 0, succeeded: () => undefined };
    }
    const user = this.counter(userKey, now);
    const triedBefore = pair.count > 0;
    pair.count++;
    addr.count++;
    user.count++;
    let delayMs = 0;
    if (triedBefore && user.count > this.max) {
      const slot = Math.max(now, this.nextSlot.get(userKey) ?? 0);
      this.nextSlot.set(userKey, slot + this.slowdownMs);
      delayMs = slot - now;
    }
    let settled = false;
    return {
      retryAfter: 0,
      delayMs,
      succeeded: () => {
        if (settled) return;
        settled = true;
        for (const c of [pair, addr, user]) c.count = Math.max(0, c.count - 1);
      },
    };
  }

  private counter(key: string, now: number): Counter {
    let entry = this.counters.get(key);
    if (entry === undefined || entry.resetAt <= now) {
      entry = { count: 0, resetAt: now + this.windowMs };
      this.counters.set(key, entry);
    }
    return entry;
  }

  private prune(now: number): void {
    for (const [key, entry] of this.counters) if (entry.resetAt <= now) this.counters.delete(key);
    for (const [key, at] of this.nextSlot) if (at <= now) this.nextSlot.delete(key);
  }
}
