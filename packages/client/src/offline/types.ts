import type { SvcErrorBody } from '../types.js';

/** An object of a collection as the replica keeps it. */
export type ReplicaObject = Record<string, unknown> & { id: string };

/**
 * How a collection settles an offline write that the server's object moved under (412), declared
 * in its config.json (`"offline": {"conflicts": ...}`) and shown in the dashboard:
 * - `server-wins`: the local change is dropped, the server's object kept;
 * - `last-writer-wins`: per property: the properties the local write changed are written over the
 *   server's object (the one synced last wins; no clock is read), the others are the server's;
 * - `app`: the `resolve` callback of {@link OfflineOptions} merges (without one: server wins,
 *   and the object is flagged `conflicted`).
 */
export type ConflictPolicy = 'server-wins' | 'last-writer-wins' | 'app';

/** What `resolve` is given: the local object (null: deleted locally), the server's, and the base. */
export interface Conflict {
  path: string;
  id: string;
  local: ReplicaObject | null;
  server: ReplicaObject;
  /** The object as the local write found it (null: unknown). */
  base: ReplicaObject | null;
}

/** One write waiting for the server, in the order made. */
export interface QueuedWrite {
  seq: number;
  kind: 'create' | 'update' | 'delete';
  path: string;
  id: string;
  /** create: the object; update: the properties changed. */
  body?: Record<string, unknown>;
  /** The ETag of the object it was based on; undefined: the write before it on this object. */
  base?: string;
  /** The object it was based on, for conflicts. */
  baseObject?: ReplicaObject | null;
  /** The user it was made as (undefined: anonymous). */
  uid: string | undefined;
}

/** online: connected, nothing queued; syncing: sending queued writes; offline: unreachable; signed-out: writes wait for their user to log in again. */
export type ReplicaStatus = 'online' | 'offline' | 'syncing' | 'signed-out';

/** Flags of one object. */
export interface ObjectFlags {
  /** A local write of it waits for the server. */
  pending: boolean;
  /** A conflict was settled without the local write (server wins), or waits for the app. */
  conflicted: boolean;
}

/** The replica's events and what each listener gets. */
export interface ReplicaEvents {
  status: ReplicaStatus;
  queued: number;
  object: { path: string; id: string; flags: ObjectFlags };
  conflict: { path: string; id: string; policy: ConflictPolicy; local: ReplicaObject | null; server: ReplicaObject; result: ReplicaObject | null };
  rejected: { write: QueuedWrite; error: SvcErrorBody };
  /** Storage refused to keep the replica (quota exceeded): it goes on in memory, unsaved. */
  storage: { saved: boolean; error?: string };
}
