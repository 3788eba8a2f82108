import { randomBytes } from 'node:crypto';
import type { createClient } from 'redis';
import { redactUrl } from '@svc/core';
import type { Logger, ScheduledJobs } from '@svc/core';

/** A Redis command that takes longer than this counts as unanswered: the run is skipped. */
const COMMAND_TIMEOUT_MS = 1000;

/** Deletes a claim only when this process holds it (a claim past its time may be another's now). KEYS: claim. ARGV: token. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Options of {@link createJobHost}. */
export interface JobHostOptions {
  /** --redis: claims shared by every process on it. */
  redis?: string | undefined;
  /** --db: other processes may serve the app. */
  shared: boolean;
  runWallMs: number;
  logger: Logger;
  /** Key prefix in Redis. */
  prefix?: string;
}

/** One version of the app's resources (the start, then each reload) and its jobs. */
export interface JobMount {
  jobs: ScheduledJobs;
  /** Stops this version's timers (its resources were replaced, or the app stops). */
  stop(): void;
}

/** The app's scheduled jobs, across its reloads. */
export interface JobHost {
  /** The jobs of a new version of the resources. */
  mount(): JobMount;
  /** The server answers internal requests: jobs may run. */
  started(): void;
  close(): Promise<void>;
}

/**
 * Claims of scheduled runs. With Redis, a claim is a key set with SET NX PX holding this process's
 * token: the first process to set it runs, the others skip. The Redis connection is made at the
 * first claim, so an app without schedules never opens it. Without Redis, claims live in this
 * process; they are shared by the versions of the resources a reload makes, so a job whose old
 * and new versions both see a time runs once.
 */
export function createJobHost(options: JobHostOptions): JobHost {
  const token = randomBytes(12).toString('hex');
  const prefix = `${options.prefix ?? 'svc'}:job:`;
  const local = new Map<string, number>();
  let client: ReturnType<typeof createClient> | undefined;
  let connecting: Promise<ReturnType<typeof createClient>> | undefined;
  let reported = false;
  let closed = false;
  let markStarted!: () => void;
  const ready = new Promise<void>((resolve) => (markStarted = resolve));
  const scope: ScheduledJobs['scope'] = options.redis ? 'redis' : options.shared ? 'each' : 'process';

  const redis = (url: string): Promise<ReturnType<typeof createClient>> =>
    (connecting ??= (async () => {
      // redis is imported here, not at start: an app without Redis never loads it.
      const made = (await import('redis')).createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: (retries: number) => Math.min(100 * (retries + 1), 3000) } });
      made.on('error', () => undefined);
      made.on('ready', () => (reported = false));
      try {
        await withTimeout(made.connect());
      } catch (err) {
        // A client still trying to connect would retry for ever: the next claim makes another.
        try {
          made.destroy();
        } catch {
          // Not open.
        }
        throw err;
      }
      if (closed) {
        made.destroy();
        throw new Error('scheduled jobs are stopped');
      }
      client = made;
      return made;
    })().catch((err: unknown) => {
      connecting = undefined;
      throw err;
    }));

  const unreachable = (err: unknown): false => {
    if (!reported) {
      reported = true;
      options.logger.warn(`scheduled jobs: redis at ${redactUrl(options.redis ?? '')} unreachable, runs are skipped until it is back (so that none runs twice)`, { error: err });
    }
    return false;
  };

  const claim = async (key: string, ttlMs: number): Promise<boolean> => {
    if (closed) return false;
    const now = Date.now();
    if (!options.redis) {
      for (const [k, until] of local) if (until <= now) local.delete(k);
      if (local.has(key)) return false;
      local.set(key, now + ttlMs);
      return true;
    }
    try {
      const conn = await redis(options.redis);
      return (await withTimeout(conn.set(prefix + key, token, { condition: 'NX', expiration: { type: 'PX', value: Math.ceil(ttlMs) } }))) === 'OK';
    } catch (err) {
      return unreachable(err);
    }
  };

  const release = async (key: string): Promise<void> => {
    if (!options.redis) {
      local.delete(key);
      return;
    }
    // Left to expire when Redis cannot be reached.
    try {
      if (client?.isReady) await withTimeout(client.eval(RELEASE, { keys: [prefix + key], arguments: [token] }));
    } catch {
      // Expires on its own.
    }
  };

  const mounts = new Set<AbortController>();
  return {
    mount() {
      const controller = new AbortController();
      if (closed) controller.abort();
      else mounts.add(controller);
      return {
        jobs: { scope, runWallMs: options.runWallMs, ready, signal: controller.signal, claim, release },
        stop() {
          mounts.delete(controller);
          controller.abort();
        },
      };
    },
    started: () => markStarted(),
    async close() {
      closed = true;
      for (const controller of mounts) controller.abort();
      mounts.clear();
      const open = client;
      client = undefined;
      if (open?.isOpen) await open.close().catch(() => open.destroy());
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
