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
  return withWrites(data.objects[path]?.[id] ?? null, id, data.queue.filter((w) => w.path === path && w.id === id));
}

/** An object with its queued writes (those of that object, in order) applied. */
function withWrites(confirmed: ReplicaObject | null, id: string, writes: readonly QueuedWrite[]): ReplicaObject | null {
  let object = confirmed;
  for (const write of writes) {
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
  // The queue grouped by object once: a list of n objects with q writes queued costs n + q, not n * q.
  const touched = new Map<string, QueuedWrite[]>();
  for (const write of data.queue) {
    if (write.path !== path) continue;
    const writes = touched.get(write.id);
    if (writes === undefined) touched.set(write.id, [write]);
    else writes.push(write);
  }
  const ids = new Set(data.queries[queryKey(path, query)] ?? []);
  for (const id of touched.keys()) ids.add(id);
  const kept = data.objects[path] ?? {};
  const out: ReplicaObject[] = [];
  for (const id of ids) {
    const writes = touched.get(id);
    const object = writes === undefined ? (kept[id] ?? null) : withWrites(kept[id] ?? null, id, writes);
    if (object === null) continue;
    // The server placed the untouched ones; a local change is placed here.
    if (writes !== undefined && !matches(object, query)) continue;
    out.push(object);
  }
  return ordered(out, { ...query, $skip: undefined });
}

/**
 * A queued write the server acknowledged, noted apart from the replica (a small save per write)
 * until the whole replica is saved again: a reload in between does not send it again.
 */
export interface Ack {
  seq: number;
  path: string;
  id: string;
  /** The server's answer (null: deleted). */
  object: ReplicaObject | null;
}

/**
 * The acknowledgements saved after the replica was (a reload between the two): those whose write
 * is still in the saved queue leave it, their answers become the confirmed objects, placed in the
 * saved queries of their path where they match. The others were in the saved replica already.
 * Answers the ones applied.
 */
export function applyAcks(data: ReplicaData, saved: unknown): Ack[] {
  if (!Array.isArray(saved)) return [];
  const applied: Ack[] = [];
  for (const ack of saved as Partial<Ack>[]) {
    if (typeof ack?.seq !== 'number' || typeof ack.path !== 'string' || typeof ack.id !== 'string') continue;
    const at = data.queue.findIndex((w) => w.seq === ack.seq && w.path === ack.path && w.id === ack.id);
    if (at === -1) continue;
    data.queue.splice(at, 1);
    const object = ack.object ?? null;
    const kept = (data.objects[ack.path] ??= {});
    if (object === null) delete kept[ack.id];
    else kept[ack.id] = object;
    for (const [key, ids] of Object.entries(data.queries)) {
      if (!key.startsWith(`${ack.path} `)) continue;
      const query = queryOf(key.slice(ack.path.length + 1));
      const fits = object !== null && query !== undefined && matches(object, query);
      if (fits && !ids.includes(ack.id)) ids.push(ack.id);
      else if (!fits && ids.includes(ack.id)) data.queries[key] = ids.filter((x) => x !== ack.id);
    }
    applied.push({ seq: ack.seq, path: ack.path, id: ack.id, object });
  }
  return applied;
}

/** A saved query's text back to the query (undefined: unreadable, nothing is placed in it). */
function queryOf(text: string): Record<string, unknown> | undefined {
  try {
    const query = JSON.parse(text) as unknown;
    return typeof query === 'object' && query !== null && !Array.isArray(query) ? (query as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
