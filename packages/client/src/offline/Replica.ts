import type { LiveHandler, SvcErrorBody } from '../types.js';
import type { RealtimeLink } from '../internal/realtimeLink.js';
import type { Transport } from '../internal/transport.js';
import { newObjectId } from './etag.js';
import { matches, ordered } from './match.js';
import { applyAcks, dataOf, emptyData, keyOf, queryKey, visibleList, visibleOf, withChanges } from './state.js';
import type { Ack, ReplicaData } from './state.js';
import { defaultStorage } from './storage.js';
import type { ReplicaStorage } from './storage.js';
import { Sync } from './sync.js';
import type { Conflict, ConflictPolicy, ObjectFlags, QueuedWrite, ReplicaEvents, ReplicaObject, ReplicaStatus } from './types.js';

/** Options of `svc.offline.start` (docs/offline.md). */
export interface OfflineOptions {
  /** The replica's name: one per app on an origin. Default 'svc'. */
  app?: string;
  /** Where it is kept. Default: IndexedDB in browsers, memory elsewhere (fileStorage(dir) in Node). */
  storage?: ReplicaStorage;
  /** At most this many objects are kept (default 10,000); past it, those no live query holds and no write waits for go first, least used first. */
  maxObjects?: number;
  /** The user collection's path, to know whose replica to open (default: the client's users resource, else '/users'). */
  users?: string;
  /** Per collection path: overrides the policy its config.json declares. */
  policies?: Record<string, ConflictPolicy>;
  /** The `app` policy: the merged object (null: keep the server's). */
  resolve?: (conflict: Conflict) => ReplicaObject | null | Promise<ReplicaObject | null>;
  /** Logging out deletes the user's replica (default false: kept, sealed, opened only when that user logs in again). */
  clearOnLogout?: boolean;
}

type Listener<K extends keyof ReplicaEvents> = (value: ReplicaEvents[K]) => void;

/**
 * What only the server told (its answers, live queries' lists, acknowledged writes, which the
 * journal keeps meanwhile) is saved at once after a quiet second, else at most once a second:
 * a whole-replica save per acknowledged write made a replay slower than the same writes sent
 * online (bench/offline.js).
 */
const SAVE_EVERY_MS = 1000;

interface Live {
  path: string;
  query: Record<string, unknown>;
  handler: LiveHandler<ReplicaObject>;
  unsubscribe: (() => void) | undefined;
}

/**
 * The local replica of one app for the signed-in user: objects and live queries' results as last
 * seen, and the writes not yet sent, kept in a {@link ReplicaStorage}. Reads answer from it at
 * once and are brought up to date from the server; writes apply to it at once and are sent in
 * order (sync.ts).
 */
export class Replica {
  data: ReplicaData = emptyData();
  uid: string | undefined;
  status: ReplicaStatus = 'offline';
  readonly options: OfflineOptions;
  readonly transport: Transport;
  readonly policies: Map<string, ConflictPolicy>;
  private readonly storage: ReplicaStorage;
  private readonly realtime: RealtimeLink;
  private readonly lives = new Set<Live>();
  private readonly listeners = new Map<string, Set<(value: unknown) => void>>();
  private readonly sync: Sync;
  private saving: Promise<void> | undefined;
  /** A change to save now (a write queued or settled). */
  private dirty = false;
  /** A change to save within SAVE_EVERY_MS (what the server told). */
  private unsaved = false;
  private saveTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the last whole save began (Date.now(); a clock set back makes the next save come at once). */
  private lastSave = 0;
  private saved = true;
  /** Writes acknowledged since the last whole save began, saved apart at each one (state.ts Ack). */
  private journal: Ack[] = [];
  private journaling: Promise<void> | undefined;
  private journalDirty = false;

  constructor(transport: Transport, realtime: RealtimeLink, policies: Map<string, ConflictPolicy>, options: OfflineOptions) {
    this.transport = transport;
    this.realtime = realtime;
    this.policies = policies;
    this.options = options;
    this.storage = options.storage ?? defaultStorage();
    this.sync = new Sync(this);
  }

  private get app(): string {
    return this.options.app ?? 'svc';
  }

  private key(uid: string | undefined): string {
    return `${this.app}:user:${uid ?? '-'}`;
  }

  /** Opens the replica of the user signed in (or, unreachable, of the last one), then syncs. */
  async start(): Promise<void> {
    const me = await this.sync.me();
    const uid = me === 'unreachable' ? ((await this.storage.load(`${this.app}:last`)) as string | null | undefined) ?? undefined : me;
    await this.open(uid);
    this.setStatus(me === 'unreachable' ? 'offline' : 'online');
    this.sync.watchNetwork();
    // A page going away saves what waits for its turn (best effort: the browser may not finish it).
    const target = globalThis as { addEventListener?: (type: string, fn: () => void) => void };
    target.addEventListener?.('pagehide', () => void this.flushSave());
    if (me !== 'unreachable') void this.sync.flush();
  }

  /** Another user (or none) signed in: the previous user's replica is saved and closed (or deleted), this one's opened. */
  async userChanged(): Promise<void> {
    const me = await this.sync.me();
    if (me === 'unreachable' || me === this.uid) return void this.sync.flush();
    await this.flushSave();
    if (this.options.clearOnLogout === true && me === undefined && this.uid !== undefined) await this.removeSaved(this.uid);
    await this.open(me);
    void this.sync.flush();
  }

  private async open(uid: string | undefined): Promise<void> {
    this.uid = uid;
    const data = dataOf(await this.storage.load(this.key(uid)).catch(() => undefined));
    // Writes acknowledged after the replica was last saved whole: out of the queue, never sent again.
    this.journal = applyAcks(data, await this.storage.load(this.journalKey(uid)).catch(() => undefined));
    this.data = data;
    if (this.journal.length > 0) this.saveSoon();
    await this.storage.save(`${this.app}:last`, uid ?? null).catch(() => undefined);
    for (const live of this.lives) this.tell(live);
  }

  private journalKey(uid: string | undefined): string {
    return `${this.key(uid)}:acks`;
  }

  private async removeSaved(uid: string | undefined): Promise<void> {
    await this.storage.remove(this.key(uid));
    await this.storage.remove(this.journalKey(uid));
  }

  /** Deletes this user's replica and its queued writes. */
  async clear(): Promise<void> {
    this.data = emptyData();
    this.journal = [];
    await this.journaling;
    await this.removeSaved(this.uid);
    this.emit('queued', 0);
    for (const live of this.lives) this.tell(live);
  }

  // ---- reads ----

  /** The object as this client sees it now, or null; brought up to date from the server in the background. */
  get(path: string, id: string): Promise<ReplicaObject | null> {
    const local = visibleOf(this.data, path, id);
    const fresh = this.sync.fetchOne(path, id);
    if (local !== null) {
      this.touch(path, id);
      fresh.catch(() => undefined);
      return Promise.resolve(local);
    }
    return fresh.then(() => visibleOf(this.data, path, id)).catch(() => null);
  }

  /** A live query answered at once from the replica, then kept current by the server's live query. */
  subscribe(path: string, query: Record<string, unknown>, handler: LiveHandler<ReplicaObject>): () => void {
    const live: Live = { path, query, handler, unsubscribe: undefined };
    this.lives.add(live);
    this.tell(live);
    live.unsubscribe = this.realtime.subscribe(path, query, (event, objects) => {
      if (event.type === 'error' || event.type === 'ended') {
        live.handler(event, visibleList(this.data, path, query));
        return;
      }
      this.serverAnswered(path, query, objects as ReplicaObject[]);
    }, { snapshot: true });
    return () => {
      this.lives.delete(live);
      live.unsubscribe?.();
    };
  }

  /** Objects of a collection matching a query, as this client sees them (a list read while unreachable). */
  list(path: string, query: Record<string, unknown>): ReplicaObject[] {
    const ids = new Set([...Object.keys(this.data.objects[path] ?? {}), ...this.data.queue.filter((w) => w.path === path).map((w) => w.id)]);
    const out: ReplicaObject[] = [];
    for (const id of ids) {
      const object = visibleOf(this.data, path, id);
      if (object !== null && matches(object, query)) out.push(object);
    }
    return ordered(out, query);
  }

  /** The server's current objects of a live query: kept, and every live query told. */
  serverAnswered(path: string, query: Record<string, unknown>, objects: readonly ReplicaObject[]): void {
    const kept = (this.data.objects[path] ??= {});
    for (const object of objects) {
      kept[object.id] = object;
      this.touch(path, object.id);
    }
    this.data.queries[queryKey(path, query)] = objects.map((o) => o.id);
    this.changed('soon');
  }

  /** The server's object (null: gone) replaces the confirmed one. */
  confirmed(path: string, id: string, object: ReplicaObject | null): void {
    const kept = (this.data.objects[path] ??= {});
    if (object === null) delete kept[id];
    else kept[id] = object;
    this.changed('soon');
  }

  /**
   * The server took a queued write (out of the queue already): noted in the journal, saved before
   * this resolves (the next write is sent after it), so that a reload does not send it again; the
   * whole replica is saved within SAVE_EVERY_MS.
   */
  async acknowledged(write: QueuedWrite, object: ReplicaObject | null): Promise<void> {
    this.journal.push({ seq: write.seq, path: write.path, id: write.id, object });
    this.written(write.path, write.id, object);
    await this.saveJournal();
  }

  /**
   * The server took a write: its answer is the confirmed object, and each live query of the path
   * holds it where it matches (else not), until the server's own answer for that query replaces
   * the list: without a realtime socket, or before its message comes, the write stays in view.
   */
  written(path: string, id: string, object: ReplicaObject | null): void {
    for (const live of this.lives) {
      if (live.path !== path) continue;
      const key = queryKey(path, live.query);
      const ids = this.data.queries[key] ?? [];
      const fits = object !== null && matches(object, live.query);
      if (fits && !ids.includes(id)) this.data.queries[key] = [...ids, id];
      else if (!fits && ids.includes(id)) this.data.queries[key] = ids.filter((x) => x !== id);
    }
    this.confirmed(path, id, object);
  }

  // ---- writes ----

  create(path: string, body: Record<string, unknown>): Promise<ReplicaObject> {
    const id = typeof body.id === 'string' && body.id !== '' ? body.id : newObjectId();
    const object = { ...withChanges({ id } as ReplicaObject, body), id } as ReplicaObject;
    return this.queue({ kind: 'create', path, id, body: object, baseObject: null }).then(() => object);
  }

  update(path: string, id: string, changes: Record<string, unknown>): Promise<ReplicaObject> {
    const current = visibleOf(this.data, path, id);
    if (current === null) return Promise.reject({ status: 404, statusCode: 404, message: 'not found (in the replica)' } satisfies SvcErrorBody);
    const write: Omit<QueuedWrite, 'seq' | 'uid'> = { kind: 'update', path, id, body: { ...changes }, baseObject: current };
    return this.queue(write).then(() => visibleOf(this.data, path, id) as ReplicaObject);
  }

  remove(path: string, id: string): Promise<void> {
    const current = visibleOf(this.data, path, id);
    if (current === null) return Promise.reject({ status: 404, statusCode: 404, message: 'not found (in the replica)' } satisfies SvcErrorBody);
    return this.queue({ kind: 'delete', path, id, baseObject: current });
  }

  private async queue(write: Omit<QueuedWrite, 'seq' | 'uid'>): Promise<void> {
    const confirmed = this.data.objects[write.path]?.[write.id];
    const waiting = this.data.queue.some((w) => w.path === write.path && w.id === write.id);
    // Based on the confirmed object, or (undefined) on the write before it on the same object.
    const base = write.kind === 'create' || waiting || confirmed === undefined ? undefined : this.sync.etag(confirmed);
    this.data.queue.push({ ...write, seq: ++this.data.seq, uid: this.uid, ...(base !== undefined ? { base } : {}) });
    this.touch(write.path, write.id);
    this.changed();
    this.emit('queued', this.data.queue.length);
    this.emit('object', { path: write.path, id: write.id, flags: this.flags(write.path, write.id) });
    // Kept before it is acknowledged, where the storage can (else the app is told: `storage`).
    await this.flushSave();
    void this.sync.flush();
  }

  // ---- status ----

  flags(path: string, id: string): ObjectFlags {
    return { pending: this.data.queue.some((w) => w.path === path && w.id === id), conflicted: this.data.conflicted[keyOf(path, id)] === true };
  }

  /** The app saw the conflict: the flag goes. */
  acknowledge(path: string, id: string): void {
    delete this.data.conflicted[keyOf(path, id)];
    this.changed();
    this.emit('object', { path, id, flags: this.flags(path, id) });
  }

  on<K extends keyof ReplicaEvents>(event: K, fn: Listener<K>): void {
    let set = this.listeners.get(event);
    if (set === undefined) this.listeners.set(event, (set = new Set()));
    set.add(fn as (value: unknown) => void);
  }

  off<K extends keyof ReplicaEvents>(event: K, fn: Listener<K>): void {
    this.listeners.get(event)?.delete(fn as (value: unknown) => void);
  }

  emit<K extends keyof ReplicaEvents>(event: K, value: ReplicaEvents[K]): void {
    for (const fn of this.listeners.get(event) ?? []) fn(value);
  }

  setStatus(status: ReplicaStatus): void {
    if (this.status === status) return;
    this.status = status;
    this.emit('status', status);
  }

  /** Sends the queued writes now (also done on its own when the network returns). */
  flush(): Promise<void> {
    return this.sync.flush();
  }

  // ---- upkeep ----

  private touch(path: string, id: string): void {
    this.data.used[keyOf(path, id)] = ++this.data.clock;
  }

  /**
   * Something changed: every live query told, the bound kept, a save scheduled: at once for what
   * only this client knows (`now`: its writes), within SAVE_EVERY_MS for what the server told.
   */
  changed(keep: 'now' | 'soon' = 'now'): void {
    this.evict();
    for (const live of this.lives) this.tell(live);
    if (keep === 'now') void this.scheduleSave();
    else this.saveSoon();
  }

  /** A save of what the server told: now if none began in the last SAVE_EVERY_MS, else when that ends. */
  private saveSoon(): void {
    this.unsaved = true;
    if (this.saveTimer !== undefined || this.saving !== undefined) return;
    const wait = this.lastSave + SAVE_EVERY_MS - Date.now();
    if (wait <= 0 || wait > SAVE_EVERY_MS) return void this.scheduleSave();
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      if (this.unsaved) void this.scheduleSave();
    }, wait);
    (this.saveTimer as { unref?: () => void }).unref?.();
  }

  private tell(live: Live): void {
    const objects = visibleList(this.data, live.path, live.query);
    live.handler({ type: 'snapshot', objects }, objects);
  }

  /** Past maxObjects: objects no live query holds and no write waits for, least used first. */
  private evict(): void {
    const max = this.options.maxObjects ?? 10_000;
    let count = 0;
    for (const kept of Object.values(this.data.objects)) count += Object.keys(kept).length;
    if (count <= max) return;
    const held = new Set<string>();
    for (const live of this.lives) for (const id of this.data.queries[queryKey(live.path, live.query)] ?? []) held.add(keyOf(live.path, id));
    for (const w of this.data.queue) held.add(keyOf(w.path, w.id));
    const candidates: [string, string, number][] = [];
    for (const [path, kept] of Object.entries(this.data.objects)) {
      for (const id of Object.keys(kept)) if (!held.has(keyOf(path, id))) candidates.push([path, id, this.data.used[keyOf(path, id)] ?? 0]);
    }
    candidates.sort((a, b) => a[2] - b[2]);
    for (const [path, id] of candidates.slice(0, count - max)) {
      delete this.data.objects[path]?.[id];
      delete this.data.used[keyOf(path, id)];
    }
    // Queries no live query holds lose their lists (their objects may be gone).
    const live = new Set([...this.lives].map((l) => queryKey(l.path, l.query)));
    for (const key of Object.keys(this.data.queries)) if (!live.has(key)) delete this.data.queries[key];
  }

  private scheduleSave(): Promise<void> {
    this.dirty = true;
    if (this.saving !== undefined) return this.saving;
    this.saving = (async () => {
      while (this.dirty) {
        this.dirty = false;
        this.unsaved = false;
        if (this.saveTimer !== undefined) clearTimeout(this.saveTimer);
        this.saveTimer = undefined;
        this.lastSave = Date.now();
        // The acknowledgements noted so far are in this save: the journal lets them go after it.
        const noted = this.journal.length;
        try {
          await this.storage.save(this.key(this.uid), this.data);
          if (!this.saved) this.emit('storage', { saved: true });
          this.saved = true;
          if (noted > 0) {
            this.journal.splice(0, noted);
            void this.saveJournal();
          }
        } catch (err) {
          this.saved = false;
          this.emit('storage', { saved: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
        }
      }
      this.saving = undefined;
      // What the server told during this save waits for its turn.
      if (this.unsaved) this.saveSoon();
    })();
    return this.saving;
  }

  /** Saves the journal (one at a time; the last state wins). */
  private saveJournal(): Promise<void> {
    this.journalDirty = true;
    if (this.journaling !== undefined) return this.journaling;
    this.journaling = (async () => {
      while (this.journalDirty) {
        this.journalDirty = false;
        try {
          await this.storage.save(this.journalKey(this.uid), this.journal);
        } catch {
          // Refused (quota): a whole save keeps the acknowledgements instead (or tells `storage`).
          void this.scheduleSave();
        }
      }
      this.journaling = undefined;
    })();
    return this.journaling;
  }

  /** Resolves once everything changed so far was saved (or refused: see `storage`). */
  async flushSave(): Promise<void> {
    if (this.unsaved) this.dirty = true;
    if (this.saving !== undefined) await this.saving;
    if (this.dirty) await this.scheduleSave();
    if (this.journaling !== undefined) await this.journaling;
  }

  /** Whether the last save was kept by the storage. */
  get persisted(): boolean {
    return this.saved;
  }
}
