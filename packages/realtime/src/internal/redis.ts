import { createAdapter } from '@socket.io/redis-adapter';
import { createClient } from 'redis';
import type { Logger } from '@svc/core';

/** A connected pub/sub pair and the Socket.IO adapter over it. */
export interface RedisLink {
  adapter: ReturnType<typeof createAdapter>;
  close(): Promise<void>;
}

/**
 * Connects the publishing and subscribing clients the Redis adapter needs. Connection errors after
 * start are logged (the client reconnects by itself); a failure to connect at start rejects.
 */
export async function connectRedis(url: string, key: string, logger: Logger): Promise<RedisLink> {
  const pub = createClient({ url });
  const sub = pub.duplicate();
  let reported = false;
  const onError = (err: unknown): void => {
    if (reported) return;
    reported = true;
    logger.error('realtime: redis connection error', { error: err });
  };
  pub.on('error', onError);
  sub.on('error', onError);
  pub.on('ready', () => (reported = false));
  try {
    await Promise.all([pub.connect(), sub.connect()]);
  } catch (err) {
    await Promise.allSettled([pub.quit(), sub.quit()]);
    throw new Error(`realtime: cannot connect to redis at ${redactUrl(url)}: ${(err as Error).message}`, { cause: err });
  }
  return {
    adapter: createAdapter(pub, sub, { key }),
    async close() {
      await Promise.allSettled([sub.quit(), pub.quit()]);
    },
  };
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'the configured URL';
  }
}
