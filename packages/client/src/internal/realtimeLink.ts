import { io } from 'socket.io-client';
import type { ManagerOptions, Socket, SocketOptions } from 'socket.io-client';
import type { LiveHandler, SubscribeOptions } from '../types.js';
import type { CookieJar } from './cookieJar.js';
import { LiveSubscriptions } from './liveSubscriptions.js';

/** The message the server binds a socket to a session with (see @svc/realtime). */
const SESSION_EVENT = 'svc:session';
const BIND_TIMEOUT_MS = 3000;

type Handler = (...args: unknown[]) => void;

/** How the client opens its Socket.IO connection (default: socket.io-client's `io`). */
export type OpenSocket = (url: string | undefined, options: Partial<ManagerOptions & SocketOptions>) => Socket;

const openWithIo: OpenSocket = (url, options) => (url === undefined ? io(options) : io(url, options));

/**
 * The client's Socket.IO connection, opened on first use (or at once for /svc.js). Sockets are
 * bound to sessions by the cookies of their handshake; after a login over HTTP the socket is told
 * its new session, so user-targeted messages reach it without reconnecting.
 */
export class RealtimeLink {
  private socket: Socket | undefined;
  /** The session a login answered, re-sent after each reconnect. */
  private session: string | undefined;
  /** Live queries: they move with the socket and resume after each reconnect. */
  private readonly live = new LiveSubscriptions();

  constructor(
    private baseUrl: string,
    private readonly jar: CookieJar | undefined,
    private readonly open: OpenSocket = openWithIo,
  ) {}

  /**
   * Points the socket at another server, as dpd.js's setBaseUrl did: an open socket is closed, and
   * the next on/once/socketReady opens it at the new root, or the next turn of the event loop
   * does when none comes (its listeners and live queries move with it). A test double of
   * `io.connect` set up right after setBaseUrl sees the new root (Deployd's client tests do that).
   */
  setBaseUrl(url: string): void {
    if (url === this.baseUrl) return;
    this.baseUrl = url;
    if (this.socket === undefined) return;
    // A test double of io.connect may answer a bare {on}: only `on` is sure to be there.
    this.socket.disconnect?.();
    this.socket = undefined;
    this.reopening = true;
    setTimeout(() => {
      if (this.reopening && this.socket === undefined) this.connect();
      this.reopening = false;
    }, 0);
  }

  /** Set while a socket closed by setBaseUrl waits to be opened at the new root (close() cancels it). */
  private reopening = false;

  /** The page's listeners, so that they move with the socket (setBaseUrl). */
  private readonly listeners: { message: string; fn: Handler; wrapped?: Handler }[] = [];

  /** The socket, connecting it (with the page's listeners) when it is not yet. */
  connect(): Socket {
    if (this.socket) return this.socket;
    const options = { withCredentials: true, autoConnect: true, ...this.cookieHeaders() };
    // The origin only: a path in the base URL ('https://h/api', a proxy's prefix) would be read
    // by Socket.IO as a namespace, which the server does not have.
    const origin = this.baseUrl === '' ? '' : originOf(this.baseUrl);
    const socket = this.open(origin === '' ? undefined : origin, options);
    this.socket = socket;
    for (const { message, fn, wrapped } of this.listeners) socket.on(message, wrapped ?? fn);
    this.live.attach(socket);
    socket.on('connect', () => {
      if (this.session === undefined) return this.live.resume();
      // Live queries resume as the session's user: once the socket is bound to it.
      socket
        .timeout(BIND_TIMEOUT_MS)
        .emitWithAck(SESSION_EVENT, this.session)
        .then(
          () => this.live.resume(),
          () => this.live.resume(),
        );
    });
    // A reconnect is a new handshake: in Node it must carry the jar's current cookies.
    socket.io?.on('reconnect_attempt', () => {
      socket.io.opts.extraHeaders = this.cookieHeaders().extraHeaders ?? {};
    });
    return socket;
  }

  get current(): Socket | undefined {
    return this.socket;
  }

  on(message: string, fn: Handler): void {
    this.listeners.push({ message, fn });
    // A socket opened now gets every listener, this one included.
    if (this.socket) this.socket.on(message, fn);
    else this.connect();
  }

  off(message: string, fn?: Handler): void {
    for (let i = this.listeners.length - 1; i >= 0; i--) {
      const entry = this.listeners[i]!;
      if (entry.message !== message || (fn !== undefined && entry.fn !== fn)) continue;
      this.listeners.splice(i, 1);
      this.socket?.off?.(message, entry.wrapped ?? entry.fn);
    }
    if (fn === undefined) this.socket?.off?.(message);
  }

  once(message: string, fn: Handler): void {
    const entry: { message: string; fn: Handler; wrapped?: Handler } = { message, fn };
    entry.wrapped = (...args: unknown[]) => {
      const at = this.listeners.indexOf(entry);
      if (at !== -1) this.listeners.splice(at, 1);
      this.socket?.off?.(message, entry.wrapped);
      fn(...args);
    };
    this.listeners.push(entry);
    if (this.socket) this.socket.on(message, entry.wrapped);
    else this.connect();
  }

  /** Starts a live query on `path` (the socket connects if it is not); answers its unsubscribe. */
  subscribe(path: string, query: Record<string, unknown>, handler: LiveHandler<Record<string, unknown> & { id: string }>, options: SubscribeOptions): () => void {
    return this.live.subscribe(this.connect(), path, query, handler, options);
  }

  socketReady(fn: () => void): void {
    const socket = this.connect();
    if (socket.connected) fn();
    else socket.once('connect', () => fn());
  }

  /** Tells the server which session this socket now has (null: none); waits for its answer. */
  async bind(sessionId: string | null): Promise<void> {
    this.session = sessionId ?? undefined;
    const socket = this.socket;
    if (!socket?.connected) return;
    try {
      await socket.timeout(BIND_TIMEOUT_MS).emitWithAck(SESSION_EVENT, sessionId);
    } catch {
      // A server without realtime never answers; the next handshake binds by cookie anyway.
    }
  }

  close(): void {
    this.reopening = false;
    this.socket?.disconnect?.();
    this.socket = undefined;
  }

  private cookieHeaders(): { extraHeaders?: Record<string, string> } {
    const cookie = this.jar?.header();
    return cookie === undefined ? {} : { extraHeaders: { cookie } };
  }
}

/** 'https://h:1/api' -> 'https://h:1'; what URL cannot read is used as it is. */
function originOf(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.origin === 'null' ? url : parsed.origin;
  } catch {
    return url;
  }
}
