import { io } from 'socket.io-client';
import type { Socket } from 'socket.io-client';
import type { CookieJar } from './cookieJar.js';

/** The message the server binds a socket to a session with (see @svc/realtime). */
const SESSION_EVENT = 'svc:session';
const BIND_TIMEOUT_MS = 3000;

type Handler = (...args: unknown[]) => void;

/**
 * The client's Socket.IO connection, opened on first use (or at once for /svc.js). Sockets are
 * bound to sessions by the cookies of their handshake; after a login over HTTP the socket is told
 * its new session, so user-targeted messages reach it without reconnecting.
 */
export class RealtimeLink {
  private socket: Socket | undefined;
  /** The session a login answered, re-sent after each reconnect. */
  private session: string | undefined;

  constructor(
    private readonly baseUrl: string,
    private readonly jar: CookieJar | undefined,
  ) {}

  /** The socket, connecting it when it is not yet. */
  connect(): Socket {
    if (this.socket) return this.socket;
    const options = { withCredentials: true, autoConnect: true, ...this.cookieHeaders() };
    const socket = this.baseUrl === '' ? io(options) : io(this.baseUrl, options);
    socket.on('connect', () => {
      if (this.session !== undefined) socket.emit(SESSION_EVENT, this.session);
    });
    // A reconnect is a new handshake: in Node it must carry the jar's current cookies.
    socket.io.on('reconnect_attempt', () => {
      socket.io.opts.extraHeaders = this.cookieHeaders().extraHeaders ?? {};
    });
    this.socket = socket;
    return socket;
  }

  get current(): Socket | undefined {
    return this.socket;
  }

  on(message: string, fn: Handler): void {
    this.connect().on(message, fn);
  }

  off(message: string, fn?: Handler): void {
    if (fn === undefined) this.socket?.off(message);
    else this.socket?.off(message, fn);
  }

  once(message: string, fn: Handler): void {
    this.connect().once(message, fn);
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
    this.socket?.disconnect();
    this.socket = undefined;
  }

  private cookieHeaders(): { extraHeaders?: Record<string, string> } {
    const cookie = this.jar?.header();
    return cookie === undefined ? {} : { extraHeaders: { cookie } };
  }
}
