import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../logger.js';
import { bodyUnread } from './readBody.js';
import { ConnectionDrain } from './connectionDrain.js';
import { SvcServerResponse } from './svcResponse.js';

/**
 * What one client may cost svc's own HTTP server (app.json `"http"`). Every timeout closes the
 * connection; every cap refuses the connection at once (closed without an answer).
 */
export interface HttpLimits {
  /**
   * Time to send a request's headers, from its first byte (default 15 s). A new connection that
   * sends nothing is closed after it too; so is one whose headers trickle in (slowloris).
   */
  headersTimeoutMs?: number;
  /** Time to send a whole request, headers and body (default 60 s; at least `headersTimeoutMs`). */
  requestTimeoutMs?: number;
  /**
   * How long a keep-alive connection waits idle for its next request (default 5 s; node closes it
   * 1 s later). Behind a load balancer that keeps connections open, set it above the balancer's
   * idle timeout (65000 behind one of 60 s).
   */
  keepAliveTimeoutMs?: number;
  /** Open connections in all, WebSockets included (default 10,000). */
  maxConnections?: number;
  /**
   * Open connections from one client address, WebSockets included (default 256; 0: no such cap).
   * Counted by the socket's peer, before any request says who the client is: behind a reverse
   * proxy every connection comes from the proxy, so peers that app.json `trustProxy` lists by
   * address are not held to it (only to `maxConnections`; the proxy limits its own clients). With
   * a hop count svc cannot tell the proxy by its address: raise this cap or set 0 there.
   */
  maxConnectionsPerAddress?: number;
  /**
   * At shutdown (SIGTERM), how long requests in flight and open keep-alive connections get to
   * finish before they are closed, ms (default 10,000; 0: closed at once). Above
   * `keepAliveTimeoutMs` + 1 s, idle connections end by themselves, never under a proxy's request.
   */
  drainMs?: number;
}

/** The defaults of {@link HttpLimits}. */
export const DEFAULT_HTTP_LIMITS: Readonly<Required<HttpLimits>> = Object.freeze({
  headersTimeoutMs: 15_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 10_000,
  maxConnectionsPerAddress: 256,
  drainMs: 10_000,
});

/** Limits that may be 0. */
const ZERO_ALLOWED: ReadonlySet<keyof HttpLimits> = new Set(['maxConnectionsPerAddress', 'drainMs']);

/** svc's own HTTP server and how it shuts down without cutting requests. */
export interface SvcHttpServer {
  server: Server;
  drain: ConnectionDrain;
}

/**
 * A connection's mark while its first request has not come (its idle timer is the header
 * budget's): a property of the socket, not a WeakSet that every request of a kept connection
 * looked up (bench/RESULTS.md, "Issue 39: GET by id and POST, round 6").
 */
const AWAITING_FIRST_REQUEST: unique symbol = Symbol('svc.awaitingFirstRequest');
type AwaitedSocket = Socket & { [AWAITING_FIRST_REQUEST]?: boolean };

/** Refusals from one address are logged once in this time, with how many there were. */
const LOG_EVERY_MS = 60_000;
/** Addresses whose refusals are being counted for the next log line; beyond it, counted as one. */
const LOGGED_ADDRESSES = 10_000;

/**
 * node:http with svc's connection budgets. node's own `headersTimeout` and `requestTimeout` only
 * watch a connection once a request has begun, checked every `connectionsCheckingInterval`
 * (30 s by default, so a 15 s budget could last 45 s): the interval is shortened here, and a
 * connection that never sends a byte is closed by an idle timer of the header budget, cleared
 * when its first request arrives. Upgraded sockets (WebSocket) leave node's timeout handling
 * (node drops its listener; ws clears the timer) but stay counted by both caps.
 */
export function createSvcHttpServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  options: { limits?: HttpLimits | undefined; logger: Logger; sharedPeer?: (address: string) => boolean },
): SvcHttpServer {
  const limits = resolveHttpLimits(options.limits);
  const server = createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
    // Sends X-Request-Id with the answer's own headers (see SvcServerResponse).
    ServerResponse: SvcServerResponse,
  });
  const drain = new ConnectionDrain(server);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    // From here on node's timers apply: request (body), keep-alive idle, and headers again.
    const socket = req.socket as AwaitedSocket;
    if (socket[AWAITING_FIRST_REQUEST] === true) {
      socket[AWAITING_FIRST_REQUEST] = false;
      socket.setTimeout(0);
    }
    // An answer written past svc's writeReply (static files, extra routes) to a body nobody read:
    // node would read and discard all of it on a kept connection; close it instead.
    if (bodyUnread(req)) res.on('finish', closeWhenBodyUnread);
    drain.track(res);
    handler(req, res);
  });
  server.maxConnections = limits.maxConnections;
  const refusals = refusalLog(options.logger);
  const perAddress = new Map<string, number>();
  const cap = limits.maxConnectionsPerAddress;
  const sharedPeer = options.sharedPeer ?? (() => false);
  server.on('connection', (socket: Socket) => {
    const address = clientAddress(socket.remoteAddress);
    // Closed before it was handed over: nothing to count.
    if (address === undefined) return void socket.destroy();
    const open = (perAddress.get(address) ?? 0) + 1;
    if (cap > 0 && open > cap && !sharedPeer(address)) {
      socket.destroy();
      refusals(address, `${cap} connections are open from it (app.json http.maxConnectionsPerAddress)`);
      return;
    }
    perAddress.set(address, open);
    socket.once('close', () => {
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left === 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
    // node's header timer starts at a request's first byte; this one covers the silence before.
    (socket as AwaitedSocket)[AWAITING_FIRST_REQUEST] = true;
    socket.setTimeout(limits.headersTimeoutMs);
  });
  server.on('drop', (data) => {
    refusals(clientAddress(data?.remoteAddress) ?? 'unknown', `${limits.maxConnections} connections are open in all (app.json http.maxConnections)`);
  });
  return { server, drain };
}

/** Checks the limits and fills in the defaults. */
export function resolveHttpLimits(given: HttpLimits | undefined): Required<HttpLimits> {
  const limits = { ...DEFAULT_HTTP_LIMITS };
  for (const key of Object.keys(DEFAULT_HTTP_LIMITS) as (keyof HttpLimits)[]) {
    const value = given?.[key];
    if (value === undefined) continue;
    const min = ZERO_ALLOWED.has(key) ? 0 : 1;
    if (!Number.isInteger(value) || value < min) throw new Error(`http.${key} must be a whole number >= ${min}, not ${String(value)}`);
    limits[key] = value;
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new Error(`http.headersTimeoutMs (${limits.headersTimeoutMs}) must not exceed http.requestTimeoutMs (${limits.requestTimeoutMs}): the headers are part of the request`);
  }
  return limits;
}

/** A socket's peer address as one client: '::ffff:127.0.0.1' (IPv4 on a dual-stack socket) is '127.0.0.1'. */
export function clientAddress(remote: string | undefined): string | undefined {
  if (remote === undefined || remote === '') return undefined;
  const lower = remote.toLowerCase();
  return lower.startsWith('::ffff:') && lower.includes('.') ? lower.slice(7) : lower;
}

/**
 * The 'finish' listener of an answer to a request whose body had not all arrived when it came
 * (every POST with a body): one function for all (`this` is the response), added with `on`
 * ('finish' comes once): no closure and no `once` wrapper per request.
 */
function closeWhenBodyUnread(this: ServerResponse): void {
  if (bodyUnread(this.req)) this.req.socket.destroySoon();
}

/**
 * Logs refused connections once per address per minute, with the count since the last line, so
 * that a flood of refusals does not become a flood of log lines.
 */
function refusalLog(logger: Logger): (address: string, why: string) => void {
  const counted = new Map<string, { since: number; refused: number }>();
  return (address, why) => {
    const now = Date.now();
    if (!counted.has(address) && counted.size >= LOGGED_ADDRESSES) {
      for (const [a, entry] of counted) if (now - entry.since >= LOG_EVERY_MS) counted.delete(a);
      // Still full: many addresses at once; they share one line.
      if (counted.size >= LOGGED_ADDRESSES) address = 'many addresses';
    }
    const entry = counted.get(address);
    if (entry !== undefined && now - entry.since < LOG_EVERY_MS) {
      entry.refused++;
      return;
    }
    const earlier = entry !== undefined && entry.refused > 0 ? ` (${entry.refused} more refused in the minute before)` : '';
    logger.warn(`refused a connection from ${address}: ${why}${earlier}`, { address });
    counted.set(address, { since: now, refused: 0 });
  };
}
