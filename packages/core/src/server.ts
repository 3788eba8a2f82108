import { etagOf } from './resources/conditional.js';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SvcError } from './errors.js';
import { bearerSessionId, requestSessionId, serializeCookie } from './http/cookies.js';
import { DEFAULT_BODY_LIMIT, readBody } from './http/readBody.js';
import { toErrorReply, writeInternalError, writeJsonText, writeReply } from './http/reply.js';
import { serveStatic } from './http/staticFiles.js';
import { createSvcHttpServer, resolveHttpLimits } from './http/svcHttpServer.js';
import { ProxyTrust } from './http/ProxyTrust.js';
import type { RequestClient } from './http/ProxyTrust.js';
import { ANSWER_WATCHER, tellAnswerWatcher } from './http/connectionDrain.js';
import type { AnswerWatcher, ConnectionDrain, DrainOutcome, WatchedResponse } from './http/connectionDrain.js';
import { createHealth, DEFAULT_HEALTH_PATHS } from './http/health.js';
import type { HealthOptions } from './http/health.js';
import { requestIdOf } from './http/requestId.js';
import { SvcServerResponse } from './http/svcResponse.js';
import { IsoClock } from './isoClock.js';
import { silentLogger } from './logger.js';
import { parseQueryString } from './query/parseQueryString.js';
import type { NowRequest, Resource, ResourceHost } from './resource.js';
import { isUserResource } from './resource.js';
import { Router } from './router.js';
import type { RouteMatch } from './router.js';
import type { SessionRecord } from './sessions.js';
import { SessionManager } from './sessions.js';
import type { Context, Reply, Session } from './types.js';
import { developmentRootRefusal, localRefusal, RootKeys } from './rootKeys.js';
import type { DevelopmentRootRefusal } from './rootKeys.js';
import { corsHeaders, corsOrigins } from './http/cors.js';
import { createRequestScope } from './requestScope.js';
import type { InternalRequest, ServerDrainOptions, SessionChangeListener, SvcServer, SvcServerOptions } from './serverTypes.js';


/**
 * What handle() learns of a request for its access line and metrics: who answered, whose session,
 * which plan. It is also what the server tells a resource's answerNow (NowRequest).
 */
interface RequestNote extends NowRequest {
  resource: string;
  uid: string | undefined;
  plainAnonymous: boolean;
}

/**
 * A request's note with what its access line and metrics need once the answer is over: one
 * object per request, told by the response's one 'close' listener (no closure per request).
 */
class AnswerNote implements RequestNote, AnswerWatcher {
  resource = 'none';
  uid: string | undefined = undefined;
  plainAnonymous = false;
  plan: string | undefined = undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly socket: Socket,
    readonly id: string,
    /** performance.now() at the request's arrival in the handler. */
    readonly started: number,
    /** The socket's bytes written before this answer (0 when no access line is written). */
    readonly sentBefore: number,
    private readonly closed: (note: AnswerNote, res: ServerResponse) => void,
  ) {}

  answerClosed(res: ServerResponse): void {
    this.closed(this, res);
  }
}

/** A longer path is cut in the access log (a request line may be 16 kB). */
const MAX_LOGGED_PATH = 1024;
const SESSIONS_COLLECTION = '_sessions';
const NO_BODY = { kind: 'none', value: undefined } as const;
const SWEEP_MS = 60 * 60 * 1000;

/** Connections the kernel may hold for the server before it accepts them (see listen). */
const LISTEN_BACKLOG = 4096;

/** Assembles an svc server from a store and resources. Nothing listens until `listen()`. */
export async function createServer(options: SvcServerOptions): Promise<SvcServer> {
  const env = options.env ?? 'development';
  const production = env === 'production';
  const logger = options.logger ?? silentLogger;
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  // Checked before anything starts: a wrong budget stops the start with nothing to undo.
  const httpLimits = options.httpServer === undefined ? resolveHttpLimits(options.http) : undefined;
  const overrideKey = options.methodOverrideKey ?? '_method';
  let router = new Router(options.resources);
  let resources: readonly Resource[] = options.resources;
  const allowedOrigins = corsOrigins(options.cors, production);
  let extra = new Map((options.routes ?? []).map((r) => [r.path, r]));
  const sessions = new SessionManager(options.store.collection(SESSIONS_COLLECTION), options.sessions);
  const rootKeys = new RootKeys(options.rootKeys ?? []);
  const proxies = new ProxyTrust(options.trustProxy);
  const clientOf = (req: IncomingMessage): RequestClient => proxies.clientOf(req);
  const refusedRoot = new Set<string>();
  await sessions.init();
  const sessionListeners = new Set<SessionChangeListener>();
  const host: ResourceHost = {
    env,
    logger,
    sessions,
    sessionCookie: (id, ctx) => sessionCookie(id, ctx.req),
    loginLimits: options.loginLimits,
    sessionChanged(sessionId, uid, previousSessionId) {
      for (const listener of sessionListeners) listener({ sessionId, uid, previousSessionId });
    },
    resourceAt: (path) => router.byPath(path),
    resources: () => resources,
    // Each resource's plan function asks it (a Collection's planAnswer): no shortcut is decided here.
    fastPaths: options.fastPaths !== false,
  };
  for (const resource of options.resources) await resource.init?.(host);
  const ownServer = options.httpServer === undefined;
  let draining = false;
  // In a host application the host's own routes may answer /healthz: svc serves only the paths it is given.
  const healthOptions: HealthOptions = ownServer ? { ...options.health } : { livePath: false, readyPath: false, ...options.health };
  const health = createHealth(healthOptions, options.store, () => draining);
  // An app's own resource at a health path keeps it (as a Deployd app's /dashboard does).
  const shadowed = (pathname: string): boolean => router.byPath(pathname) !== undefined;
  for (const path of [healthOptions.livePath ?? DEFAULT_HEALTH_PATHS.livePath, healthOptions.readyPath ?? DEFAULT_HEALTH_PATHS.readyPath]) {
    if (path !== false && shadowed(path)) logger.warn(`health: the app has a resource at ${path}, so the health check is not served there (app.json "health" moves it)`);
  }

  const sessionOf = (record: SessionRecord, isNew: boolean): Session => ({ id: record.id, uid: record.uid, path: record.path, isNew });

  async function loadMe(session: Session): Promise<Record<string, unknown> | undefined> {
    if (session.uid === undefined || session.path === undefined) return undefined;
    const users = router.byPath(session.path);
    if (users === undefined || !isUserResource(users)) return undefined;
    return (await users.findUser(session.uid)) ?? undefined;
  }

  /**
   * Answers a request. What is answered at once (health, OPTIONS, a plain GET answered by
   * answerNow) is answered synchronously and gives undefined; the rest gives the promise of its
   * answer. It may throw: the caller answers the error either way (see {@link handleAndCatch}).
   */
  function handle(req: IncomingMessage, res: ServerResponse, note: RequestNote): void | Promise<void> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q === -1 ? url : url.slice(0, q);
    const search = q === -1 ? '' : url.slice(q + 1);
    // Before the session, CORS and any log line: balancers ask every few seconds.
    if (health.owns(pathname) && (req.method === 'GET' || req.method === 'HEAD') && !shadowed(pathname)) {
      // Counted under its own path (a configured one: bounded), not with the 404s as 'none'.
      note.resource = pathname;
      return health.answer(pathname, req, res);
    }
    const cors = corsHeaders(req, allowedOrigins);
    if (cors) for (const [k, v] of cors) res.setHeader(k, v);
    if (req.method === 'OPTIONS') {
      note.resource = 'other';
      res.statusCode = 204;
      res.end();
      return;
    }
    const route = extra.get(pathname);
    if (route) {
      note.resource = route.path;
      return route.handle(req, res);
    }
    const match = router.match(pathname);
    if (match === undefined) return handleUnrouted(req, res, note, pathname);
    note.resource = match.resource.path;
    const sid = requestSessionId(req.headers);
    // A request without any session id (no cookie, no bearer token: a first visit, an API client
    // without a cookie jar) is a new anonymous visitor: its signed id is made now, as handleRouted
    // made it, and goes out with this answer, whichever way the answer is made. A returning
    // anonymous visitor (signed id) needs no store read: no await either.
    const fresh = sid === undefined ? sessions.createNow() : undefined;
    if (fresh !== undefined) sendSessionCookie(res, sessionCookie(fresh.id, req));
    const anonymous = fresh ?? sessions.anonymous(sid, req.socket);
    if (match.resource.answerNow !== undefined) {
      // What the server knows of the request; the resource's plan decides whether it answers at
      // once (an object by id): no context, no promise turns. Its ETag as Collection.handle gives
      // it (conditional.ts); If-None-Match goes the usual way.
      note.plainAnonymous =
        anonymous !== undefined && search === '' && (req.method === 'GET' || req.method === 'HEAD') && !hasBody(req) && rootHeader(req) === undefined && req.headers['if-none-match'] === undefined;
      const text = match.resource.answerNow(match.parts, note);
      if (text !== undefined) return writeJsonText(res, text, etagOf(text));
    }
    return handleRouted(req, res, note, match, search, sid, anonymous, fresh !== undefined);
  }

  /** A path no resource owns: a public/ file, or 404. */
  async function handleUnrouted(req: IncomingMessage, res: ServerResponse, note: RequestNote, pathname: string): Promise<void> {
    note.resource = 'public';
    if (options.publicDir && (await serveStatic(options.publicDir, pathname, req, res))) return;
    note.resource = 'none';
    throw new SvcError('NOT_FOUND', `no resource at ${pathname}`);
  }

  /** handle() for a resource's request that was not answered at once: session, body, context, the resource. */
  async function handleRouted(
    req: IncomingMessage,
    res: ServerResponse,
    note: RequestNote,
    match: RouteMatch,
    search: string,
    sid: string | undefined,
    anonymous: SessionRecord | undefined,
    fresh: boolean,
  ): Promise<void> {
    // Who sent it, once for the whole request (the fast path above needs no client).
    const client = clientOf(req);
    let record = anonymous ?? (await sessions.load(sid, req.socket));
    // A visitor without any id got its new one (and its cookie) in handle().
    let isNew = fresh;
    if (record === null) {
      record = await sessions.create();
      isNew = true;
      // A client that sends its session as a bearer token keeps it there: no cookie beside it.
      if (bearerSessionId(req.headers) === undefined) sendSessionCookie(res, sessionCookie(record.id, req));
    }
    const session = sessionOf(record, isNew);
    note.uid = session.uid;
    const query = parseQueryString(search);
    const parsed = match.resource.rawBody || !hasBody(req) || match.resource.streamsBody?.(req, match.parts) === true ? NO_BODY : await readBody(req, bodyLimit);
    let method = req.method ?? 'GET';
    if (method === 'HEAD') method = 'GET';
    const override = overrideOf(query, parsed.value, overrideKey);
    if (override !== undefined && req.method === 'POST') method = override;
    const ctx: Context = {
      method,
      originalMethod: req.method ?? 'GET',
      url: match.rest,
      parts: match.parts,
      query,
      body: parsed.value,
      bodyKind: parsed.kind,
      headers: req.headers,
      session,
      me: undefined,
      isRoot: rootOf(req, client),
      internal: false,
      scope: createRequestScope(client.address, recursionLimitOf(query), res),
      req,
      res,
    };
    if (session.uid !== undefined) ctx.me = (await loadMe(session)) as Context['me'];
    const reply = await match.resource.handle(ctx);
    if (reply) {
      note.plan = reply.plan;
      writeReply(res, reply, logger);
    }
  }

  function isRootRequest(req: IncomingMessage, client: RequestClient): boolean {
    const key = rootHeader(req);
    if (key === undefined || key === '') return false;
    if (production) return rootKeys.isRoot(key, true, client.peer);
    return developmentRefusal(req, client) === undefined;
  }

  /**
   * A resource request's root flag. In development a key that is not made root is answered 403
   * with the reason rather than served as anyone's request: a developer's tool that silently
   * lost root would read and write as a visitor (production's wrong key stays a visitor's, as in
   * Deployd, and root-only actions answer their own 401/403).
   */
  function rootOf(req: IncomingMessage, client: RequestClient): boolean {
    const key = rootHeader(req);
    if (key === undefined || key === '') return false;
    if (production) return rootKeys.isRoot(key, true, client.peer);
    const refusal = developmentRefusal(req, client);
    if (refusal === undefined) return true;
    // Once per reason: a proxy in front of a development server sends every request this way.
    if (!refusedRoot.has(refusal.kind)) {
      refusedRoot.add(refusal.kind);
      logger.warn(`development: a request with svc-ssh-key from ${client.address} is not root: ${refusal.why}. A development server must never be reachable by others; behind a proxy, run with --env production and a root key (svc keygen)`, { address: client.address });
    }
    throw new SvcError('FORBIDDEN', `svc-ssh-key refused: ${refusal.why}. Development gives root only to programs on this machine that reach svc directly (docs/deploying.md)`);
  }

  function developmentRefusal(req: IncomingMessage, client: RequestClient): DevelopmentRootRefusal | undefined {
    return developmentRootRefusal(req, client) ?? localRefusal(client.peer, { host: req.headers.host, origin: req.headers.origin });
  }

  function sessionCookie(id: string | null, req: IncomingMessage | undefined): string {
    const secure = options.crossSiteCookies === true || (req !== undefined && clientOf(req).secure);
    return serializeCookie('sid', id ?? '', {
      httpOnly: true,
      secure,
      sameSite: options.crossSiteCookies ? 'None' : 'Lax',
      maxAgeSeconds: id === null ? 0 : sessions.idleSeconds,
    });
  }

  const observe = options.observe;
  /**
   * Answers a request that failed. Never throws: it runs in handleAndCatch's catch and in a
   * promise's rejection handler, where a throw would end the process (an unhandled rejection).
   */
  const failed = (req: IncomingMessage, res: ServerResponse, err: unknown, id: string): void => {
    let reply: Reply;
    try {
      // The path only: a query string may carry tokens (the access line has the same id).
      reply = toErrorReply(err, { production, logger, where: `${req.method} ${pathOf(req.url ?? '/')} from ${clientOf(req).address} (request ${id})` });
    } catch {
      // A value thrown whose fields throw when read, or a logger of the host's that throws: the
      // failure cannot be described, only answered.
      writeInternalError(res);
      return;
    }
    writeReply(res, reply, logger);
  };
  // The access line's time text: the wall clock read once per millisecond (IsoClock).
  const clock = new IsoClock();
  // What handle() notes for nobody (no access log, no metrics): written, never read.
  const unnoted: RequestNote = { resource: 'none', uid: undefined, plainAnonymous: false, plan: undefined };
  // Decided once: a logger without access lines (tests, programs) costs nothing per request.
  const writeAccess = options.accessLog === false ? undefined : logger.access?.bind(logger);
  const logHealth = options.accessLog !== false && options.accessLog?.health === true;

  /** The access line and the metrics sample of an answer that is over (sent, or its connection gone). */
  const answerClosed = (note: AnswerNote, res: ServerResponse): void => {
    const req = note.req;
    if (writeAccess !== undefined) {
      const path = pathOf(req.url ?? '/');
      if (logHealth || !health.owns(path)) {
        const now = performance.now();
        writeAccess({
          time: clock.now(now),
          id: note.id,
          method: req.method ?? 'GET',
          path: path.length > MAX_LOGGED_PATH ? `${path.slice(0, MAX_LOGGED_PATH)}...` : path,
          status: res.headersSent ? res.statusCode : 0,
          ms: Math.round((now - note.started) * 10) / 10,
          uid: note.uid,
          client: proxies.addressOf(req),
          bytes: note.socket.bytesWritten - note.sentBefore,
          aborted: !res.writableFinished,
          plan: note.plan,
        });
      }
    }
    if (observe !== undefined) {
      // 'close' follows 'finish', and comes alone when the client left first: one sample either way.
      observe({ resource: note.resource, method: methodLabel(req.method), status: res.writableFinished ? res.statusCode : 0, seconds: (performance.now() - note.started) / 1000, plan: note.plan });
    }
  };

  const handler = (req: IncomingMessage, res: WatchedResponse): void => {
    const id = requestIdOf(req.headers['x-request-id']);
    sendRequestId(res, id);
    // svc's own server marks its answers itself (ConnectionDrain); a host's server does not.
    if (draining && !ownServer) res.setHeader('connection', 'close');
    if (writeAccess === undefined && observe === undefined) {
      handleAndCatch(req, res, unnoted, id);
      return;
    }
    const socket = req.socket;
    const note = new AnswerNote(req, socket, id, performance.now(), writeAccess === undefined ? 0 : socket.bytesWritten, answerClosed);
    // svc's own server's drain has a 'close' listener on every answer already (null here): it tells the note.
    const drainTells = res[ANSWER_WATCHER] === null;
    res[ANSWER_WATCHER] = note;
    if (!drainTells) res.on('close', tellAnswerWatcher);
    handleAndCatch(req, res, note, id);
  };

  /** handle(), its error answered whether it threw or its promise failed; no promise at all for what is answered at once. */
  function handleAndCatch(req: IncomingMessage, res: ServerResponse, note: RequestNote, id: string): void {
    let pending: void | Promise<void>;
    try {
      pending = handle(req, res, note);
    } catch (err) {
      failed(req, res, err, id);
      return;
    }
    // A route's handler may give anything (`res.end()` gives the response): only a promise is waited for.
    if (typeof (pending as Promise<void> | undefined)?.then === 'function') Promise.resolve(pending).catch((err: unknown) => failed(req, res, err, id));
  }

  async function request(input: InternalRequest): Promise<Reply> {
    const match = router.match(input.path);
    if (match === undefined) return { status: 404, body: new SvcError('NOT_FOUND', `no resource at ${input.path}`).toJSON() };
    const parent = input.parent;
    const ctx: Context = {
      method: input.method.toUpperCase(),
      originalMethod: input.method.toUpperCase(),
      url: match.rest,
      parts: match.parts,
      query: { ...(input.query ?? {}) },
      body: input.body,
      bodyKind: input.body === undefined ? 'none' : 'json',
      headers: parent.headers,
      session: parent.session,
      me: parent.me,
      isRoot: parent.isRoot,
      internal: true,
      // One scope for the whole tree of calls, as Deployd's one stack per request.
      scope: parent.scope,
    };
    try {
      return (await match.resource.handle(ctx)) ?? { status: 204 };
    } catch (err) {
      return toErrorReply(err, { production, logger, where: `internal ${input.method} ${input.path}` });
    }
  }

  /** The requests svc answers in a host application: its routes and resources. */
  const owns = (pathname: string): boolean => extra.has(pathname) || router.match(pathname) !== undefined || health.owns(pathname);
  const middleware = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q === -1 ? url : url.slice(0, q);
    if (owns(pathname)) return handler(req, res);
    const pass = (): void => {
      if (next) next();
      else writeReply(res, toErrorReply(new SvcError('NOT_FOUND', `no resource at ${pathname}`), { production, logger, where: `${req.method} ${url}` }), logger);
    };
    if (!options.publicDir || (req.method !== 'GET' && req.method !== 'HEAD')) return pass();
    serveStatic(options.publicDir, pathname, req, res).then(
      (served) => {
        if (!served) pass();
      },
      (err: unknown) => (next ? next(err) : writeReply(res, toErrorReply(err, { production, logger, where: `${req.method} ${url}` }), logger)),
    );
  };

  const { server: httpServer, drain: drainer }: { server: Server; drain: ConnectionDrain | undefined } = options.httpServer
    ? { server: options.httpServer, drain: undefined }
    : createSvcHttpServer(handler, { limits: httpLimits, logger, sharedPeer: (peer) => proxies.listsPeer(peer) });
  let drained: Promise<DrainOutcome> | undefined;
  function drain(drainOptions: ServerDrainOptions = {}): Promise<DrainOutcome> {
    draining = true;
    const afterRequests = drainOptions.afterRequests ?? (() => Promise.resolve());
    return (drained ??= drainer
      ? drainer.drain({ drainMs: drainOptions.drainMs ?? httpLimits?.drainMs ?? 0, closeIdle: drainOptions.closeIdle === true, afterRequests })
      : afterRequests().then(() => ({ cut: 0, closed: 0 })));
  }
  const sweeper = setInterval(() => {
    sessions.sweep().catch((err: unknown) => logger.warn('session sweep failed', { error: err }));
  }, SWEEP_MS);
  sweeper.unref();

  return {
    handler,
    middleware,
    httpServer,
    sessions,
    get resources() {
      return resources;
    },
    async replaceResources(next, routes) {
      // While the new resources start, `resourceAt` answers from them (a webhook attaching to the
      // collection it watches must find the one about to be served); afterwards, as for the rest.
      let starting: Router | undefined = new Router(next);
      const nextHost: ResourceHost = { ...host, resourceAt: (path) => (starting ?? router).byPath(path) };
      try {
        for (const resource of next) await resource.init?.(nextHost);
      } finally {
        starting = undefined;
      }
      // One synchronous swap: a request routes entirely by the old set or entirely by the new one.
      const previous = resources;
      resources = next;
      router = new Router(next);
      if (routes !== undefined) extra = new Map(routes.map((r) => [r.path, r]));
      return previous;
    },
    env,
    request,
    clientOf,
    get draining() {
      return draining;
    },
    drain,
    isRootRequest: (req) => isRootRequest(req, clientOf(req)),
    onSessionChange(listener) {
      sessionListeners.add(listener);
      return () => sessionListeners.delete(listener);
    },
    listen(port, hostname) {
      if (!ownServer) return Promise.reject(new Error('svc runs on the host application\'s server: listen on that one'));
      return new Promise((resolveListen, reject) => {
        httpServer.once('error', reject);
        // A burst of connections waits in the kernel's queue instead of overflowing node's default
        // of 511 (the kernel caps it at net.core.somaxconn): an overflowed handshake leaves the
        // client a connection the server never sees until a retransmission, seconds later.
        httpServer.listen({ port, host: hostname, backlog: LISTEN_BACKLOG }, () => {
          httpServer.off('error', reject);
          resolveListen((httpServer.address() as AddressInfo).port);
        });
      });
    },
    async close() {
      clearInterval(sweeper);
      // Called without a drain first (tests, programs): idle connections close at once.
      await drain({ closeIdle: true });
      for (const resource of resources) await resource.close?.();
      await options.store.close();
    },
  };
}

/**
 * Sends X-Request-Id with the answer: svc's own server writes it with the answer's headers (one
 * object, not node's header by header: SvcServerResponse); a host application's server gets it set now.
 */
function sendRequestId(res: ServerResponse, id: string): void {
  if (res instanceof SvcServerResponse) res.requestId = id;
  else res.setHeader('x-request-id', id);
}

/**
 * Sends a new visitor's session cookie with the answer: svc's own server writes it with the
 * answer's headers (SvcServerResponse.sendSessionCookie); a host application's server gets it set now.
 */
function sendSessionCookie(res: ServerResponse, cookie: string): void {
  if (res instanceof SvcServerResponse) res.sendSessionCookie(cookie);
  else res.setHeader('set-cookie', cookie);
}

function overrideOf(query: Record<string, unknown>, body: unknown, key: string): string | undefined {
  let value = query[key];
  if (value !== undefined) delete query[key];
  if (value === undefined && typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    value = b[key];
    if (value !== undefined) delete b[key];
  }
  if (typeof value !== 'string') return undefined;
  const method = value.toUpperCase();
  if (method !== 'GET' && method !== 'POST' && method !== 'PUT' && method !== 'DELETE') {
    throw new SvcError('BAD_REQUEST', `${key} must be GET, POST, PUT or DELETE`);
  }
  return method;
}

/** Whether a request has a body to read (readBody answers no body otherwise, the same way). */
function hasBody(req: IncomingMessage): boolean {
  const declared = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (declared !== undefined && declared !== '0');
}

const METHOD_LABELS = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);

/** A request's method as a metrics label: one of a fixed few. */
function methodLabel(method: string | undefined): string {
  return method !== undefined && METHOD_LABELS.has(method) ? method : 'other';
}


function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

function rootHeader(req: IncomingMessage): string | undefined {
  const value = req.headers['svc-ssh-key'] ?? req.headers['dpd-ssh-key'];
  return Array.isArray(value) ? value[0] : value;
}


/** A query's `$limitRecursion`, when it is a whole number >= 0. */
export function recursionLimitOf(query: Record<string, unknown> | undefined): number | undefined {
  const raw = query?.$limitRecursion;
  if (raw === undefined) return undefined;
  const value = Number(raw);
  return Number.isInteger(value) && value >= 0 ? value : undefined;
}
