import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Metric } from 'prom-client';
import { ANSWER_PLANS, LoginLimiter, SvcError } from '@svc/core';
import type { ExtraRoute, LoginAttempt, LoginLimitsFactory, Logger, RequestObserver, Store, SvcServer } from '@svc/core';
import type { ScriptRuntimeStats } from '@svc/script-runtime';

/** app.json `metrics`. */
export interface MetricsSettings {
  /** Default true once `metrics` is in app.json. */
  enabled?: boolean;
  /** Where the text is served; default /metrics. */
  path?: string;
  /** A port of its own (no key asked); default: the app's port, root key required. */
  port?: number;
  /** The address of `port`; default 127.0.0.1. */
  host?: string;
}

/** What the metrics read when scraped. */
export interface MetricsSources {
  /** Script runs in all since the start, and those waiting now. */
  scripts(): ScriptRuntimeStats;
  /** Realtime sockets open in this process, when there is a Socket.IO transport. */
  sockets(): number | undefined;
  /** The store as opened (object counts). */
  store: Store;
}

/** Object counts are read from the store at most this often, whoever scrapes. */
export const STORE_COUNT_EVERY_MS = 10_000;
/** A scrape waits this long for fresh counts; past it, it answers the previous ones. */
const STORE_COUNT_WAIT_MS = 2_000;
/** Collections counted at most (an app has one per resource). */
const MAX_COUNTED_COLLECTIONS = 1_000;
/** The collection of stored sessions (core's SessionManager); one object in it is its signing key. */
const SESSIONS_COLLECTION = '_sessions';
/** Status codes svc and its resource types answer, kept as they are; others by class ('4xx'). */
const KNOWN_STATUSES = new Set([200, 201, 204, 206, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 409, 413, 415, 416, 429, 500, 502, 503, 504, 507]);
/** The values of the `plan` label: core's answer plans. */
const PLANS: ReadonlySet<string> = new Set(ANSWER_PLANS);
/** Upper bounds of the request-duration buckets, seconds. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The requests of one resource and method: counts by status, and the durations' buckets. */
interface RequestSeries {
  resource: string;
  method: string;
  byStatus: Map<string, number>;
  /** GETs a Collection answered, by the plan that answered (Reply.plan). */
  byPlan: Map<string, number>;
  /** Per bucket (the last one: above every bound), not cumulative. */
  buckets: number[];
  sum: number;
  count: number;
}

/** A sample line of prom-client's exposition. */
interface Line {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * The request counter and histogram, counted in plain numbers: prom-client's own hash their
 * labels on every call (bench/RESULTS.md, "Figures from code comments"); these cost one Map lookup, and the text is made at
 * the scrape.
 */
class RequestMetrics {
  private readonly series = new Map<string, RequestSeries>();

  observe(resource: string, method: string, status: string, seconds: number, plan: string | undefined): void {
    const key = `${resource}\n${method}`;
    let s = this.series.get(key);
    if (s === undefined) {
      s = { resource, method, byStatus: new Map(), byPlan: new Map(), buckets: new Array<number>(BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    s.byStatus.set(status, (s.byStatus.get(status) ?? 0) + 1);
    if (plan !== undefined) {
      // A fixed set of values, whatever a resource type puts in its replies.
      const label = PLANS.has(plan) ? plan : 'other';
      s.byPlan.set(label, (s.byPlan.get(label) ?? 0) + 1);
    }
    let i = 0;
    while (i < BUCKETS.length && seconds > (BUCKETS[i] as number)) i++;
    s.buckets[i] = (s.buckets[i] as number) + 1;
    s.sum += seconds;
    s.count++;
  }

  /** The three metrics, for Registry.registerMetric. */
  metrics(): Metric[] {
    const counter = {
      name: 'svc_http_requests_total',
      help: 'HTTP requests answered, by resource, method and status',
      type: 'counter',
      aggregator: 'sum',
      get: () => {
        const values: Line[] = [];
        for (const s of this.series.values()) for (const [status, n] of s.byStatus) values.push({ labels: { resource: s.resource, method: s.method, status }, value: n });
        return Promise.resolve({ name: counter.name, help: counter.help, type: counter.type, aggregator: counter.aggregator, values });
      },
      reset: () => this.series.clear(),
    };
    const plans = {
      name: 'svc_answer_plans_total',
      help: 'GET answers of collections, by resource and the plan that made them (objects: the plain path; the others: shortcuts, docs/contributing/architecture.md)',
      type: 'counter',
      aggregator: 'sum',
      get: () => {
        const values: Line[] = [];
        for (const s of this.series.values()) for (const [plan, n] of s.byPlan) values.push({ labels: { resource: s.resource, plan }, value: n });
        return Promise.resolve({ name: plans.name, help: plans.help, type: plans.type, aggregator: plans.aggregator, values });
      },
      reset: () => this.series.clear(),
    };
    const name = 'svc_http_request_duration_seconds';
    const histogram = {
      name,
      help: 'Time to answer HTTP requests, by resource and method',
      type: 'histogram',
      aggregator: 'sum',
      get: () => {
        const values: Line[] = [];
        for (const s of this.series.values()) {
          const labels = { resource: s.resource, method: s.method };
          let cumulative = 0;
          for (let i = 0; i <= BUCKETS.length; i++) {
            cumulative += s.buckets[i] as number;
            values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: i < BUCKETS.length ? (BUCKETS[i] as number) : '+Inf' }, value: cumulative });
          }
          values.push({ metricName: `${name}_sum`, labels, value: s.sum }, { metricName: `${name}_count`, labels, value: s.count });
        }
        return Promise.resolve({ name, help: histogram.help, type: histogram.type, aggregator: histogram.aggregator, values });
      },
      reset: () => this.series.clear(),
    };
    return [counter, plans, histogram] as unknown as Metric[];
  }
}

/**
 * The Prometheus metrics of one app, in a registry of its own (several apps may share a process).
 * Every label comes from a bounded set: resource paths of the app, a fixed list of methods and
 * statuses, the store's collections.
 */
export class AppMetrics {
  readonly registry = new Registry();
  private readonly requests = new RequestMetrics();
  private readonly loginLimited: Counter<'outcome'>;
  private counts = new Map<string, number>();
  private countedAt = -Infinity;
  private counting: Promise<void> | undefined;

  constructor(
    private readonly sources: MetricsSources,
    private readonly logger: Logger,
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    for (const metric of this.requests.metrics()) this.registry.registerMetric(metric);
    this.loginLimited = new Counter({ name: 'svc_login_limited_total', help: 'Login attempts refused (429) or slowed down by the login limits', labelNames: ['outcome'], registers });
    const scriptCounter = (name: string, help: string, read: (s: ScriptRuntimeStats) => number): void => {
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read(sources.scripts()));
        },
      });
    };
    scriptCounter('svc_script_runs_total', 'Event script jobs run (one per event, or per list of objects for On Get)', (s) => s.runs);
    scriptCounter('svc_script_planned_total', 'Of those, jobs answered by a static plan in the server process (no script process, no code run)', (s) => s.planned);
    scriptCounter('svc_script_timeouts_total', 'Event script jobs stopped by a time limit (scripts.timeoutMs, requestCpuMs, requestWallMs)', (s) => s.timeouts);
    scriptCounter('svc_script_busy_total', 'Event script jobs refused because scripts.queueLimit runs were waiting (503)', (s) => s.busy);
    new Gauge({
      name: 'svc_script_queue',
      help: 'Event script jobs waiting for a script process now',
      registers,
      collect() {
        this.set(sources.scripts().queued);
      },
    });
    new Gauge({
      name: 'svc_realtime_sockets',
      help: 'Realtime (Socket.IO) sockets open in this process',
      registers,
      collect() {
        this.set(sources.sockets() ?? 0);
      },
    });
    const counts = (): Map<string, number> => this.counts;
    new Gauge({
      name: 'svc_sessions',
      help: `Stored (logged-in) sessions, expired ones not yet swept included; read at most every ${STORE_COUNT_EVERY_MS / 1000} s`,
      registers,
      collect() {
        const stored = counts().get(SESSIONS_COLLECTION);
        if (stored !== undefined) this.set(Math.max(0, stored - 1));
      },
    });
    new Gauge({
      name: 'svc_store_objects',
      help: `Objects per store collection; read at most every ${STORE_COUNT_EVERY_MS / 1000} s`,
      labelNames: ['collection'],
      registers,
      collect() {
        this.reset();
        for (const [name, n] of counts()) if (name !== SESSIONS_COLLECTION) this.set({ collection: name }, n);
      },
    });
  }

  /** For createServer's `observe`: one sample per request. */
  readonly observe: RequestObserver = (sample) => {
    const status = sample.status === 0 ? 'aborted' : KNOWN_STATUSES.has(sample.status) ? String(sample.status) : `${Math.floor(sample.status / 100)}xx`;
    this.requests.observe(sample.resource, sample.method, status, sample.seconds, sample.plan);
  };

  /** Counts the refusals and slowdowns of the login limits that `base` makes (core's in-memory ones by default). */
  countLoginLimits(base: LoginLimitsFactory | undefined): LoginLimitsFactory {
    return (options) => {
      const limits = base ? base(options) : new LoginLimiter(options);
      const seen = (attempt: LoginAttempt): LoginAttempt => {
        if (attempt.retryAfter > 0) this.loginLimited.inc({ outcome: 'refused' });
        else if (attempt.delayMs > 0) this.loginLimited.inc({ outcome: 'slowed' });
        return attempt;
      };
      return {
        attempt(address, username) {
          const attempt = limits.attempt(address, username);
          return attempt instanceof Promise ? attempt.then(seen) : seen(attempt);
        },
      };
    };
  }

  /** The Prometheus text of everything, with object counts at most STORE_COUNT_EVERY_MS old. */
  async text(): Promise<string> {
    if (performance.now() - this.countedAt >= STORE_COUNT_EVERY_MS) {
      this.counting ??= this.countObjects().finally(() => (this.counting = undefined));
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((done) => (timer = setTimeout(done, STORE_COUNT_WAIT_MS)));
      await Promise.race([this.counting, waited]);
      clearTimeout(timer);
    }
    return this.registry.metrics();
  }

  private async countObjects(): Promise<void> {
    const store = this.sources.store;
    try {
      const names = (await store.listCollections?.()) ?? [];
      const next = new Map<string, number>();
      for (const name of names.slice(0, MAX_COUNTED_COLLECTIONS)) next.set(name, await store.collection(name).count({}));
      this.counts = next;
    } catch (err) {
      this.logger.warn('metrics: could not count the store\'s objects; the previous counts are served', { error: err });
    } finally {
      // A failing store is asked again no sooner either.
      this.countedAt = performance.now();
    }
  }
}

/** Answers a scrape: GET or HEAD of the text. */
async function serveText(metrics: AppMetrics, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('GET only\n');
    return;
  }
  const text = await metrics.text();
  res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : text);
}

function failed(res: ServerResponse, logger: Logger, err: unknown): void {
  logger.error('metrics: the scrape failed', { error: err });
  if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
  res.end();
}

/**
 * The metrics on the app's own port: for root requests only (a valid svc-ssh-key; in
 * development, any key from this machine), 403 for anyone else.
 */
export function metricsRoute(metrics: AppMetrics, path: string, server: () => SvcServer | undefined, logger: Logger): ExtraRoute {
  return {
    path,
    handle(req, res) {
      if (server()?.isRootRequest(req) !== true) {
        const error = new SvcError('FORBIDDEN', 'metrics are served to root requests only (svc-ssh-key)');
        res.writeHead(403, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(error.toJSON()));
        return;
      }
      serveText(metrics, req, res).catch((err: unknown) => failed(res, logger, err));
    },
  };
}

/** The metrics on a port of their own: no key asked, so it listens on 127.0.0.1 unless told otherwise. */
export async function listenMetrics(metrics: AppMetrics, settings: { path: string; port: number; host: string }, logger: Logger): Promise<{ server: Server; port: number }> {
  const server = createServer({ headersTimeout: 10_000, requestTimeout: 10_000, keepAliveTimeout: 5_000 }, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    if ((q === -1 ? url : url.slice(0, q)) !== settings.path) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    serveText(metrics, req, res).catch((err: unknown) => failed(res, logger, err));
  });
  // A scraper needs a connection or two; the cap bounds what anyone else who can reach it may hold.
  server.maxConnections = 64;
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/** Closes the metrics port, its idle scrape connections included. */
export function closeMetrics(server: Server): Promise<void> {
  return new Promise((done) => {
    server.close(() => done());
    server.closeAllConnections();
  });
}
