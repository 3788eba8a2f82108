import { createHash } from 'node:crypto';
// redis is imported by connectLoginLimits, not here: an app without Redis never loads it.
import { LoginLimiter, loginLimitSettings, redactUrl } from '@svc/core';
import type { LoginAttempt, LoginLimiterOptions, LoginLimits, LoginLimitsFactory, Logger } from '@svc/core';
import { memoryRateCounter } from './rateCounter.js';
import type { RateCounter, RateHit } from './rateCounter.js';

/** A Redis command that takes longer than this falls back to the process's own counts. */
const COMMAND_TIMEOUT_MS = 1000;
const START_RETRIES = 5;

/**
 * One attempt, atomically: refuse when the (address, username) or address count is used up; else
 * count it on all three and, when the username is being slowed down, take the next slot.
 * KEYS: pair, address, username, slot. ARGV: max, maxPerAddress, windowMs, slowdownMs.
 * Answers {refused (0/1), retry-after ms, delay ms}.
 */
const ATTEMPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max, maxAddr, win, slow = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local pair = tonumber(redis.call('GET', KEYS[1]) or '0')
local addr = tonumber(redis.call('GET', KEYS[2]) or '0')
if pair >= max or addr >= maxAddr then
  local ttl = redis.call('PTTL', pair >= max and KEYS[1] or KEYS[2])
  if ttl < 0 then ttl = win end
  return {1, ttl, 0}
end
local function bump(k)
  local v = redis.call('INCR', k)
  if v == 1 then redis.call('PEXPIRE', k, win) end
  return v
end
bump(KEYS[1])
bump(KEYS[2])
local user = bump(KEYS[3])
local delay = 0
if pair > 0 and user > max then
  local slot = tonumber(redis.call('GET', KEYS[4]) or '0')
  if slot < now then slot = now end
  redis.call('SET', KEYS[4], slot + slow, 'PX', slot + slow - now + 1000)
  delay = slot - now
end
return {0, 0, delay}
`;

/** A successful attempt is refunded: it counts against no one. */
const REFUND = `
for _, k in ipairs(KEYS) do
  if tonumber(redis.call('GET', k) or '0') > 0 then redis.call('DECR', k) end
end
return 0
`;

/** One hit on a fixed window: INCR, the expiry set by the first. KEYS: counter. ARGV: windowMs. Answers {count, pttl}. */
const HIT = `
local v = redis.call('INCR', KEYS[1])
if v == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then ttl = tonumber(ARGV[1]) end
return {v, ttl}
`;

/** Login limits counted in Redis, so every process of the app enforces the same ones. */
export interface RedisLoginLimits {
  factory: LoginLimitsFactory;
  /** Fixed-window counters on the same connection (account mail limits); this process's own while Redis is out. */
  counter: RateCounter;
  close(): Promise<void>;
}

/**
 * Connects to Redis for login limits shared by all processes (`--redis`). While Redis cannot be
 * reached, each process falls back to its own in-memory counts (logged once per outage), so a
 * Redis outage neither opens logins to unlimited guessing nor blocks them.
 */
export async function connectLoginLimits(url: string, logger: Logger, prefix = 'svc'): Promise<RedisLoginLimits> {
  let connected = false;
  const client = (await import('redis')).createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      reconnectStrategy: (retries: number, cause: Error) => (connected ? Math.min(100 * (retries + 1), 3000) : retries >= START_RETRIES ? cause : 200),
    },
  });
  let reported = false;
  client.on('error', (err: unknown) => {
    if (reported || !connected) return;
    reported = true;
    logger.warn('login limits: redis unreachable, counting in this process until it is back', { error: err });
  });
  client.on('ready', () => (reported = false));
  try {
    await client.connect();
    connected = true;
  } catch (err) {
    if (client.isOpen) client.destroy();
    throw new Error(`cannot connect to redis at ${redactUrl(url)} (--redis): ${(err as Error).message}`, { cause: err });
  }

  const factory: LoginLimitsFactory = (options: LoginLimiterOptions | undefined): LoginLimits => {
    const settings = loginLimitSettings(options);
    const local = new LoginLimiter(options);
    // Usernames and addresses are hashed: keys stay short whatever a client sends.
    const key = (kind: string, value: string): string => `${prefix}:login:${kind}:${createHash('sha256').update(value).digest('base64url')}`;
    return {
      async attempt(address: string, username: string): Promise<LoginAttempt> {
        const keys = [key('p', `${address}\n${username}`), key('a', address), key('u', username), key('s', username)];
        let reply: unknown;
        try {
          reply = await withTimeout(
            client.eval(ATTEMPT, { keys, arguments: [settings.max, settings.maxPerAddress, settings.windowMs, settings.slowdownMs].map(String) }),
          );
        } catch (err) {
          if (!reported) {
            reported = true;
            logger.warn('login limits: redis unreachable, counting in this process until it is back', { error: err });
          }
          return local.attempt(address, username);
        }
        const [refused, retryMs, delayMs] = (reply as number[]).map(Number) as [number, number, number];
        if (refused === 1) return { retryAfter: Math.max(1, Math.ceil(retryMs / 1000)), delayMs: 0, succeeded: () => undefined };
        let settled = false;
        return {
          retryAfter: 0,
          delayMs,
          succeeded: async () => {
            if (settled) return;
            settled = true;
            await withTimeout(client.eval(REFUND, { keys: keys.slice(0, 3) })).catch(() => undefined);
          },
        };
      },
    };
  };
  const localCounter = memoryRateCounter();
  const counter: RateCounter = {
    async hit(name: string, windowMs: number): Promise<RateHit> {
      const key = `${prefix}:rate:${createHash('sha256').update(name).digest('base64url')}`;
      try {
        const [count, resetMs] = ((await withTimeout(client.eval(HIT, { keys: [key], arguments: [String(windowMs)] }))) as number[]).map(Number) as [number, number];
        return { count, resetMs };
      } catch (err) {
        if (!reported) {
          reported = true;
          logger.warn('rate limits: redis unreachable, counting in this process until it is back', { error: err });
        }
        return localCounter.hit(name, windowMs);
      }
    },
  };
  return {
    factory,
    counter,
    async close() {
      if (client.isOpen) await client.close();
    },
  };
}

function withTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis did not answer within ${COMMAND_TIMEOUT_MS} ms`)), COMMAND_TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
