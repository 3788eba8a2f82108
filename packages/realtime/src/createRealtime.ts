import type { IncomingMessage } from 'node:http';
import { Server } from 'socket.io';
import type { Namespace, Socket } from 'socket.io';
import { isUserResource, requestSessionId, silentLogger } from '@svc/core';
import type { CorsOptions, Logger, Realtime, SessionChange, SessionRecord, SvcServer, UserResource } from '@svc/core';
import type { Adapter } from 'socket.io-adapter';
import { FastAdapter, fastDeliveryAvailable } from './internal/fastAdapter.js';
import { connectRedis } from './internal/redis.js';
import type { RedisLink } from './internal/redis.js';
import { isBindingRoom, normalisePath, sessionRoom, userRoom } from './internal/rooms.js';
import { SocketCaps } from './internal/SocketCaps.js';
import { PEER_SHOWN, deliverShown, isObjectData, parseShownEmit, recipientsOf } from './internal/shownEmits.js';
import type { ShownEmit } from './internal/shownEmits.js';
import { LocalChangeLog, RedisChangeLog } from './internal/live/changeLog.js';
import type { ChangeLog, RedisCommands, RedisSubscriber } from './internal/live/changeLog.js';
import { DEFAULT_LIVE_LIMITS, LiveQueries } from './internal/live/LiveQueries.js';
import type { LiveLimits } from './internal/live/LiveQueries.js';
import { serveClientFile } from './internal/serveClientFile.js';
import type { RequestListener } from './internal/serveClientFile.js';
import { PEER_ENDED, PEER_MOVED, parseSessionEvent } from './internal/sessionEvents.js';
import type { PeerEvents, SessionEvent } from './internal/sessionEvents.js';

/** Options of {@link createRealtime}. */
export interface RealtimeOptions {
  /** A redis:// URL: emits and room changes then reach the sockets of every process sharing it. */
  redisUrl?: string;
  /** Prefix of the Redis channels, so several apps can share one Redis. Default 'svc'. */
  redisKey?: string;
  logger?: Logger;
  /** The Socket.IO path. Default '/socket.io'. */
  path?: string;
  /** Origins allowed to open a socket with credentials (the app's CORS setting). Default any. */
  cors?: CorsOptions;
  /**
   * Open sockets one client address may hold (IPv6: one /64), this process; beyond it the
   * handshake is refused (403). Default 100; 0: no cap.
   */
  maxSocketsPerAddress?: number;
  /** Open sockets in all, this process; beyond it the handshake is refused (403). Default 10000; 0: no cap. */
  maxSockets?: number;
  /** Live queries' limits (app.json `realtime.live`). */
  live?: LiveOptions;
}

/** Limits of live queries; each has a default. */
export interface LiveOptions extends Partial<LiveLimits> {
  /** Writes kept per collection for clients that resume (beyond: a fresh snapshot). Default 1000. */
  ringSize?: number;
  /**
   * How long after its last live query ends a collection's writes are still published, so that a
   * client reconnecting within it resumes without a fresh snapshot. Default 60000 ms.
   */
  idleHoldMs?: number;
}

/** What the server keeps about each socket. */
export interface SocketBinding {
  /** The session the socket is bound to. */
  sid?: string;
  /** The logged-in user of that session. */
  uid?: string;
}

/** Sent by a client to bind its socket to a session (after a login over HTTP) or to unbind it. */
export const SESSION_EVENT = 'svc:session';

/**
 * Sent by the server to the sockets of a session that ended (logout elsewhere, password changed,
 * user deleted, idle expiry): the socket stays connected as an anonymous one (it still gets
 * broadcasts, no user's messages); a login over HTTP and a {@link SESSION_EVENT} bind it again.
 */
export const SESSION_ENDED_EVENT = 'svc:session-ended';

/** The answer to a {@link SESSION_EVENT} message. */
export interface SessionAck {
  ok: boolean;
  uid?: string;
}

/** The realtime transport of an svc server. */
export interface SocketRealtime extends Realtime {
  /**
   * Attaches Socket.IO to the server's HTTP server and follows its logins and logouts. Call it
   * once, before or after `listen()`; emits before it reach nobody.
   */
  attach(server: SvcServer): Promise<void>;
  /** Disconnects this process's sockets and leaves Redis; the HTTP server is left to its owner. */
  close(): Promise<void>;
  /** The Socket.IO server once attached (for tests and metrics). */
  readonly io: Server | undefined;
  /** Live-query subscriptions open in this process (metrics, tests). */
  readonly liveSubscriptions: number;
  /**
   * Root's view, in this process, of every change of the app's collections made by any process
   * (the dashboard's data grid): the collection's path, the kind of change and the object's id.
   * Its collections' writes are published while it follows. Answers a function that stops it.
   */
  followChanges(listener: (change: FollowedChange) => void): () => void;
}

/** One change told to {@link SocketRealtime.followChanges}. */
export interface FollowedChange {
  path: string;
  kind: 'create' | 'update' | 'delete' | 'resync';
  id?: string;
}

type ClientEvents = Record<typeof SESSION_EVENT, (sessionId: string | null, ack?: (answer: SessionAck) => void) => void>;
type ServerEvents = Record<string, (...args: unknown[]) => void>;
type AllPeerEvents = PeerEvents & Record<typeof PEER_SHOWN, (event: unknown) => void>;
type SvcSocket = Socket<ClientEvents, ServerEvents, AllPeerEvents, SocketBinding>;
type SvcIo = Server<ClientEvents, ServerEvents, AllPeerEvents, SocketBinding>;

/** Socket.IO calls the adapter factory with `new`: a function, not an arrow. */
function fastAdapterFactory(nsp: Namespace): Adapter {
  return new FastAdapter(nsp) as unknown as Adapter;
}

/** Longest wait between two checks of a bound session's expiry (an end this process missed, e.g. with Redis down, is noticed by then). */
const RECHECK_MS = 5 * 60 * 1000;
/** Longest wait for the other processes to confirm an end (the adapter's own request timeout is 5 s). */
const PEER_WAIT_MS = 6000;
/** At most one log line per this time about refused handshakes. */
const REFUSAL_LOG_MS = 60 * 1000;
/** Session binds of one socket waiting or running at once; more are refused. */
const MAX_PENDING_BINDS = 2;
/** After a failed check (store down), the next one. */
const RETRY_MS = 30 * 1000;
/** How long an ended session id is remembered, for a bind that loaded it just before it ended. */
const ENDED_MEMORY_MS = 60 * 1000;
const ENDED_MEMORY_MAX = 10_000;

/** A session with sockets here: when to check that it is still there. */
interface Watch {
  timer: NodeJS.Timeout;
}

/**
 * Creates the Socket.IO transport. It can be made before the server exists (scripts get it as
 * their `emit` target) and attached to the server once that is built.
 */
export function createRealtime(options: RealtimeOptions = {}): SocketRealtime {
  return new SocketIoRealtime(options);
}

class SocketIoRealtime implements SocketRealtime {
  private server: SvcServer | undefined;
  private ioServer: SvcIo | undefined;
  private redis: RedisLink | undefined;
  private unsubscribe: (() => void) | undefined;
  private unsubscribeEnd: (() => void) | undefined;
  private unserveClient: (() => void) | undefined;
  private readonly logger: Logger;
  /** Stored sessions with sockets in this process, for their idle expiry. */
  private readonly watches = new Map<string, Watch>();
  /** Session ids ended lately (here or told by Redis), oldest first: id -> when. */
  private readonly endedLately = new Map<string, number>();
  private readonly caps: SocketCaps;
  private lastRefusalLog = 0;
  private live: LiveQueries | undefined;
  private changeLog: ChangeLog | undefined;

  constructor(private readonly options: RealtimeOptions) {
    this.logger = options.logger ?? silentLogger;
    this.caps = new SocketCaps(options.maxSocketsPerAddress ?? 100, options.maxSockets ?? 10_000);
  }

  get io(): Server | undefined {
    return this.ioServer as Server | undefined;
  }

  async attach(server: SvcServer): Promise<void> {
    if (this.server) throw new Error('realtime is already attached');
    this.server = server;
    if (this.options.redisUrl) this.redis = await connectRedis(this.options.redisUrl, this.options.redisKey ?? 'svc', this.logger);
    const own = server.httpServer.listeners('request') as RequestListener[];
    const io: SvcIo = new Server(server.httpServer, {
      path: this.options.path ?? '/socket.io',
      serveClient: false,
      cors: { origin: corsOrigin(this.options.cors?.origins ?? '*'), credentials: true },
      // New handshakes only: the engine asks before it makes a socket.
      allowRequest: (req: IncomingMessage, callback: (err: string | null | undefined, success: boolean) => void) => {
        const client = server.clientOf(req).address;
        const refusal = this.caps.refusal(client);
        if (refusal === undefined) return callback(null, true);
        callback(refusal, false);
        // An operator should hear of it, but a flood of refusals must not flood the log.
        const now = Date.now();
        if (now - this.lastRefusalLog < REFUSAL_LOG_MS) return;
        this.lastRefusalLog = now;
        this.logger.warn(
          `realtime: refused a socket from ${client || 'an unknown address'}: ${refusal} (app.json realtime.maxSocketsPerAddress and realtime.maxSockets; behind a reverse proxy, list it in app.json trustProxy so that clients count by their own address); further refusals in the next minute are not logged`,
        );
      },
      ...(this.redis ? { adapter: this.redis.adapter } : fastDeliveryAvailable() ? { adapter: fastAdapterFactory } : {}),
    });
    // After Socket.IO, so that it is in front of Engine.IO's handler of every /socket.io/ URL; other URLs go to `own`, the listeners Engine.IO took.
    this.unserveClient = serveClientFile(server.httpServer, this.options.path ?? '/socket.io', own);
    io.engine.on('connection', (conn: { request: IncomingMessage; once(event: 'close', fn: () => void): void }) => {
      // The request's client was computed at the handshake (remembered with the request).
      const key = this.caps.opened(server.clientOf(conn.request).address);
      conn.once('close', () => this.caps.closed(key));
    });
    io.use((socket, next) => {
      this.bindFromCookie(socket).then(
        () => next(),
        (err: unknown) => {
          // The socket still works for broadcasts; only user-targeted messages miss it.
          this.logger.warn('realtime: could not load the session of a socket', { error: err });
          next();
        },
      );
    });
    const live = new LiveQueries(server, { ...DEFAULT_LIVE_LIMITS, ...definedOf(this.options.live ?? {}) }, this.logger);
    const ringSize = this.options.live?.ringSize ?? 1000;
    const idleHoldMs = this.options.live?.idleHoldMs;
    const redis = this.redis;
    this.changeLog = redis
      ? await RedisChangeLog.open({
          key: this.options.redisKey ?? 'svc',
          ringSize,
          pub: redis.pub as unknown as RedisCommands,
          sub: redis.sub as unknown as RedisSubscriber,
          logger: this.logger,
          isReady: () => redis.isReady(),
          onEntry: (entry) => live.onEntry(entry),
          onReconnect: (listener) => redis.onReconnect(listener),
          onLapse: (paths) => live.onLapse(paths),
          ...(idleHoldMs !== undefined ? { idleHoldMs } : {}),
        })
      : new LocalChangeLog(ringSize, (entry) => live.onEntry(entry), idleHoldMs);
    live.useLog(this.changeLog);
    this.live = live;
    io.on('connection', (socket) => {
      live.connect(socket as unknown as Socket);
      // Binds run one after the other (the last one asked wins); a socket flooding binds gets
      // { ok: false } for those past MAX_PENDING_BINDS instead of one store read each.
      let pending = 0;
      let chain: Promise<unknown> = Promise.resolve();
      socket.on(SESSION_EVENT, (sessionId, ack) => {
        if (pending >= MAX_PENDING_BINDS) return ack?.({ ok: false });
        pending++;
        chain = chain
          .then(() => this.rebind(socket, sessionId))
          .then(
            (answer) => ack?.(answer),
            (err: unknown) => {
              this.logger.warn('realtime: could not bind a socket to its session', { error: err });
              ack?.({ ok: false });
            },
          )
          .finally(() => pending--);
      });
      socket.on('disconnect', () => {
        if (socket.data.sid !== undefined) this.unwatchIfGone(socket.data.sid);
      });
    });
    this.unsubscribe = server.onSessionChange((change) => {
      this.followSession(change).catch((err: unknown) => this.logger.warn('realtime: could not update session rooms', { error: err }));
    });
    this.unsubscribeEnd = server.sessions.onEnd((ids) => this.endSessions(ids));
    // From the other processes (through the Redis adapter): each answers once done, so that the
    // process that ended a session knows every socket is unbound before it answers its request.
    io.on(PEER_ENDED, (value, ack) => {
      const event = parseSessionEvent(value);
      if (event?.t === 'end') for (const id of event.ids) this.endLocally(id);
      else this.logger.warn('realtime: ignored a malformed session event from another process');
      if (typeof ack === 'function') ack(true);
    });
    // Ends told while Redis was down never arrived: check every session with sockets here now.
    this.redis?.onReconnect(() => {
      for (const sid of [...this.watches.keys()]) this.watchAgainIn(sid, 0);
    });
    io.on(PEER_SHOWN, (value) => {
      const event = parseShownEmit(value);
      if (event) void this.deliverShown(event);
      else this.logger.warn('realtime: ignored a malformed emit from another process');
    });
    io.on(PEER_MOVED, (value) => {
      const event = parseSessionEvent(value);
      if (event?.t === 'move') this.moveLocally(event.from, event.to, event.uid, event.lastSeen);
      else this.logger.warn('realtime: ignored a malformed session event from another process');
    });
    this.ioServer = io;
  }

  emit(message: string, data?: unknown): void {
    const io = this.ioServer;
    if (!io) return;
    if (data === undefined) io.emit(message);
    else io.emit(message, data);
  }

  async emitToUsers(usersPath: string, query: Record<string, unknown>, message: string, data?: unknown): Promise<void> {
    if (!this.ioServer || !this.server) return;
    const ids = await this.usersOf(usersPath).findUserIds(query);
    if (ids.length === 0) return;
    // Rooms resolve to their sockets: the work is per recipient, never per connection.
    const target = this.ioServer.to(ids.map(userRoom));
    if (data === undefined) target.emit(message);
    else target.emit(message, data);
  }

  /** Live-query subscriptions open in this process. */
  get liveSubscriptions(): number {
    return this.live?.count ?? 0;
  }

  followChanges(listener: (change: FollowedChange) => void): () => void {
    if (!this.live) return () => undefined;
    return this.live.follow((entry) => listener(entry.k === 'resync' ? { path: entry.p, kind: 'resync' } : { path: entry.p, kind: entry.k, id: entry.o.id }));
  }

  /**
   * A script's emit of its own collection's objects: each recipient gets them through showTo as
   * its caller (private properties, On Get and access rules), in every process; other data is
   * sent as it is (scripts are trusted server code).
   */
  async emitObjects(collectionPath: string, message: string, data: unknown, users?: { path: string; query: Record<string, unknown> }): Promise<void> {
    const io = this.ioServer;
    if (!io || !this.server) return;
    if (!isObjectData(data)) return users ? this.emitToUsers(users.path, users.query, message, data) : this.emit(message, data);
    let uids: string[] | undefined;
    if (users) {
      uids = await this.usersOf(users.path).findUserIds(users.query);
      if (uids.length === 0) return;
    }
    const event: ShownEmit = { p: collectionPath, m: message, d: data, ...(uids ? { u: uids } : {}) };
    if (this.redis) io.serverSideEmit(PEER_SHOWN, event);
    await this.deliverShown(event);
  }

  private async deliverShown(event: ShownEmit): Promise<void> {
    const io = this.ioServer;
    if (!io || !this.server) return;
    await deliverShown(this.server, recipientsOf(io as unknown as Parameters<typeof recipientsOf>[0], event.u), event, this.logger);
  }

  async close(): Promise<void> {
    this.live?.close();
    this.live = undefined;
    await this.changeLog?.close();
    this.changeLog = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.unsubscribeEnd?.();
    this.unsubscribeEnd = undefined;
    for (const watch of this.watches.values()) clearTimeout(watch.timer);
    this.watches.clear();
    this.unserveClient?.();
    this.unserveClient = undefined;
    const io = this.ioServer;
    this.ioServer = undefined;
    if (io) {
      // Not io.close(): that would also close the HTTP server, which the svc server drains itself.
      io.local.disconnectSockets(true);
      await io.of('/').adapter.close();
      io.engine.close();
    }
    await this.redis?.close();
    this.redis = undefined;
  }

  private usersOf(usersPath: string): UserResource {
    const path = normalisePath(usersPath);
    const resource = this.server?.resources.find((r) => normalisePath(r.path) === path);
    if (resource === undefined || !isUserResource(resource)) throw new Error(`emit: ${usersPath} is not a user collection`);
    return resource;
  }

  private async bindFromCookie(socket: SvcSocket): Promise<void> {
    const sid = requestSessionId(socket.request.headers);
    if (sid === undefined || !this.server) return;
    const record = await this.server.sessions.load(sid);
    if (record === null) return;
    this.join(socket, record);
  }

  /**
   * A session ended (told by the session manager of this process): its sockets here are unbound
   * at once, and those of the other processes (Redis) before this resolves, so that an emit made
   * after the logout's answer, by any process, reaches none of them. A process that does not
   * answer in the adapter's request timeout (5 s) delays the answer that long, no more; with Redis
   * down nothing waits.
   */
  private async endSessions(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.endLocally(id);
    const io = this.ioServer;
    if (!this.redis || !io) return;
    // Each process still checks its sockets' sessions at least every RECHECK_MS: an end that
    // could not be told is noticed by then.
    if (!this.redis.isReady()) {
      this.logger.warn('realtime: Redis is down; the other processes unbind the sockets of ended sessions at their next check', { ids: ids.length });
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      // The adapter times out peers that do not answer; this also bounds its count of them.
      await Promise.race([
        io.serverSideEmitWithAck(PEER_ENDED, { t: 'end', ids: [...ids] } satisfies SessionEvent),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${PEER_WAIT_MS} ms`)), PEER_WAIT_MS))),
      ]);
    } catch (err) {
      this.logger.warn('realtime: not every process confirmed that it unbound the sockets of ended sessions', { error: err });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Unbinds this process's sockets of an ended session: anonymous from now on. */
  private endLocally(sid: string): void {
    const now = Date.now();
    this.endedLately.delete(sid);
    this.endedLately.set(sid, now);
    for (const [id, at] of this.endedLately) {
      if (now - at <= ENDED_MEMORY_MS && this.endedLately.size <= ENDED_MEMORY_MAX) break;
      this.endedLately.delete(id);
    }
    const watch = this.watches.get(sid);
    if (watch) clearTimeout(watch.timer);
    this.watches.delete(sid);
    for (const socket of this.socketsOf(sid)) {
      this.unbind(socket);
      socket.emit(SESSION_ENDED_EVENT);
    }
  }

  /** This process's sockets bound to session `sid`, as a list (binding them anew changes the room). */
  private socketsOf(sid: string): Socket[] {
    const io = this.ioServer;
    const members = io?.of('/').adapter.rooms.get(sessionRoom(sid));
    if (!io || !members) return [];
    const sockets: Socket[] = [];
    for (const socketId of members) {
      const socket = io.of('/').sockets.get(socketId);
      if (socket) sockets.push(socket);
    }
    return sockets;
  }

  private unbind(socket: SvcSocket): void {
    // Subscriptions were made as the session's caller: they end with the binding.
    this.live?.endSocket(socket as unknown as Socket, 'session-ended');
    for (const room of [...socket.rooms]) if (isBindingRoom(room)) void socket.leave(room);
    socket.data = {};
  }

  /**
   * Checks a session that has sockets here when it would expire if idle until then (and at least
   * every RECHECK_MS): one that expired is removed, and so ended, by the check itself.
   */
  private watch(sid: string, lastSeen: number): void {
    const server = this.server;
    // Not once closed (a bind that was loading when close() ran).
    if (!server || !this.ioServer) return;
    const previous = this.watches.get(sid);
    if (previous) clearTimeout(previous.timer);
    const expiresIn = lastSeen + server.sessions.idleSeconds * 1000 - Date.now();
    const delay = Math.max(0, Math.min(expiresIn + 10, RECHECK_MS));
    const timer = setTimeout(() => {
      this.watches.delete(sid);
      if (this.localSockets(sid) === 0) return;
      server.sessions.check(sid).then(
        (record) => {
          if (record === null) this.endLocally(sid);
          else if (this.localSockets(sid) > 0 && !this.watches.has(sid)) this.watch(sid, record.lastSeen);
        },
        (err: unknown) => {
          this.logger.warn('realtime: could not check the session of sockets', { error: err });
          if (!this.watches.has(sid)) this.watchAgainIn(sid, RETRY_MS);
        },
      );
    }, delay);
    timer.unref();
    this.watches.set(sid, { timer });
  }

  private watchAgainIn(sid: string, ms: number): void {
    const server = this.server;
    if (!server) return;
    this.watch(sid, Date.now() + ms - server.sessions.idleSeconds * 1000);
  }

  private localSockets(sid: string): number {
    return this.ioServer?.of('/').adapter.rooms.get(sessionRoom(sid))?.size ?? 0;
  }

  private unwatchIfGone(sid: string): void {
    if (this.localSockets(sid) > 0) return;
    const watch = this.watches.get(sid);
    if (watch) clearTimeout(watch.timer);
    this.watches.delete(sid);
  }

  /** A client tells which session it now has (the id a login answered), or null after logout. */
  private async rebind(socket: SvcSocket, sessionId: string | null): Promise<SessionAck> {
    const before = socket.data.sid;
    if (typeof sessionId === 'string' && sessionId === before && this.server) {
      // The same session told again (a client reconnecting): the socket stays bound, and its
      // live queries go on, while the session stands.
      const record = await this.server.sessions.load(sessionId);
      if (record !== null && socket.data.sid === sessionId && !this.endedLately.has(sessionId)) return record.uid === undefined ? { ok: true } : { ok: true, uid: record.uid };
      if (socket.data.sid === sessionId) this.unbind(socket);
      this.unwatchIfGone(sessionId);
      return { ok: false };
    }
    this.unbind(socket);
    if (before !== undefined) this.unwatchIfGone(before);
    if (typeof sessionId !== 'string' || !this.server) return { ok: sessionId === null };
    const record = await this.server.sessions.load(sessionId);
    if (record === null) return { ok: false };
    if (!this.join(socket, record)) return { ok: false };
    return record.uid === undefined ? { ok: true } : { ok: true, uid: record.uid };
  }


  /** Binds a socket to a session just loaded; false when that session ended meanwhile. */
  private join(socket: SvcSocket, record: SessionRecord): boolean {
    const { id: sid, uid } = record;
    // Loaded before its end, joined after: the end's unbinding has passed this socket by.
    if (this.endedLately.has(sid)) return false;
    const rooms = uid === undefined ? [sessionRoom(sid)] : [sessionRoom(sid), userRoom(uid)];
    void socket.join(rooms);
    socket.data = uid === undefined ? { sid } : { sid, uid };
    if (record.anonymous !== true && !this.watches.has(sid)) this.watch(sid, record.lastSeen);
    return true;
  }

  /**
   * Moves the sockets of a session that logged in (under a new session id) to the new session and
   * its user: here at once, in the other processes through Redis. A logout is an end (endSessions).
   */
  private async followSession(change: SessionChange): Promise<void> {
    if (change.uid === undefined || change.previousSessionId === undefined) return;
    // Just stored by the login.
    const lastSeen = Date.now();
    this.moveLocally(change.previousSessionId, change.sessionId, change.uid, lastSeen);
    if (this.redis) this.ioServer?.serverSideEmit(PEER_MOVED, { t: 'move', from: change.previousSessionId, to: change.sessionId, uid: change.uid, lastSeen } satisfies SessionEvent);
  }

  private moveLocally(from: string, to: string, uid: string, lastSeen: number): void {
    for (const socket of this.socketsOf(from)) {
      this.unbind(socket);
      this.join(socket, { id: to, uid, createdAt: lastSeen, lastSeen });
    }
    this.unwatchIfGone(from);
  }
}

/** The options given, without the keys set to undefined (so defaults stay). */
function definedOf<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Socket.IO's `cors.origin` for app.json's realtime origins: any (true), or the listed ones. */
function corsOrigin(origins: '*' | readonly string[]): true | string[] {
  return origins === '*' ? true : [...origins];
}
