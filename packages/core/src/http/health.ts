import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Store } from '../store/Store.js';

/** Health checks (app.json `"health"`): for balancers, orchestrators and uptime monitors. */
export interface HealthOptions {
  /**
   * Liveness: answers 200 while the process answers at all (default '/healthz' on svc's own
   * server; none in a host application unless given); false: not served.
   */
  livePath?: string | false;
  /**
   * Readiness: 200 when the store answers, the checks pass and the server is not shutting down,
   * else 503 with a reason code (default '/readyz' on svc's own server; none in a host
   * application unless given); false: not served.
   */
  readyPath?: string | false;
  /**
   * More readiness checks, each cheap and synchronous (run on every readiness request): a reason
   * code (`"scripts"`) when not ready, undefined when ready.
   */
  checks?: readonly (() => string | undefined)[];
  /**
   * Ready, but not everything is served (a collection whose migration failed): answers what to say
   * (`{reason: "migration", collections: [...]}`), and readiness answers 200 with `"status":
   * "degraded"` and it, so that a balancer keeps sending the rest of the app's requests while a
   * monitor reading the body sees the fault. Cheap and synchronous; undefined when all is served.
   */
  degraded?: () => Readonly<Record<string, unknown>> | undefined;
}

/** The defaults of {@link HealthOptions}' paths. */
export const DEFAULT_HEALTH_PATHS = Object.freeze({ livePath: '/healthz', readyPath: '/readyz' });

/** A store's answer is reused this long: a flood of readiness requests costs the store one ping a second. */
const STORE_STATE_MS = 1000;
/** A ping that takes longer is a failed one. */
const PING_TIMEOUT_MS = 1000;

const HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } as const;
const OK = '{"status":"ok"}';

/** Answers the health paths; everything else is the caller's. */
export interface Health {
  /** True when `pathname` is one of the health paths (checked before anything else per request). */
  owns(pathname: string): boolean;
  /** Answers a health request (GET or HEAD); no session, no log line. */
  answer(pathname: string, req: IncomingMessage, res: ServerResponse): void;
}

/**
 * Liveness and readiness. Neither reads a session or a cookie, nor says anything but ok or a
 * reason code (`draining`, `store`, or a check's own): no store URL, version or error text for an
 * anonymous caller to collect.
 */
export function createHealth(options: HealthOptions | undefined, store: Store, draining: () => boolean): Health {
  const livePath = options?.livePath ?? DEFAULT_HEALTH_PATHS.livePath;
  const readyPath = options?.readyPath ?? DEFAULT_HEALTH_PATHS.readyPath;
  const checks = options?.checks ?? [];
  let known: { at: number; reason: string | undefined } | undefined;
  let asking: Promise<string | undefined> | undefined;

  /** The store's state, from a ping at most once a second, shared by the requests that wait for it. */
  function storeState(): Promise<string | undefined> | string | undefined {
    if (store.ping === undefined) return undefined;
    if (known !== undefined && Date.now() - known.at < STORE_STATE_MS) return known.reason;
    return (asking ??= ping(store.ping.bind(store)).then((reason) => {
      known = { at: Date.now(), reason };
      asking = undefined;
      return reason;
    }));
  }

  function write(req: IncomingMessage, res: ServerResponse, reason: string | undefined): void {
    if (res.headersSent || res.writableEnded) return;
    const degraded = reason === undefined ? options?.degraded?.() : undefined;
    const body = reason !== undefined ? JSON.stringify({ status: 'not ready', reason }) : degraded !== undefined ? JSON.stringify({ ...degraded, status: 'degraded' }) : OK;
    res.writeHead(reason === undefined ? 200 : 503, { ...HEADERS, 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  function writeLive(req: IncomingMessage, res: ServerResponse): void {
    if (res.headersSent || res.writableEnded) return;
    res.writeHead(200, { ...HEADERS, 'content-length': Buffer.byteLength(OK) });
    res.end(req.method === 'HEAD' ? undefined : OK);
  }

  return {
    owns: (pathname) => pathname === livePath || pathname === readyPath,
    answer(pathname, req, res) {
      if (pathname === livePath) return writeLive(req, res);
      const early = draining() ? 'draining' : checks.map((check) => check()).find((reason) => reason !== undefined);
      if (early !== undefined) return write(req, res, early);
      const state = storeState();
      if (typeof state !== 'object') return write(req, res, state);
      void state.then((reason) => write(req, res, draining() ? 'draining' : reason));
    },
  };
}

/** 'store' when the ping fails or takes longer than {@link PING_TIMEOUT_MS}. */
async function ping(run: () => Promise<void>): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve('store'), PING_TIMEOUT_MS);
  });
  try {
    return await Promise.race([run().then(() => undefined), late]);
  } catch {
    // The reason stays inside: a readiness answer is read by anyone.
    return 'store';
  } finally {
    clearTimeout(timer);
  }
}
