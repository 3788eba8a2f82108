import { Server } from 'socket.io';
import type { Namespace, Socket } from 'socket.io';
import { isUserResource, requestSessionId, silentLogger } from '@svc/core';
import type { CorsOptions, Logger, Realtime, SessionChange, SvcServer, UserResource } from '@svc/core';
import type { Adapter } from 'socket.io-adapter';
import { FastAdapter, fastDeliveryAvailable } from './internal/fastAdapter.js';
import { connectRedis } from './internal/redis.js';
import type { RedisLink } from './internal/redis.js';
import { isBindingRoom, normalisePath, sessionRoom, userRoom } from './internal/rooms.js';

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
}

type ClientEvents = Record<typeof SESSION_EVENT, (sessionId: string | null, ack?: (answer: SessionAck) => void) => void>;
type ServerEvents = Record<string, (...args: unknown[]) => void>;
type SvcSocket = Socket<ClientEvents, ServerEvents, ServerEvents, SocketBinding>;
type SvcIo = Server<ClientEvents, ServerEvents, ServerEvents, SocketBinding>;

/** Socket.IO calls the adapter factory with `new`: a function, not an arrow. */
function fastAdapterFactory(nsp: Namespace): Adapter {
  return new FastAdapter(nsp) as unknown as Adapter;
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
  private readonly logger: Logger;

  constructor(private readonly options: RealtimeOptions) {
    this.logger = options.logger ?? silentLogger;
  }

  get io(): Server | undefined {
    return this.ioServer as Server | undefined;
  }

  async attach(server: SvcServer): Promise<void> {
    if (this.server) throw new Error('realtime is already attached');
    this.server = server;
    const origins = this.options.cors?.origins ?? '*';
    if (this.options.redisUrl) this.redis = await connectRedis(this.options.redisUrl, this.options.redisKey ?? 'svc', this.logger);
    const io: SvcIo = new Server(server.httpServer, {
      path: this.options.path ?? '/socket.io',
      serveClient: false,
      cors: { origin: origins === '*' ? true : [...origins], credentials: true },
      ...(this.redis ? { adapter: this.redis.adapter } : fastDeliveryAvailable() ? { adapter: fastAdapterFactory } : {}),
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
    io.on('connection', (socket) => {
      socket.on(SESSION_EVENT, (sessionId, ack) => {
        this.rebind(socket, sessionId).then(
          (answer) => ack?.(answer),
          (err: unknown) => {
            this.logger.warn('realtime: could not bind a socket to its session', { error: err });
            ack?.({ ok: false });
          },
        );
      });
    });
    this.unsubscribe = server.onSessionChange((change) => {
      this.followSession(change).catch((err: unknown) => this.logger.warn('realtime: could not update session rooms', { error: err }));
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

  async close(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
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
    this.join(socket, record.id, record.uid);
  }

  /** A client tells which session it now has (the id a login answered), or null after logout. */
  private async rebind(socket: SvcSocket, sessionId: string | null): Promise<SessionAck> {
    for (const room of socket.rooms) if (isBindingRoom(room)) void socket.leave(room);
    socket.data = {};
    if (typeof sessionId !== 'string' || !this.server) return { ok: sessionId === null };
    const record = await this.server.sessions.load(sessionId);
    if (record === null) return { ok: false };
    this.join(socket, record.id, record.uid);
    return record.uid === undefined ? { ok: true } : { ok: true, uid: record.uid };
  }

  private join(socket: SvcSocket, sid: string, uid: string | undefined): void {
    const rooms = uid === undefined ? [sessionRoom(sid)] : [sessionRoom(sid), userRoom(uid)];
    void socket.join(rooms);
    socket.data = uid === undefined ? { sid } : { sid, uid };
  }

  /**
   * Moves the sockets of a session that logged in (under a new session id) or out. The join goes
   * out at once through the adapter; then fetchSockets (which reaches every process) finds the
   * rooms of a user logged in before on that session, for them to leave.
   */
  private async followSession(change: SessionChange): Promise<void> {
    const io = this.ioServer;
    if (!io) return;
    const from = change.uid === undefined ? change.sessionId : change.previousSessionId;
    if (from === undefined) return;
    const keep = new Set<string>();
    if (change.uid !== undefined) {
      keep.add(sessionRoom(change.sessionId)).add(userRoom(change.uid));
      io.in(sessionRoom(from)).socketsJoin([...keep]);
    }
    const sockets = await io.in(sessionRoom(from)).fetchSockets();
    for (const socket of sockets) {
      for (const room of socket.rooms) if (isBindingRoom(room) && !keep.has(room)) socket.leave(room);
    }
  }
}
