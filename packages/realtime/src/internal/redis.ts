import { createAdapter } from '@socket.io/redis-adapter';
import type { createClient } from 'redis';
import type { Namespace } from 'socket.io';
import type { Adapter } from 'socket.io-adapter';
import { redactUrl } from '@svc/core';
import type { Logger } from '@svc/core';
import { FastRedisAdapter, fastDeliveryAvailable } from './fastAdapter.js';

const START_RETRIES = 5;

/** A connected pub/sub pair and the Socket.IO adapter over it. */
export interface RedisLink {
  adapter: (nsp: Namespace) => Adapter;
  /** False while the connection to Redis is down (commands would wait for it to come back). */
  isReady(): boolean;
  /** Calls `listener` each time the connection is back after a loss (what peers said meanwhile is lost). */
  onReconnect(listener: () => void): void;
  close(): Promise<void>;
  /** The clients themselves, for the live queries' change log (commands on `pub`, a channel on `sub`). */
  readonly pub: RedisClient;
  readonly sub: RedisClient;
}

type RedisClient = ReturnType<typeof createClient>;

/**
 * Connects the publishing and subscribing clients the Redis adapter needs. Connection errors after
 * start are logged (the client reconnects by itself); a failure to connect at start rejects.
 */
export async function connectRedis(url: string, key: string, logger: Logger): Promise<RedisLink> {
  let connected = false;
  // Before the first connection a few quick retries, then start fails; after it, retry for ever.
  const reconnectStrategy = (retries: number, cause: Error): number | Error => {
    if (!connected) return retries >= START_RETRIES ? cause : 200;
    return Math.min(100 * (retries + 1), 3000);
  };
  // Loaded here, not at start: an app without Redis never loads the client (hundreds of ms of a start).
  const { createClient: makeClient } = await import('redis');
  const pub = makeClient({ url, socket: { reconnectStrategy } });
  const sub = pub.duplicate();
  guardPublish(pub);
  let reported = false;
  const onError = (err: unknown): void => {
    // Before the first connection the start itself fails with one clear line.
    if (reported || !connected) return;
    reported = true;
    logger.error('realtime: redis connection error', { error: err });
  };
  pub.on('error', onError);
  sub.on('error', onError);
  pub.on('ready', () => (reported = false));
  const reconnectListeners: (() => void)[] = [];
  sub.on('ready', () => {
    if (connected) for (const listener of reconnectListeners) listener();
  });
  try {
    await Promise.all([pub.connect(), sub.connect()]);
    connected = true;
  } catch (err) {
    for (const client of [pub, sub]) if (client.isOpen) client.destroy();
    throw new Error(`realtime: cannot connect to redis at ${redactUrl(url)}: ${(err as Error).message}`, { cause: err });
  }
  return {
    pub,
    sub,
    isReady: () => pub.isReady && sub.isReady,
    onReconnect: (listener) => reconnectListeners.push(listener),
    // Socket.IO calls the factory with `new`: a function, not an arrow.
    adapter: fastDeliveryAvailable()
      ? function fastRedisAdapter(nsp: Namespace): Adapter {
          return new FastRedisAdapter(nsp, pub, sub, { key }) as unknown as Adapter;
        }
      : (createAdapter(pub, sub, { key }) as (nsp: Namespace) => Adapter),
    async close() {
      await Promise.allSettled([sub.close(), pub.close()]);
    },
  };
}

/**
 * The adapter publishes without waiting for the answer (broadcasts, server-side emits). A publish
 * lost with the connection (Redis gone while it was on the wire) would then be an unhandled
 * rejection, which ends the process: each one gets a handler here (the connection error itself
 * is logged once by the client's error listener).
 */
function guardPublish(client: { publish: (...args: never[]) => Promise<unknown> }): void {
  const publish = client.publish;
  client.publish = function guardedPublish(this: unknown, ...args: never[]): Promise<unknown> {
    const sent = publish.apply(this, args);
    sent.catch(() => undefined);
    return sent;
  };
}
