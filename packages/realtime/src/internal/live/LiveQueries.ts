import type { Socket } from 'socket.io';
import { Collection, SvcError, createRequestScope, deepEqual } from '@svc/core';
import type { Context, Doc, Filter, Logger, SvcServer } from '@svc/core';
import { normalisePath } from '../rooms.js';
import { callerOf } from '../socketCaller.js';
import type { Caller } from '../socketCaller.js';
import { matcherOf, project, withAccess } from './matching.js';
import { assertLiveQuery, errorOf, parseRequest } from './subscribeRequest.js';
import type { ChangeLog } from './changeLog.js';
import { LIVE_EVENT, SUBSCRIBE_EVENT, UNSUBSCRIBE_EVENT } from './protocol.js';
import type { ChangeEntry, EndReason, LiveMessage, SubscribeAnswer, SubscribeRequest, WriteEntry } from './protocol.js';
import { SubscriptionIndex } from './SubscriptionIndex.js';

/** Limits of live queries (app.json `realtime.live`). */
export interface LiveLimits {
  /** Subscriptions one socket may hold (0: no cap). */
  maxPerSocket: number;
  /** Subscriptions one user may hold in this process, all sockets together (0: no cap). */
  maxPerUser: number;
  /** Packets waiting in a socket's write buffer past which its subscriptions drop events and get a fresh snapshot once it drains. */
  maxBuffered: number;
  /**
   * How long a resume's replay (or a snapshot's catch-up) waits for a socket past `maxBuffered`
   * to take its buffer before it overflows like a live one (ms).
   */
  catchUpWaitMs: number;
}

export const DEFAULT_LIVE_LIMITS: LiveLimits = { maxPerSocket: 100, maxPerUser: 1000, maxBuffered: 1000, catchUpWaitMs: 5000 };

/** The socket a subscription lives on: its binding and Socket.IO's engine connection. */
type LiveSocket = Socket;

/** One live query of one socket. */
interface Subscription {
  readonly id: string;
  readonly socket: LiveSocket;
  readonly path: string;
  /** The client's query, for snapshots. */
  readonly query: Record<string, unknown>;
  /** The query's own filter, compiled for this caller. */
  readonly own: Filter;
  /** `own` and the caller's access filter: what an object must match. */
  filter: Filter;
  /** Tests `filter` on an object (a direct test for the common filter of equalities). */
  matches: (object: Doc) => boolean;
  readonly fields: Record<string, 0 | 1> | undefined;
  /** The caller as a GET of theirs would carry it (a fresh request scope per event). */
  base: Caller;
  readonly client: string;
  readonly uid: string | undefined;
  /** Sequence number of the last write this subscription has been told of (or ruled out). */
  lastSeq: number;
  /** True until its snapshot or replay is out: live writes wait in `pending`. */
  starting: boolean;
  pending: ChangeEntry[];
  /** Its socket's buffer overflowed: events are dropped until a fresh snapshot. */
  overflowed: boolean;
  ended: boolean;
  /** A fresh snapshot being taken. */
  restarting?: Promise<void>;
  /** The collections whose writes it needs held in the change log (its own, and its user's for role changes) until it ends. */
  holds: string[];
}

/** Socket.IO's engine connection, as far as the buffer checks use it. */
interface BufferedConn {
  writeBuffer?: unknown[];
  on(event: 'drain' | 'close', fn: () => void): void;
  off(event: 'drain' | 'close', fn: () => void): void;
}

/** How a subscription starts: at the current head, with a snapshot, or after a sequence number. */
type Start = 'head' | 'snapshot' | { since: number };

/**
 * Live queries over the realtime sockets: every stored write of every Collection goes through
 * the change log (numbered, kept for resumes, shared by the processes over Redis) and reaches
 * each subscription it can concern, as that subscription's caller may see it (showTo).
 */
export class LiveQueries {
  private readonly feeds = new Map<string, SubscriptionIndex<Subscription>>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly bySocket = new Map<string, Map<string, Subscription>>();
  private readonly byUser = new Map<string, Set<Subscription>>();
  private readonly watched = new WeakSet<Collection>();
  private readonly unwatch: (() => void)[] = [];
  private readonly draining = new WeakSet<LiveSocket>();
  private seenResources: readonly unknown[] | undefined;
  private readonly recheck: NodeJS.Timeout;
  private log: ChangeLog | undefined;
  /** In-process followers of every change of every collection (the dashboard's data grid, as root). */
  private readonly followers = new Set<(entry: ChangeEntry) => void>();

  constructor(
    private readonly server: SvcServer,
    private readonly limits: LiveLimits,
    private readonly logger: Logger,
  ) {
    // A development reload serves new Collection objects: their writes must be heard too.
    this.recheck = setInterval(() => this.watchCollections(), 1000);
    this.recheck.unref();
  }

  /** Starts numbering writes into `log` (made with {@link onEntry} as its listener). */
  useLog(log: ChangeLog): void {
    this.log = log;
    this.watchCollections();
  }

  /** Listens to a socket's subscribe and unsubscribe messages. */
  connect(socket: LiveSocket): void {
    socket.on(SUBSCRIBE_EVENT, (request: unknown, ack?: unknown) => {
      const answer = typeof ack === 'function' ? (ack as (a: SubscribeAnswer) => void) : () => undefined;
      this.subscribe(socket, request, answer).catch((err: unknown) => {
        this.logger.warn('realtime: a live query could not start', { error: err });
      });
    });
    socket.on(UNSUBSCRIBE_EVENT, (id: unknown, ack?: unknown) => {
      const sub = typeof id === 'string' ? this.bySocket.get(socket.id)?.get(id) : undefined;
      if (sub) this.remove(sub);
      if (typeof ack === 'function') (ack as (a: { ok: boolean }) => void)({ ok: sub !== undefined });
    });
    socket.on('disconnect', () => {
      for (const sub of [...(this.bySocket.get(socket.id)?.values() ?? [])]) this.remove(sub);
    });
  }

  /** Ends every subscription of a socket whose session ended or changed: they were its caller's. */
  endSocket(socket: LiveSocket, reason: EndReason): void {
    const subs = this.bySocket.get(socket.id);
    if (!subs) return;
    for (const sub of [...subs.values()]) {
      this.remove(sub);
      socket.emit(LIVE_EVENT, { sub: sub.id, type: 'ended', reason } satisfies LiveMessage);
    }
  }

  /** Subscriptions held in this process (metrics, tests). */
  get count(): number {
    let n = 0;
    for (const subs of this.bySocket.values()) n += subs.size;
    return n;
  }

  close(): void {
    clearInterval(this.recheck);
    for (const stop of this.unwatch) stop();
    this.unwatch.length = 0;
    this.followers.clear();
    for (const subs of this.bySocket.values()) for (const sub of subs.values()) sub.ended = true;
    this.bySocket.clear();
    this.byUser.clear();
    this.feeds.clear();
  }

  /**
   * Tells `listener` every change of every collection the app has now, from every process, while
   * it follows (its collections are held meanwhile). For root's own views in this process (the
   * dashboard, whose stream answers root only): nothing here is filtered for a caller.
   */
  follow(listener: (entry: ChangeEntry) => void): () => void {
    const log = this.log;
    if (!log) return () => undefined;
    const paths = this.server.resources.filter((r) => r instanceof Collection).map((r) => normalisePath(r.path));
    for (const path of paths) log.hold(path).catch(() => undefined);
    this.followers.add(listener);
    return () => {
      if (!this.followers.delete(listener)) return;
      for (const path of paths) log.release(path);
    };
  }

  /** Every entry of the change log, in sequence order per collection (any process's writes). */
  onEntry(entry: ChangeEntry): void {
    for (const follower of this.followers) follower(entry);
    if (entry.k === 'update') this.userChanged(entry);
    const index = this.feeds.get(entry.p);
    if (!index || index.size === 0) return;
    if (entry.k === 'resync') return this.resyncAll(index.all(), entry);
    // The subscriptions it can concern, now: one added later starts at or after this entry's
    // number (or replays it from the ring), so a write no subscription can match costs nothing more.
    const subs = index.candidates(entry.k === 'delete' ? undefined : entry.o, entry.k === 'update' ? entry.v : entry.k === 'delete' ? entry.o : undefined);
    if (subs.length === 0) return;
    const previous = this.chains.get(entry.p) ?? Promise.resolve();
    const next = previous.then(() => this.deliver(subs, entry as WriteEntry)).catch((err: unknown) => this.logger.warn(`realtime: a change of ${entry.p} could not reach its live queries`, { error: err }));
    this.chains.set(entry.p, next);
  }

  private watchCollections(): void {
    const resources = this.server.resources;
    if (resources === this.seenResources || !this.log) return;
    this.seenResources = resources;
    const log = this.log;
    for (const resource of resources) {
      if (!(resource instanceof Collection) || this.watched.has(resource)) continue;
      this.watched.add(resource);
      const path = normalisePath(resource.path);
      // Writes are published only while some process's live queries hold the collection.
      this.unwatch.push(
        resource.watchChanges(
          (change) => log.publish(path, change),
          () => log.wanted(path),
        ),
      );
    }
  }

  private collectionAt(path: string): Collection | undefined {
    const resource = this.server.resources.find((r) => normalisePath(r.path) === path);
    return resource instanceof Collection ? resource : undefined;
  }

  // ---- subscribe ----

  private async subscribe(socket: LiveSocket, raw: unknown, answer: (a: SubscribeAnswer) => void): Promise<void> {
    let sub: Subscription;
    let collection: Collection;
    let start: Start;
    try {
      const request = parseRequest(raw);
      const found = this.collectionAt(normalisePath(request.path));
      if (!found) throw new SvcError('NOT_FOUND', `no collection at ${request.path}`);
      collection = found;
      this.assertRoom(socket, request.id);
      sub = await this.makeSubscription(socket, collection, request);
      this.assertRoom(socket, request.id, sub.uid);
      start = request.since !== undefined ? { since: request.since } : request.snapshot === true ? 'snapshot' : 'head';
    } catch (err) {
      answer({ ok: false, error: errorOf(err, this.logger) });
      return;
    }
    this.add(sub);
    // Every process publishes the collection's writes before the snapshot is read or the resume
    // looked up: none that it needs is left out of both.
    await this.holdFor(sub);
    if (sub.ended) return answer({ ok: false, error: { status: 401, message: 'the session ended' } });
    let snapshot: Record<string, unknown>[] | undefined;
    let replay: ChangeEntry[];
    try {
      const begun = await this.begin(sub, collection, start);
      snapshot = begun.snapshot;
      replay = begun.replay;
    } catch (err) {
      this.remove(sub);
      answer({ ok: false, error: errorOf(err, this.logger) });
      return;
    }
    if (sub.ended) return answer({ ok: false, error: { status: 401, message: 'the session ended' } });
    answer({ ok: true, seq: sub.lastSeq });
    if (snapshot) this.send(sub, { sub: sub.id, seq: sub.lastSeq, type: 'snapshot', objects: snapshot });
    await this.catchUp(sub, collection, replay);
  }

  private assertRoom(socket: LiveSocket, id: string, uid?: string): void {
    const own = this.bySocket.get(socket.id);
    if (own?.has(id)) throw new SvcError('CONFLICT', `a subscription ${id} is already open on this socket`);
    if (this.limits.maxPerSocket > 0 && (own?.size ?? 0) >= this.limits.maxPerSocket) throw new SvcError('TOO_MANY_REQUESTS', `too many subscriptions on this socket (at most ${this.limits.maxPerSocket})`);
    if (uid !== undefined && this.limits.maxPerUser > 0 && (this.byUser.get(uid)?.size ?? 0) >= this.limits.maxPerUser) {
      throw new SvcError('TOO_MANY_REQUESTS', `too many subscriptions for this user (at most ${this.limits.maxPerUser})`);
    }
  }

  /** The subscription as its socket's caller: the session and user as a GET of theirs would have them. */
  private async makeSubscription(socket: LiveSocket, collection: Collection, request: SubscribeRequest): Promise<Subscription> {
    const base = await callerOf(this.server, socket);
    if (base === undefined) throw new SvcError('UNAUTHORIZED', 'the session ended');
    const session = base.session;
    const client = this.server.clientOf(socket.request).address;
    const query = request.query ?? {};
    assertLiveQuery(collection, query);
    const ctx = { ...base, scope: createRequestScope(client) };
    // GET's compiler as this caller: what a GET refuses, a subscription refuses.
    const compiled = collection.compileQueryFor(ctx, query);
    const filter = withAccess(compiled.filter, collection.accessFilter(ctx, 'list'));
    return {
      id: request.id,
      socket,
      path: normalisePath(collection.path),
      query,
      own: compiled.filter,
      filter,
      matches: matcherOf(filter),
      fields: compiled.options.fields,
      base,
      client,
      uid: session.uid,
      lastSeq: 0,
      starting: true,
      pending: [],
      overflowed: false,
      ended: false,
      holds: [],
    };
  }

  /** Holds the collections the subscription needs in the change log (released in remove). */
  private async holdFor(sub: Subscription): Promise<void> {
    const log = this.requireLog();
    const paths = [sub.path];
    const usersPath = sub.base.session.path;
    if (sub.uid !== undefined && usersPath !== undefined && normalisePath(usersPath) !== sub.path) paths.push(normalisePath(usersPath));
    sub.holds = paths;
    await Promise.all(paths.map((path) => log.hold(path)));
  }

  /**
   * The change log may have missed writes of these collections for this process (Redis was away,
   * or its hold lapsed): their subscriptions take a fresh snapshot.
   */
  onLapse(paths: readonly string[]): void {
    const lapsed = new Set(paths);
    for (const subs of this.bySocket.values()) {
      for (const sub of subs.values()) {
        if (!sub.holds.some((path) => lapsed.has(path))) continue;
        this.resnapshot(sub).catch((err: unknown) => this.logger.warn('realtime: a live query could not take a fresh snapshot', { error: err }));
      }
    }
  }

  /** A resync entry: each subscription takes a fresh snapshot (one still starting does it when it meets the entry). */
  private resyncAll(subs: readonly Subscription[], entry: ChangeEntry): void {
    for (const sub of subs) {
      if (sub.ended || entry.s <= sub.lastSeq) continue;
      if (sub.starting) {
        sub.pending.push(entry);
        continue;
      }
      if (sub.overflowed) continue;
      this.resnapshot(sub).catch((err: unknown) => this.logger.warn('realtime: a live query could not take a fresh snapshot', { error: err }));
    }
  }

  private add(sub: Subscription): void {
    let own = this.bySocket.get(sub.socket.id);
    if (!own) this.bySocket.set(sub.socket.id, (own = new Map()));
    own.set(sub.id, sub);
    if (sub.uid !== undefined) {
      let mine = this.byUser.get(sub.uid);
      if (!mine) this.byUser.set(sub.uid, (mine = new Set()));
      mine.add(sub);
    }
    let index = this.feeds.get(sub.path);
    if (!index) this.feeds.set(sub.path, (index = new SubscriptionIndex()));
    index.add(sub, sub.filter);
  }

  private remove(sub: Subscription): void {
    sub.ended = true;
    for (const path of sub.holds) this.log?.release(path);
    sub.holds = [];
    const own = this.bySocket.get(sub.socket.id);
    if (own?.get(sub.id) === sub) own.delete(sub.id);
    if (own?.size === 0) this.bySocket.delete(sub.socket.id);
    if (sub.uid !== undefined) {
      const mine = this.byUser.get(sub.uid);
      mine?.delete(sub);
      if (mine?.size === 0) this.byUser.delete(sub.uid);
    }
    const index = this.feeds.get(sub.path);
    index?.remove(sub);
    if (index?.size === 0) this.feeds.delete(sub.path);
  }

  /**
   * Where a subscription starts. Writes arriving meanwhile wait in `pending`; those numbered up
   * to the start are in the snapshot or the replay already and are skipped by their number.
   */
  private async begin(sub: Subscription, collection: Collection, start: Start): Promise<{ snapshot?: Record<string, unknown>[]; replay: ChangeEntry[] }> {
    const log = this.requireLog();
    if (typeof start === 'object') {
      const missed = await log.since(sub.path, start.since);
      if (missed !== 'gap') {
        sub.lastSeq = start.since;
        return { replay: missed };
      }
      // Too many were missed to replay: a fresh snapshot tells the client the state instead.
      start = 'snapshot';
    }
    sub.lastSeq = await log.head(sub.path);
    if (start === 'head') return { replay: [] };
    const objects = await collection.readAs(this.contextOf(sub), sub.query);
    return { snapshot: objects, replay: [] };
  }

  /** Tells the writes that came while the subscription started, then lets it go live. */
  private async catchUp(sub: Subscription, collection: Collection, replay: ChangeEntry[]): Promise<void> {
    let batch = replay;
    let resync = false;
    for (;;) {
      const next = [...batch, ...sub.pending].sort((a, b) => a.s - b.s);
      batch = [];
      sub.pending = [];
      if (next.length === 0 || sub.ended || resync) break;
      for (const entry of next) {
        if (entry.s <= sub.lastSeq || sub.ended) continue;
        if (entry.k === 'resync') {
          // What changed is not told: a fresh snapshot shows it (and what follows it).
          resync = true;
          break;
        }
        const message = await this.decide(collection, sub, entry);
        sub.lastSeq = entry.s;
        if (!message) continue;
        await this.roomFor(sub);
        this.send(sub, message);
      }
    }
    sub.starting = false;
    // Not awaited: this may run inside a snapshot being taken, which the next one waits for.
    if (resync && !sub.ended) this.resnapshot(sub).catch((err: unknown) => this.logger.warn('realtime: a live query could not take a fresh snapshot', { error: err }));
  }

  // ---- delivery ----

  private async deliver(subs: readonly Subscription[], entry: WriteEntry): Promise<void> {
    const collection = this.collectionAt(entry.p);
    if (!collection) return;
    const live: Subscription[] = [];
    for (const sub of subs) {
      if (sub.ended || sub.overflowed || entry.s <= sub.lastSeq) continue;
      if (sub.starting) sub.pending.push(entry);
      else live.push(sub);
    }
    if (live.length === 0) return;
    const messages = await Promise.all(
      live.map((sub) =>
        this.decide(collection, sub, entry).catch((err: unknown) => {
          this.logger.warn(`realtime: a change of ${entry.p} could not be shown to a live query`, { error: err });
          return undefined;
        }),
      ),
    );
    for (let i = 0; i < live.length; i++) {
      const sub = live[i] as Subscription;
      sub.lastSeq = entry.s;
      const message = messages[i];
      if (message) this.send(sub, message);
    }
  }

  /**
   * What one write means to one subscription: the object as its caller may see it now
   * (create / update / enter), or its id when it stops matching or being visible (leave /
   * delete), or nothing. Whether it matched before is decided on its previous state by the same
   * filter and the same showTo, so a leave never names an object the caller could not see.
   */
  private async decide(collection: Collection, sub: Subscription, entry: WriteEntry): Promise<LiveMessage | undefined> {
    const now = entry.k === 'delete' ? undefined : entry.o;
    const before = entry.k === 'update' ? entry.v : entry.k === 'delete' ? entry.o : undefined;
    const matchedBefore = before !== undefined && sub.matches(before);
    if (now !== undefined && sub.matches(now)) {
      const [shown] = await collection.showTo(this.contextOf(sub), [now]);
      if (shown) {
        const type = entry.k === 'create' ? 'create' : matchedBefore ? 'update' : 'enter';
        return { sub: sub.id, seq: entry.s, type, object: project(shown, sub.fields) } as LiveMessage;
      }
    }
    if (!matchedBefore || before === undefined) return undefined;
    const [was] = await collection.showTo(this.contextOf(sub), [before]);
    if (!was) return undefined;
    return { sub: sub.id, seq: entry.s, type: entry.k === 'delete' ? 'delete' : 'leave', id: before.id } as LiveMessage;
  }

  private contextOf(sub: Subscription): Context {
    // A scope per event: recursion counts of one event's On Get must not add up across events.
    return { ...sub.base, scope: createRequestScope(sub.client) };
  }

  /**
   * Sends one message, unless the socket is not reading: past `maxBuffered` packets waiting,
   * its subscriptions drop events and each gets a fresh snapshot once the socket drains.
   */
  private send(sub: Subscription, message: LiveMessage): void {
    if (sub.ended || sub.overflowed) return;
    const conn = sub.socket.conn as unknown as { writeBuffer?: unknown[]; once(event: 'drain', fn: () => void): void };
    if ((conn.writeBuffer?.length ?? 0) >= this.limits.maxBuffered) {
      sub.overflowed = true;
      this.resnapshotOnDrain(sub.socket);
      return;
    }
    sub.socket.emit(LIVE_EVENT, message);
  }

  /**
   * A catch-up (a resume's missed writes, those that came during a snapshot) sends its messages
   * in one go, before the socket has written any: up to the change log's ring (1000 by default)
   * at once. Past `maxBuffered` waiting, it waits for the socket to take them, as a socket that
   * reads does at its next write (or poll), instead of overflowing into a fresh snapshot on top
   * of part of the replay. A socket that does not take them within `catchUpWaitMs` overflows
   * as a live one does (send), so one that never reads holds nothing longer than that.
   */
  private roomFor(sub: Subscription): Promise<void> {
    const conn = sub.socket.conn as unknown as BufferedConn;
    if (sub.ended || (conn.writeBuffer?.length ?? 0) < this.limits.maxBuffered) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        conn.off('drain', done);
        conn.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, this.limits.catchUpWaitMs);
      conn.on('drain', done);
      conn.on('close', done);
    });
  }

  private resnapshotOnDrain(socket: LiveSocket): void {
    if (this.draining.has(socket)) return;
    this.draining.add(socket);
    const conn = socket.conn as unknown as { writeBuffer?: unknown[]; once(event: 'drain', fn: () => void): void };
    const onDrain = (): void => {
      if ((conn.writeBuffer?.length ?? 0) >= this.limits.maxBuffered) return conn.once('drain', onDrain);
      this.draining.delete(socket);
      for (const sub of this.bySocket.get(socket.id)?.values() ?? []) {
        if (sub.overflowed) this.resnapshot(sub).catch((err: unknown) => this.logger.warn('realtime: a live query could not take a fresh snapshot', { error: err }));
      }
    };
    conn.once('drain', onDrain);
  }

  /** A fresh snapshot, after any still being taken for this subscription (never two at once). */
  private resnapshot(sub: Subscription): Promise<void> {
    const next = (sub.restarting ?? Promise.resolve()).then(() => this.takeSnapshot(sub));
    sub.restarting = next.catch(() => undefined);
    return next;
  }

  private async takeSnapshot(sub: Subscription): Promise<void> {
    const collection = this.collectionAt(sub.path);
    if (!collection || sub.ended) return;
    // Writes from now on wait for the snapshot; those before it are in it.
    sub.starting = true;
    sub.pending = [];
    sub.overflowed = false;
    const begun = await this.begin(sub, collection, 'snapshot');
    if (begun.snapshot) this.send(sub, { sub: sub.id, seq: sub.lastSeq, type: 'snapshot', objects: begun.snapshot });
    await this.catchUp(sub, collection, []);
  }

  /**
   * A user's own object changed (a role, a team): their subscriptions see them as they are now,
   * and take a fresh snapshot, since what they may see (objects, properties) may have changed.
   */
  private userChanged(entry: WriteEntry): void {
    const subs = this.byUser.get(entry.o.id);
    if (!subs) return;
    for (const sub of [...subs]) {
      if (sub.base.session.path === undefined || normalisePath(sub.base.session.path) !== entry.p || deepEqual(sub.base.me, entry.o)) continue;
      sub.base = { ...sub.base, me: entry.o };
      const collection = this.collectionAt(sub.path);
      if (!collection) continue;
      sub.filter = withAccess(sub.own, collection.accessFilter(this.contextOf(sub), 'list'));
      sub.matches = matcherOf(sub.filter);
      this.feeds.get(sub.path)?.add(sub, sub.filter);
      this.resnapshot(sub).catch((err: unknown) => this.logger.warn('realtime: a live query could not take a fresh snapshot', { error: err }));
    }
  }


  private requireLog(): ChangeLog {
    if (!this.log) throw new SvcError('UNAVAILABLE', 'live queries are not ready yet');
    return this.log;
  }
}
