import type { Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { Socket } from 'node:net';
import { SwapSet } from './swapSet.js';

/** What a drain left unfinished at its deadline. */
export interface DrainOutcome {
  /** Requests still unanswered at the deadline: their connections were closed under them. */
  cut: number;
  /** Connections still open at the deadline (those requests' and idle ones), closed then. */
  closed: number;
}

/** Options of {@link ConnectionDrain.drain}. */
export interface DrainOptions {
  /** Time for in-flight requests and open connections to finish; then everything left is closed. */
  drainMs: number;
  /**
   * Close idle keep-alive connections at once instead of waiting for their keep-alive timeout
   * (development: no proxy can be sending into them, and Ctrl-C should not wait).
   */
  closeIdle?: boolean;
  /** Runs once the requests in flight are answered, before waiting for idle connections (realtime closes there). */
  afterRequests?: () => Promise<void>;
}

/**
 * What wants to know when an answer is over (the access line, metrics), kept on the response under
 * {@link ANSWER_WATCHER}: the drain's one 'close' listener tells it, so a request does not add a
 * second listener (two make node keep them in an array and copy it at every emit).
 */
export interface AnswerWatcher {
  answerClosed(res: ServerResponse): void;
}

/** The response's property holding its {@link AnswerWatcher}. */
export const ANSWER_WATCHER: unique symbol = Symbol('svc.answerWatcher');

/** A response that may carry an {@link AnswerWatcher}. */
export type WatchedResponse = ServerResponse & { [ANSWER_WATCHER]?: AnswerWatcher | null };

/**
 * A 'close' listener for an answer outside a drain (a host application's server): tells the
 * response's watcher. One function for all responses (`this` is the response).
 */
export function tellAnswerWatcher(this: WatchedResponse): void {
  this[ANSWER_WATCHER]?.answerClosed(this);
}

/**
 * Shuts svc's own HTTP server down without cutting a request: it stops accepting, answers every
 * request in flight or still arriving on an open connection with `Connection: close` (so the
 * client, or a proxy such as nginx, knows not to send another on it), and lets idle keep-alive
 * connections end by their keep-alive timeout, as they would without a shutdown.
 *
 * Why not node's `server.close()`: it also closes idle keep-alive connections at once, and "idle"
 * there means "no request parsed yet": a proxy that just reused the connection for a POST has its
 * request in flight and gets a reset (nginx answers 502 and does not retry a POST). A client told
 * `Keep-Alive: timeout=5` (node's header) closes first, as a proxy configured below it does.
 */
export class ConnectionDrain {
  #draining = false;
  #drain: Promise<DrainOutcome> | undefined;
  /** Open connections of the server, upgraded ones (WebSockets) included: realtime ends those in `afterRequests`. */
  readonly #sockets = new SwapSet<Socket>();
  /** Answers not yet finished (not a `Set`: see SwapSet, the GC cost of one per request). */
  readonly #pending = new SwapSet<ServerResponse>();
  #changed: (() => void) | undefined;
  /**
   * A tracked answer's 'close' listener, one for all (`this` is the response): 'close' comes once
   * per answer, so `on` with it spares the closure and the wrapper `once` would make per request.
   */
  readonly #answerClosed: (this: WatchedResponse) => void;

  constructor(private readonly server: Server) {
    const pending = this.#pending;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the listener's own `this` is the response
    const drain = this;
    this.#answerClosed = function (this: WatchedResponse) {
      pending.delete(this);
      try {
        this[ANSWER_WATCHER]?.answerClosed(this);
      } finally {
        // A watcher that throws (a host's own logger) must not keep a drain waiting.
        drain.#changed?.();
      }
    };
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => {
        this.#sockets.delete(socket);
        this.#changed?.();
      });
    });
  }

  /** True from the start of the drain on. */
  get draining(): boolean {
    return this.#draining;
  }

  /**
   * Tracks one request of the server until its answer is finished (or its connection closed). The
   * response's {@link ANSWER_WATCHER} is set to null, "the drain tells": a watcher put there
   * afterwards is told at that moment.
   */
  track(res: WatchedResponse): void {
    if (this.#draining) res.setHeader('connection', 'close');
    this.#pending.add(res);
    res[ANSWER_WATCHER] = null;
    res.on('close', this.#answerClosed);
  }

  /** Drains once; later calls answer the same outcome. */
  drain(options: DrainOptions): Promise<DrainOutcome> {
    return (this.#drain ??= this.#run(options));
  }

  async #run(options: DrainOptions): Promise<DrainOutcome> {
    this.#draining = true;
    const deadline = Date.now() + options.drainMs;
    for (const res of this.#pending) if (!res.headersSent) res.setHeader('connection', 'close');
    // Stops accepting; node's http close would close idle connections too (see the class comment).
    if (this.server.listening) NetServer.prototype.close.call(this.server);
    if (options.closeIdle === true) this.server.closeIdleConnections();
    await this.#until(() => this.#pending.size === 0, deadline);
    await options.afterRequests?.();
    await this.#until(() => this.#pending.size === 0 && this.#sockets.size === 0, deadline);
    const outcome = { cut: this.#pending.size, closed: this.#sockets.size };
    for (const socket of this.#sockets) socket.destroy();
    // Clears node's connection-checking timer; the listening socket is closed already.
    this.server.close();
    return outcome;
  }

  /** Waits until `done()` holds, re-checked on every finished answer and closed connection, or the deadline. */
  async #until(done: () => boolean, deadline: number): Promise<void> {
    while (!done()) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#changed = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#changed = undefined;
    }
  }
}
