import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { RequestClient, TrustProxySetting } from './http/ProxyTrust.js';
import type { HttpLimits } from './http/svcHttpServer.js';
import type { DrainOutcome } from './http/connectionDrain.js';
import type { HealthOptions } from './http/health.js';
import type { Logger } from './logger.js';
import type { Resource } from './resource.js';
import type { LoginLimitsFactory } from './resources/loginLimiter.js';
import type { SessionManager, SessionManagerOptions } from './sessions.js';
import type { Store } from './store/Store.js';
import type { Context, Reply } from './types.js';
import type { CorsOptions } from './http/cors.js';

// The public types of createServer (server.ts): its options and the server it answers.

/** A route served outside the resources (such as /svc.js). */
export interface ExtraRoute {
  path: string;
  handle(req: IncomingMessage, res: ServerResponse): void | Promise<void>;
}

/** Options of {@link createServer}. */
export interface SvcServerOptions {
  store: Store;
  resources: readonly Resource[];
  /** Default 'development'. */
  env?: 'development' | 'production';
  /** Folder served at / for paths no resource owns. */
  publicDir?: string;
  /** Largest accepted request body in bytes; default 1 MB. */
  bodyLimit?: number;
  logger?: Logger;
  sessions?: SessionManagerOptions;
  /**
   * Root keys accepted in production (`.svc/keys.json`): a list, or a function asked at every
   * production root check, answering the same array while the keys are unchanged.
   */
  rootKeys?: readonly string[] | (() => readonly string[]);
  /** Name of the method-override key in the query or JSON body; default `_method`. */
  methodOverrideKey?: string;
  cors?: CorsOptions;
  /** Cookie settings for cross-site use (SameSite=None; Secure). */
  crossSiteCookies?: boolean;
  routes?: readonly ExtraRoute[];
  /** Login limits shared with the app's other processes; default: counted in memory per process. */
  loginLimits?: LoginLimitsFactory;
  /**
   * A host application's HTTP server to live in (express, node:http): svc adds no request
   * listener to it (the host routes requests to `middleware`), never listens on it and never
   * closes it. Default: a server of svc's own.
   */
  httpServer?: Server;
  /** Timeouts and connection caps of svc's own server (not applied to a host's `httpServer`). */
  http?: HttpLimits;
  /**
   * The reverse proxies in front of svc (app.json `trustProxy`): their `X-Forwarded-For` /
   * `Forwarded` and `X-Forwarded-Proto` name the client. Default: none (the socket's peer is the client).
   */
  trustProxy?: TrustProxySetting;
  /** Liveness and readiness paths and checks (default /healthz and /readyz). */
  health?: HealthOptions;
  /** Called once per request of the handler when its answer is done (metrics); keep it cheap. */
  observe?: RequestObserver;
  /**
   * The access log: one `logger.access` line per answered request (app.json `log`). Default on
   * when the logger writes access lines, health checks left out; `false` turns it off.
   */
  accessLog?: false | AccessLogOptions;
  /**
   * false turns every shortcut of the read side off (app.json `fastPaths`): each request takes
   * the plain path (compile, store find, On Get, finish). The answers are the same bytes either
   * way; this exists to prove it (the differential suite) and to rule shortcuts out when
   * diagnosing. Default true.
   */
  fastPaths?: boolean;
}

/** Options of the access log ({@link SvcServerOptions.accessLog}). */
export interface AccessLogOptions {
  /** Log the health checks too (balancers ask every few seconds). Default false. */
  health?: boolean;
}

/** Options of {@link SvcServer.drain}. */
export interface ServerDrainOptions {
  /** Default: app.json `http.drainMs` (10,000). */
  drainMs?: number;
  /** Close idle keep-alive connections at once (development) instead of letting them time out. */
  closeIdle?: boolean;
  /** Runs once the requests in flight are answered (realtime closes its sockets there). */
  afterRequests?: () => Promise<void>;
}

/**
 * One answered request, for metrics. Every field comes from a bounded set, whatever the client
 * sends: a label made of the raw URL would let anyone grow the series without end.
 */
export interface RequestSample {
  /**
   * Who answered: the resource's path ('/todos'), an extra route's path ('/svc.js'), 'public' (a
   * file of publicDir), 'none' (nothing there, or refused before routing) or 'other' (a CORS preflight).
   */
  resource: string;
  /** GET, POST, PUT, DELETE, PATCH, HEAD, OPTIONS, or 'other'. */
  method: string;
  /** The status sent; 0 when the connection closed before the answer was complete. */
  status: number;
  /** From the request's arrival in the handler to its answer's end (or the connection's close). */
  seconds: number;
  /** Which way a Collection answered a GET (AnswerPlan: 'objects', 'storedText', ...); undefined for anything else. */
  plan: string | undefined;
}

/** Receives a {@link RequestSample} per request. */
export type RequestObserver = (sample: RequestSample) => void;

/** A session's user changed: login (uid set, maybe under a new session id) or logout. */
export interface SessionChange {
  sessionId: string;
  uid: string | undefined;
  previousSessionId?: string | undefined;
}

/** Listens to logins and logouts (realtime keeps its rooms current with it). */
export type SessionChangeListener = (change: SessionChange) => void;

/** An internal request sent by a script through the svc client. */
export interface InternalRequest {
  method: string;
  /** Path with its leading slash: '/todos/abc'. */
  path: string;
  query?: Record<string, unknown>;
  body?: unknown;
  /** The request the script runs in; its session, user and root flag carry over. */
  parent: Context;
}

/** A running svc server. */
export interface SvcServer {
  /** The node:http request listener. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /**
   * For a host application (express, connect, node:http): answers the requests svc owns (its
   * resources, /svc.js, then public/ files) and passes any other to `next` (404 without one).
   */
  readonly middleware: (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;
  readonly httpServer: Server;
  readonly sessions: SessionManager;
  readonly resources: readonly Resource[];
  readonly env: 'development' | 'production';
  /** Calls `listener` on every login and logout; answers a function that unsubscribes. */
  onSessionChange(listener: SessionChangeListener): () => void;
  /**
   * Who sent a request (address, whether through a proxy, whether over TLS): computed once per
   * request and used by everything that counts or trusts clients (login limits, realtime caps,
   * development root, secure cookies).
   */
  clientOf(req: IncomingMessage): RequestClient;
  /**
   * Whether a request carries a valid root key (svc-ssh-key), by the same rules as the resources'
   * `isRoot` (in development: only from this machine, never through a proxy). For extra routes.
   */
  isRootRequest(req: IncomingMessage): boolean;
  /** Starts listening; answers the bound port. */
  listen(port: number, host?: string): Promise<number>;
  /**
   * Serves another set of resources (and extra routes) from now on, without a restart: requests
   * under way finish on the set they started with. Answers the previous set, for the caller to
   * close once they are done (development reload).
   */
  replaceResources(resources: readonly Resource[], routes?: readonly ExtraRoute[]): Promise<readonly Resource[]>;
  /** Routes a script's request through the same resources, with `internal` set. */
  request(input: InternalRequest): Promise<Reply>;
  /** True once a shutdown began: readiness answers 503 `draining`. */
  readonly draining: boolean;
  /**
   * The first step of a shutdown: readiness fails, svc's own server stops accepting, requests in
   * flight and those still arriving on open connections are answered with `Connection: close`,
   * idle keep-alive connections end by their timeout; what is left at `drainMs` is closed.
   * On a host application's server only readiness and `Connection: close` apply. Answers what
   * was cut; later calls answer the same.
   */
  drain(options?: ServerDrainOptions): Promise<DrainOutcome>;
  /** Drains (when not done yet), then closes resources and the store. */
  close(): Promise<void>;
}
