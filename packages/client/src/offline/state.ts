import { matches, ordered } from './match.js';
import type { QueuedWrite, ReplicaObject } from './types.js';

/** What a replica keeps for one user of one app, saved whole (see storage.ts). */
export interface ReplicaData {
  v: 1;
  /** path -> id -> the object as the server last answered it (confirmed). */
  objects: Record<string, Record<string, ReplicaObject>>;
  /** path + query -> the ids the server answered for it, in order. */
  queries: Record<string, string[]>;
  queue: QueuedWrite[];
  seq: number;
  /** `path id` -> true: a conflict settled against the local write, not yet seen by the app. */
  conflicted: Record<string, true>;
  /** `path id` -> when it was last used (a counter): the least used go first past the bound. */
  used: Record<string, number>;
  clock: number;
}

export function emptyData(): ReplicaData {
  return { v: 1, objects: {}, queries: {}, queue: [], seq: 0, conflicted: {}, used: {}, clock: 0 };
}

/** A saved value that is a replica of this version, else a new one (a format it cannot read starts afresh). */
export function dataOf(saved: unknown): ReplicaData {
  const d = saved as Partial<ReplicaData> | undefined;
  if (d === undefined || d === null || d.v !== 1 || typeof d.objects !== 'object' || !Array.isArray(d.queue)) return emptyData();
  return { ...emptyData(), ...d } as ReplicaData;
}

export const keyOf = (path: string, id: string): string => `${path} ${id}`;
export const queryKey = (path: string, query: Record<string, unknown>): string => `${path} ${JSON.stringify(query)}`;

/**
 * The object as this client sees it: the confirmed one with the queued writes applied in order
 * (null: deleted locally, or unknown).
 */
export function visibleOf(data: ReplicaData, path: string, id: string): ReplicaObject | null {
  let object: ReplicaObject | null = data.objects[path]?.[id] ?? null;
  for (const write of data.queue) {
    if (write.path !== path || write.id !== id) continue;
    if (write.kind === 'delete') object = null;
    else if (write.kind === 'create') object = { ...(write.body ?? {}), id } as ReplicaObject;
    else if (object !== null) object = withChanges(object, write.body ?? {});
  }
  return object;
}

/** An object with changed properties (null: cleared, as a PUT of null does). */
export function withChanges(object: ReplicaObject, changes: Record<string, unknown>): ReplicaObject {
  const out: Record<string, unknown> = { ...object };
  for (const [key, value] of Object.entries(changes)) {
    if (key === 'id') continue;
    if (value === null) delete out[key];
    else out[key] = value;
  }
  return out as ReplicaObject;
}

/**
 * A live query's objects as this client sees them: the ids the server answered, then objects
 * created or changed locally that match, without those deleted or no longer matching locally;
 * ordered by `$sort` and cut by `$limit`.
 */
export function visibleList(data: ReplicaData, path: string, query: Record<string, unknown>): ReplicaObject[] {
  const ids = new Set(data.queries[queryKey(path, query)] ?? []);
  for (const write of data.queue) if (write.path === path) ids.add(write.id);
  const out: ReplicaObject[] = [];
  const touched = new Set(data.queue.filter((w) => w.path === path).map((w) => w.id));
  for (const id of ids) {
    const object = visibleOf(data, path, id);
    if (object === null) continue;
    // The server placed the untouched ones; a local change is placed here.
    if (touched.has(id) && !matches(object, query)) continue;
    out.push(object);
  }
  return ordered(out, { ...query, $skip: undefined });
}
