import { readFile } from 'node:fs/promises';
import { SVC_RUNTIME_URL, createSvcJsRoute } from '@svc/client/server';
import type { ExtraRoute, Logger, Realtime, Resource, SvcServer } from '@svc/core';
import { createRealtime } from '@svc/realtime';

/** The start of an app's Redis keys and channels unless app.json `redisPrefix` says otherwise (what every svc used before it existed). */
export const DEFAULT_REDIS_PREFIX = 'svc';

/** The app's realtime transport and when to attach and close it. */
export interface LiveRealtime {
  /** What scripts' emit() calls. */
  realtime: Realtime;
  attach(server: SvcServer): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@link createLiveRealtime}. */
export interface LiveRealtimeOptions {
  /** A transport given by the caller (tests): used as it is, attached when it can be. */
  given?: Realtime | undefined;
  /** redis:// URL for several processes. */
  redis?: string | undefined;
  /** app.json `redisPrefix`: the start of the app's Redis keys and channels. */
  redisPrefix?: string | undefined;
  logger: Logger;
  /** The app's CORS origins, for the socket handshake. */
  origins?: '*' | readonly string[] | undefined;
  /** app.json `realtime`: the socket caps. */
  caps?:
    | {
        maxSocketsPerAddress?: number | undefined;
        maxSockets?: number | undefined;
        maxLiveQueriesPerSocket?: number | undefined;
        maxLiveQueriesPerUser?: number | undefined;
        liveReplay?: number | undefined;
        liveBufferedPackets?: number | undefined;
      }
    | undefined;
}

interface Attachable {
  attach(server: SvcServer): Promise<void>;
  close(): Promise<void>;
}

function isAttachable(value: Realtime): value is Realtime & Attachable {
  const v = value as Partial<Attachable>;
  return typeof v.attach === 'function' && typeof v.close === 'function';
}

/** Socket.IO on the app's HTTP server (over Redis with `redis`), unless the caller gave a transport. */
export function createLiveRealtime(options: LiveRealtimeOptions): LiveRealtime {
  const realtime =
    options.given ??
    createRealtime({
      logger: options.logger,
      ...(options.redis ? { redisUrl: options.redis, redisKey: options.redisPrefix ?? DEFAULT_REDIS_PREFIX } : {}),
      ...(options.origins !== undefined ? { cors: { origins: options.origins } } : {}),
      ...(options.caps?.maxSocketsPerAddress !== undefined ? { maxSocketsPerAddress: options.caps.maxSocketsPerAddress } : {}),
      ...(options.caps?.maxSockets !== undefined ? { maxSockets: options.caps.maxSockets } : {}),
      live: {
        maxPerSocket: options.caps?.maxLiveQueriesPerSocket,
        maxPerUser: options.caps?.maxLiveQueriesPerUser,
        ringSize: options.caps?.liveReplay,
        maxBuffered: options.caps?.liveBufferedPackets,
      },
    });
  let attached = false;
  return {
    realtime,
    async attach(server) {
      if (!isAttachable(realtime)) return;
      await realtime.attach(server);
      attached = true;
    },
    async close() {
      if (attached && isAttachable(realtime)) await realtime.close();
      attached = false;
    },
  };
}

/**
 * GET /svc.js for the app's resources. Without a built @svc/client the server still starts; the
 * route then answers a script that reports the problem in the page's console.
 */
export async function svcJsRoute(resources: readonly Resource[], logger: Logger): Promise<ExtraRoute> {
  let runtime: string;
  try {
    runtime = await readFile(SVC_RUNTIME_URL, 'utf8');
  } catch (err) {
    logger.warn('svc.js is unavailable: @svc/client is not built (run pnpm build)', { error: err });
    runtime = 'var __svcRuntime = { install: function () { console.error("svc.js: @svc/client is not built on the server (run pnpm build)"); } };';
  }
  return createSvcJsRoute({ resources, runtime });
}

/** One change of a collection, from any process, as the dashboard follows them (root only). */
export interface DashboardChange {
  path: string;
  kind: 'create' | 'update' | 'delete' | 'resync';
  id?: string;
}

/**
 * Follows every change of the app's collections from every process when the transport is
 * svc's Socket.IO one (over Redis: the other processes' writes too); otherwise nothing to follow.
 */
export function followChangesOf(realtime: Realtime, listener: (change: DashboardChange) => void): () => void {
  const follow = (realtime as { followChanges?: (l: (change: DashboardChange) => void) => () => void }).followChanges;
  return typeof follow === 'function' ? follow.call(realtime, listener) : () => undefined;
}
