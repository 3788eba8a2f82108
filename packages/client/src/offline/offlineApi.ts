import type { AccessorContext } from '../internal/accessors.js';
import type { ResourceInfo } from '../types.js';
import { Replica } from './Replica.js';
import type { OfflineOptions } from './Replica.js';
import type { ConflictPolicy, ObjectFlags, ReplicaEvents, ReplicaStatus } from './types.js';

/** `svc.offline`: the local replica of this client (docs/offline.md). */
export interface OfflineApi {
  /**
   * Opens the replica of the signed-in user (unreachable: of the last one) and from then on
   * answers this client's collection reads from it and queues its writes. Resolves once opened.
   */
  start(options?: OfflineOptions): Promise<void>;
  /** 'offline' until started. */
  readonly status: ReplicaStatus;
  /** Writes waiting for the server. */
  readonly queued: number;
  /** Whether the storage kept the last save (false: quota exceeded; going on in memory). */
  readonly persisted: boolean;
  flags(collection: string, id: string): ObjectFlags;
  /** Clears an object's `conflicted` flag (the app showed it). */
  acknowledge(collection: string, id: string): void;
  on<K extends keyof ReplicaEvents>(event: K, fn: (value: ReplicaEvents[K]) => void): void;
  off<K extends keyof ReplicaEvents>(event: K, fn: (value: ReplicaEvents[K]) => void): void;
  /** Sends the queued writes now. */
  flush(): Promise<void>;
  /** Deletes this user's replica, queued writes included. */
  clear(): Promise<void>;
}

const pathOf = (name: string): string => `/${name.replace(/^\/+|\/+$/g, '')}`;

export function offlineApi(ctx: AccessorContext, infos: readonly ResourceInfo[]): OfflineApi {
  const pending: [keyof ReplicaEvents, (value: never) => void][] = [];
  const replica = (): Replica | undefined => ctx.replica;
  return {
    async start(options = {}) {
      if (ctx.replica !== undefined) return;
      const policies = new Map<string, ConflictPolicy>();
      for (const info of infos) if (info.conflicts !== undefined) policies.set(info.path, info.conflicts);
      for (const [path, policy] of Object.entries(options.policies ?? {})) policies.set(pathOf(path), policy);
      const users = options.users ?? infos.find((i) => i.kind === 'users')?.path ?? '/users';
      const made = new Replica(ctx.transport, ctx.realtime, policies, { ...options, users });
      for (const [event, fn] of pending) made.on(event, fn as (value: unknown) => void);
      ctx.replica = made;
      await made.start();
    },
    get status() {
      return replica()?.status ?? 'offline';
    },
    get queued() {
      return replica()?.data.queue.length ?? 0;
    },
    get persisted() {
      return replica()?.persisted ?? true;
    },
    flags: (collection, id) => replica()?.flags(pathOf(collection), id) ?? { pending: false, conflicted: false },
    acknowledge: (collection, id) => replica()?.acknowledge(pathOf(collection), id),
    on(event, fn) {
      const r = replica();
      if (r === undefined) pending.push([event, fn as (value: never) => void]);
      else r.on(event, fn);
    },
    off(event, fn) {
      replica()?.off(event, fn);
    },
    flush: () => replica()?.flush() ?? Promise.resolve(),
    clear: () => replica()?.clear() ?? Promise.resolve(),
  };
}
