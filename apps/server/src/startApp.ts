import { repeatLimitedLogger } from './repeatLimitedLogger.js';
import type { Server } from 'node:http';
import { join, resolve } from 'node:path';
import { ReceivedFiles, crashPoint, ThumbnailQueues, createEmbeddedStore, createEngineStore, createMongoStore, createServer, createConsoleLogger, forwardStore, silentLogger } from '@svc/core';
import type { AnyResourceType, DrainOutcome, ExtraRoute, InternalRequest, Logger, Realtime, Resource, ResourceFiles, ResourceType, Store, SvcServer } from '@svc/core';
import type { AppMetrics, MetricsSettings, MetricsSources } from './metrics.js';
import type * as MetricsModule from './metrics.js';
import { buildResources, readProperties } from './buildResources.js';
import { applySettings, runMigrations } from './migrations.js';
import type { MigrationRun } from './migrations.js';
import { loadInstalledTypes } from './installedTypes.js';
import { createScriptFactory } from './scripts.js';
import { ModuleBundles, bundleModules, loadScriptModules } from './scriptModules.js';
import { MIN_KEY_LENGTH, liveKeys } from './keys.js';
import { embeddedEngineOf, loadApp } from './loadApp.js';
import type { AppFolder } from './loadApp.js';
import { DEFAULT_REDIS_PREFIX, createLiveRealtime, followChangesOf, svcJsRoute } from './realtime.js';
import { connectLoginLimits } from './redisLoginLimits.js';
import { memoryRateCounter } from './rateCounter.js';
import { watchApp } from './watch.js';
import { warnOpenRules } from './openWriteRules.js';
import { createDashboard } from './dashboard/dashboard.js';
import { resumeFolder, resumeObjects } from './dashboard/renameJournal.js';
import { Feed, feedStore, teeLogger } from './dashboard/feed.js';
import { writeTypes } from './typesCommand.js';
import { scheduleBackups } from './scheduledBackups.js';
import { createJobHost } from './scheduledJobs.js';
import type { JobMount } from './scheduledJobs.js';
import { DEFAULT_REQUEST_WALL_MS } from './scripts.js';
import { createExclusive, gateStore } from './storeGate.js';
import { dashboardAssetsDir } from '@svc/dashboard';
import type { RedisLoginLimits } from './redisLoginLimits.js';

/** Options of {@link startApp}. */
export interface StartOptions {
  appDir: string;
  /** 0 picks a free port. Default 2403. */
  port?: number;
  /** Default: loopback in development, all interfaces in production. */
  host?: string;
  /** A mongodb:// URL; absent means the embedded store under <app>/data. */
  db?: string;
  env?: 'development' | 'production';
  logger?: Logger;
  /** Resource types registered explicitly, beside those found in the app's package.json. */
  resourceTypes?: readonly AnyResourceType[];
  /** Where emit() goes; default: Socket.IO on the app's HTTP server (attached when it has attach()). */
  realtime?: Realtime;
  /** redis:// URL: realtime messages and rooms shared with other processes of the app. */
  redis?: string;
  /**
   * Watch resources/ and app.json and apply changes without a restart (the CLI sets it in
   * development). A change that does not load is logged and the previous version keeps serving.
   */
  watch?: boolean;
  /** Serve the administration dashboard at /dashboard/ (root only). Default true; app.json `"dashboard": false` turns it off too. */
  dashboard?: boolean;
  /** Root keys beside .svc/keys.json (the CLI passes SVC_ROOT_KEYS); they work while keys.json is unreadable too. */
  rootKeys?: readonly string[];
  /** false: every shortcut of the read side off (wins over app.json `fastPaths`). */
  fastPaths?: boolean;
  /**
   * An open store to serve instead of the one `db` or the app folder names (programs and tests
   * that run two servers over one store). The caller closes it: close() leaves it open.
   */
  store?: Store;
}

/** How a running app stops. */
export interface CloseOptions {
  /**
   * Wait for requests in flight and let idle keep-alive connections end by their timeout (up to
   * app.json `http.drainMs`), so that a proxy never has a request cut: what SIGTERM does in
   * production. Default false: requests in flight finish, idle connections close at once.
   */
  graceful?: boolean;
}

/** A running app. */
export interface RunningApp {
  server: SvcServer;
  port: number;
  host: string;
  url: string;
  /** Where Prometheus scrapes, when app.json `metrics` is on (on its own port or the app's). */
  metricsUrl?: string;
  /** Fails readiness, drains (see {@link CloseOptions}), then closes realtime, scripts and the store. */
  close(options?: CloseOptions): Promise<DrainOutcome>;
}

/** What startApp and attachApp share: the app's server, built but not yet listening. */
interface BuiltApp {
  server: SvcServer;
  env: 'development' | 'production';
  /** Attaches realtime to the server's HTTP server. */
  attachRealtime(): Promise<void>;
  /** Opens the metrics' own port, when app.json metrics.port is set (closed by close()). */
  startMetrics(): Promise<void>;
  /** The metrics' own port and path, when they have one. */
  metrics?: { port: number; host: string; path: string } | { path: string };
  close(options?: CloseOptions): Promise<DrainOutcome>;
}

/** The files of the resource at /<name> when it keeps files (a Bucket), as mounted now. */
function bucketFiles(resources: readonly Resource[], name: string): ResourceFiles | undefined {
  return resources.find((r) => r.path === `/${name.replace(/^\/+|\/+$/g, '')}`)?.files;
}

/**
 * The app's metrics when app.json turns them on, with the module that serves them: prom-client
 * (about 80 modules with its dependency, loaded at every start before) loads only then.
 */
async function appMetrics(
  settings: MetricsSettings | undefined,
  sources: MetricsSources,
  logger: Logger,
): Promise<{ metrics: AppMetrics; metricsModule: typeof MetricsModule } | { metrics: undefined; metricsModule: undefined }> {
  if (settings === undefined || settings.enabled === false) return { metrics: undefined, metricsModule: undefined };
  const metricsModule = await import('./metrics.js');
  return { metrics: new metricsModule.AppMetrics(sources, logger), metricsModule };
}

/**
 * Builds the app's server. `received`: the uploads under way, which the orphan sweep leaves (made
 * here, one per server, and kept across its reloads); `thumbnailQueues`: the thumbnails being made
 * (the same); `bundles`: app.json scripts.modules bundled (the same); `mailCounter`: the account
 * mail limits' counters without Redis (the same).
 */
async function buildApp(options: StartOptions, httpServer?: Server, received = new ReceivedFiles(), mailCounter = memoryRateCounter(), thumbnailQueues = new ThumbnailQueues(), bundles = new ModuleBundles()): Promise<BuiltApp> {
  const appDir = resolve(options.appDir);
  // As the CLI: NODE_ENV=production means production unless the caller says otherwise.
  const env = options.env ?? (process.env.NODE_ENV === 'production' ? 'production' : 'development');
  // Log lines and data changes, for the dashboards that follow this server live.
  const feed = new Feed();
  const logger = repeatLimitedLogger(teeLogger(options.logger ?? createConsoleLogger(), feed));
  // A rename of the dashboard that a crash interrupted: its folder first (the app is loaded with
  // it), its objects once the store is open.
  const interrupted = await resumeFolder(appDir);
  if (options.env === undefined && env === 'production') logger.info('production (NODE_ENV=production; pass env to choose)');
  const app = await loadApp(appDir, logger);
  // Before anything is opened: a module that cannot load stops the start.
  const modules = await loadScriptModules(appDir, app.settings.scripts, logger, bundles);
  const types = new Map<string, ResourceType>();
  for (const type of [...(await loadInstalledTypes(appDir, app.dependencies)), ...(options.resourceTypes ?? [])]) {
    if (type.name === 'Collection' || type.name === 'UserCollection') throw new Error(`resource type ${type.name} is built in and cannot be replaced`);
    types.set(type.name, type);
  }
  // Cross-origin callers: the app's list; else any origin in development, none in production.
  const origins = app.settings.cors?.origins ?? (env === 'production' ? [] : '*');
  if (app.settings.cors?.origins === undefined) {
    logger.info(
      env === 'production'
        ? 'CORS: same-origin only (production default); list the web apps allowed to call with credentials in app.json "cors": {"origins": [...]}'
        : 'CORS: any origin may call with credentials (development default; production allows only app.json cors.origins)',
    );
  }
  if (httpServer && app.settings.http !== undefined) {
    logger.warn('app.json "http" (timeouts, connection caps) applies to svc\'s own server: the host application\'s server keeps its own settings');
  }
  const redisPrefix = app.settings.redisPrefix ?? DEFAULT_REDIS_PREFIX;
  const live = createLiveRealtime({ given: options.realtime, redis: options.redis, redisPrefix, logger, origins, caps: app.settings.realtime });
  let loginLimits: RedisLoginLimits | undefined;
  const realtime = live.realtime;
  if (options.db) logger.info('connecting to MongoDB (--db)');
  const rawStore: Store = options.store
    ? keptOpen(options.store)
    : options.db
    ? await createMongoStore({ url: options.db, ...(app.settings.databaseTimeoutMs !== undefined ? { timeoutMs: app.settings.databaseTimeoutMs } : {}) })
    : embeddedEngineOf(app.settings) === 'sqlite'
      ? await createEngineStore({ dir: join(appDir, 'data'), warn: (message) => logger.warn(message), durability: app.settings.embeddedStore?.fsync === true ? 'full' : 'normal', cacheMb: app.settings.embeddedStore?.cacheMb, mmapMb: app.settings.embeddedStore?.mmapMb })
      : await createEmbeddedStore({ dir: join(appDir, 'data'), warn: (message) => logger.warn(message), fsync: app.settings.embeddedStore?.fsync === true });
  // Closed (503) while the dashboard restores a backup; the restore itself writes to rawStore.
  const gate = gateStore(feedStore(rawStore, feed));
  const store: Store = gate.store;
  const exclusive = createExclusive();
  let stopBackups: (() => Promise<void>) | undefined;
  // Scheduled jobs (the Event type's schedule): once across processes with Redis.
  const jobHost = createJobHost({ redis: options.redis, prefix: redisPrefix, shared: options.db !== undefined, runWallMs: app.settings.scripts?.requestWallMs ?? DEFAULT_REQUEST_WALL_MS, logger });
  let activeJobs: JobMount | undefined;
  try {
    if (interrupted) await resumeObjects(appDir, store, interrupted, logger, env);
    // Migrations (migrations/): written from property changes in development, applied before
    // anything is served. A collection whose migration failed is not served (503), the rest is.
    let batches = 0;
    const migrate = (folder: AppFolder, previous?: MigrationRun): Promise<MigrationRun> => {
      // Checked first: a property of an unknown type would read as removed.
      for (const resource of folder.resources) if (resource.config.type === 'Collection' || resource.config.type === 'UserCollection') readProperties(resource, silentLogger);
      return runMigrations({ appDir, app: folder, store, env, logger, onBatch: () => crashPoint(`migrate:batch:${++batches}`), ...applySettings(folder.settings.migrations, options.store ? undefined : options.db, previous !== undefined), ...(previous ? { previous: { app: current, migrations: previous.migrations } } : {}) });
    };
    let migrations = await migrate(app);
    // Every process sharing the Redis counts login attempts together.
    if (options.redis) loginLimits = await connectLoginLimits(options.redis, logger, redisPrefix);
    // Scripts reach the server through this before it exists; it is bound right after creation.
    const bound: { server?: SvcServer } = {};
    const request = (input: InternalRequest) => {
      if (!bound.server) return Promise.reject(new Error('internal request before the server started'));
      return bound.server.request(input);
    };
    // keys.json is looked at again by every production root check: a removed key stops at once.
    const keys = liveKeys(appDir, { extra: options.rootKeys ?? [], logger });
    const rootKeys = keys.current();
    if (env === 'production' && rootKeys.length === 0) {
      logger.warn('production without a root key: requests with svc-ssh-key are refused (no root access); create one with: svc keygen, or set SVC_ROOT_KEYS');
    }
    const weak = rootKeys.filter((k) => k.length < MIN_KEY_LENGTH).length;
    if (env === 'production' && weak > 0) logger.warn(`root keys: ${weak} of keys.json ${weak === 1 ? 'is' : 'are'} shorter than ${MIN_KEY_LENGTH} characters and could be guessed; replace with: svc keygen, then svc keygen --revoke <old key>`);
    const fastPaths = options.fastPaths ?? app.settings.fastPaths ?? true;
    const scripts = createScriptFactory({ app, env, logger, realtime, request, modules, fastPaths });
    const metricsSettings = app.settings.metrics;
    const { metrics, metricsModule } = await appMetrics(metricsSettings, { scripts: () => scripts.stats(), sockets: () => socketsOf(realtime), store: rawStore }, logger);
    const metricsPath = metricsSettings?.path ?? '/metrics';
    // No key is asked on the metrics' own port: it stays on this machine unless app.json says otherwise.
    const metricsPort = metrics && metricsSettings?.port !== undefined ? { path: metricsPath, port: metricsSettings.port, host: metricsSettings.host ?? '127.0.0.1' } : undefined;
    let activeModules = modules;
    let current = app;
    // Reloads never overlap, whoever asks (the development watcher, the dashboard).
    let reloading: Promise<void> = Promise.resolve();
    const reload = (): Promise<void> => {
      const run = reloading.then(reloadNow, reloadNow);
      reloading = run.catch(() => undefined);
      return run;
    };
    const dashboard =
      options.dashboard === false || app.settings.dashboard === false
        ? undefined
        : createDashboard({
            appDir,
            env,
            feed,
            assetsDir: dashboardAssetsDir,
            types,
            scripts,
            store,
            reload,
            current: () => current,
            typesText: async () => (await writeTypes(appDir, '-', logger)).text,
            backupSource: options.db || options.store ? { kind: 'store', store: rawStore } : { kind: 'embedded', dir: join(appDir, 'data'), engine: embeddedEngineOf(app.settings) },
            exclusive,
            rawStore,
            gate,
            logger,
            sessionsEnded: async (ids) => bound.server?.sessions.endedElsewhere(ids),
            writtenMigrations: () => migrations.written,
            resources: () => bound.server?.resources ?? [],
            followChanges: (listener) => followChangesOf(realtime, listener),
          });
    let dashboardShadowed = false;
    // An app folder's resources and the routes that depend on them (/svc.js), at start and on reload.
    const mount = async (folder: AppFolder, jobs: JobMount): Promise<{ resources: Resource[]; routes: ExtraRoute[] }> => {
      const built = await buildResources({ app: folder, store, logger, env, types, scripts, realtime, request, received, thumbnailQueues, jobs: jobs.jobs, blocked: migrations.blocked, recheckBlocked: migrations.recheck, rateCounter: loginLimits?.counter ?? mailCounter });
      scripts.bind(built);
      const routes = [await svcJsRoute(built, logger)];
      if (metrics && !metricsPort) {
        // An app's own resource at the path wins, as over the dashboard.
        if (built.some((r) => r.path.toLowerCase() === metricsPath.toLowerCase())) logger.warn(`metrics: the app has a resource at ${metricsPath}, so the metrics are not served there (set app.json metrics.path)`);
        else routes.push(metricsModule.metricsRoute(metrics, metricsPath, () => bound.server, logger));
      }
      // An app's own resource at /dashboard wins (Deployd apps may have one); the dashboard steps aside.
      // In any case (/Dashboard): two resources differing in case only are refused.
      const shadowed = built.some((r) => r.path.toLowerCase() === '/dashboard' || r.path.toLowerCase().startsWith('/dashboard/'));
      if (shadowed && !dashboardShadowed && dashboard) logger.warn('resource dashboard: the app has its own /dashboard, so the administration dashboard is not served');
      dashboardShadowed = shadowed;
      return { resources: dashboard && !shadowed ? [...built, dashboard] : built, routes };
    };
    activeJobs = jobHost.mount();
    const { resources, routes } = await mount(app, activeJobs);
    const server = await createServer({
      store,
      resources,
      env,
      logger,
      publicDir: join(appDir, 'public'),
      rootKeys: () => keys.current(),
      ...(app.settings.bodyLimit !== undefined ? { bodyLimit: app.settings.bodyLimit } : {}),
      ...(app.settings.sessionIdleSeconds !== undefined ? { sessions: { idleSeconds: app.settings.sessionIdleSeconds } } : {}),
      ...(app.settings.methodOverrideKey !== undefined ? { methodOverrideKey: app.settings.methodOverrideKey } : {}),
      cors: { origins },
      crossSiteCookies: app.settings.cors?.crossSiteCookies === true,
      routes,
      ...(metrics ? { loginLimits: metrics.countLoginLimits(loginLimits?.factory), observe: metrics.observe } : loginLimits ? { loginLimits: loginLimits.factory } : {}),
      ...(httpServer ? { httpServer } : {}),
      ...(app.settings.http !== undefined ? { http: app.settings.http } : {}),
      ...(app.settings.trustProxy !== undefined ? { trustProxy: app.settings.trustProxy } : {}),
      health: { ...app.settings.health, checks: [() => scripts.unready()], degraded: () => (migrations.blocked.size > 0 ? { reason: 'migration', collections: [...migrations.blocked.keys()] } : undefined) },
      accessLog: app.settings.log?.access === false ? false : { health: app.settings.log?.health === true },
      fastPaths,
    });
    bound.server = server;
    // Once per start: what anyone may write, and which users anyone may list (Deployd's open default), with the fix.
    if (env === 'production') warnOpenRules(app, logger);
    let metricsListener: Server | undefined;
    const startMetrics = async (): Promise<void> => {
      if (!metrics) return;
      if (!metricsPort) return logger.info(`metrics: ${metricsPath} on the app's port, for root requests (svc-ssh-key)`);
      try {
        const listening = await metricsModule.listenMetrics(metrics, metricsPort, logger);
        metricsListener = listening.server;
        metricsPort.port = listening.port;
      } catch (err) {
        throw new Error(`metrics: cannot listen on ${metricsPort.host}:${metricsPort.port} (app.json metrics.port): ${(err as Error).message}`, { cause: err });
      }
      const local = metricsPort.host === '127.0.0.1' || metricsPort.host === '::1' || metricsPort.host === 'localhost';
      if (local) logger.info(`metrics: http://${metricsPort.host}:${metricsPort.port}${metricsPath} (this machine only)`);
      else logger.warn(`metrics: served without a key on ${metricsPort.host}:${metricsPort.port}${metricsPath}: anyone who can reach that address reads them; keep it on a private network or firewall it`);
    };
    jobHost.started();
    const trust = app.settings.trustProxy;
    if (trust !== undefined && trust !== 0 && !(Array.isArray(trust) && trust.length === 0)) {
      logger.info(
        `trustProxy: client addresses come from X-Forwarded-For / Forwarded sent by ${typeof trust === 'number' ? `the ${trust} nearest prox${trust === 1 ? 'y' : 'ies'}` : trust.join(', ')}${env === 'development' ? '; requests through them are never root in development' : ''}`,
      );
    }
    const reloadNow = async (): Promise<void> => {
      const started = performance.now();
      const next = await loadApp(appDir, logger);
      // Changed modules (app.json scripts.modules, or a package of another version) are checked
      // like at start; when they do not load, the reload fails and the previous version serves.
      const names = next.settings.scripts?.modules ?? [];
      const bundled = names.length === 0 ? [] : await bundleModules(appDir, names, bundles);
      if (bundled.length !== activeModules.length || bundled.some((m, i) => m.name !== activeModules[i]?.name || m.source !== activeModules[i]?.source)) {
        activeModules = await loadScriptModules(appDir, { ...app.settings.scripts, modules: names }, logger, bundles);
        scripts.useModules(activeModules);
        if (names.length === 0) logger.info('event scripts may require no module any more');
      }
      migrations = await migrate(next, migrations);
      // The new version's jobs start with its resources; the previous version's stop at the swap.
      const nextJobs = jobHost.mount();
      let previous: readonly Resource[];
      let mounted: Awaited<ReturnType<typeof mount>>;
      try {
        mounted = await mount(next, nextJobs);
        previous = await server.replaceResources(mounted.resources, mounted.routes);
      } catch (err) {
        nextJobs.stop();
        throw err;
      }
      activeJobs?.stop();
      activeJobs = nextJobs;
      // Requests under way finish on the previous resources; close those that hold anything later.
      setTimeout(() => {
        for (const resource of previous) resource.close?.().catch((err: unknown) => logger.warn(`closing the previous ${resource.path}: ${(err as Error).message}`));
      }, 5000).unref();
      // scripts.modules applies at once (above); the other settings at the next start.
      const withoutModules = (settings: AppFolder['settings']): string => JSON.stringify({ ...settings, scripts: { ...settings.scripts, modules: undefined } });
      const settingsChanged = withoutModules(next.settings) !== withoutModules(current.settings);
      current = next;
      logger.info(
        `reloaded ${mounted.resources.filter((r) => r !== dashboard).length} resources in ${Math.round(performance.now() - started)} ms` +
          (settingsChanged ? ' (app.json: bodyLimit, cors, sessions, methodOverrideKey, http, trustProxy, log and scripts limits apply at the next start)' : ''),
      );
    };
    const stopWatching = options.watch ? watchApp(appDir, reload, logger) : undefined;
    const backups = app.settings.backups;
    if (backups?.intervalMinutes !== undefined) {
      // The embedded store is read from its files (as svc backup does), MongoDB through the store.
      stopBackups = scheduleBackups({
        dir: join(appDir, 'backups'),
        source: options.db || options.store ? { kind: 'store', store: rawStore } : { kind: 'embedded', dir: join(appDir, 'data'), engine: embeddedEngineOf(app.settings) },
        intervalMs: backups.intervalMinutes * 60_000,
        keep: backups.keep ?? 7,
        logger,
        exclusive,
        ...(backups.bucket !== undefined ? { bucket: { name: backups.bucket, files: () => bucketFiles(server.resources, backups.bucket as string) } } : {}),
      });
      logger.info(`backups: every ${backups.intervalMinutes} min into ${join(appDir, 'backups')}${backups.bucket !== undefined ? ` and the bucket ${backups.bucket}` : ''}, the newest ${backups.keep ?? 7} kept`);
      if (backups.bucket !== undefined && !bucketFiles(server.resources, backups.bucket)) logger.warn(`app.json backups.bucket: ${backups.bucket} is not a Bucket resource of this app; backups stay local only`);
      // A Bucket serves GET /<name>/<file> to anyone its get.js lets through; backups hold password hashes.
      const bucketFolder = backups.bucket !== undefined ? app.resources.find((r) => r.path === `/${(backups.bucket as string).replace(/^\/+|\/+$/g, '')}`) : undefined;
      if (bucketFolder && !bucketFolder.scripts.has('get.js')) {
        logger.warn(`app.json backups.bucket: ${backups.bucket} has no get.js, so anyone can download the backups stored there (GET ${bucketFolder.path}/backups/<file>); add resources${bucketFolder.path}/get.js refusing them, e.g. cancelUnless(isRoot, 'not allowed', 403)`);
      }
    }
    if (stopWatching) logger.info('development: watching resources/ and app.json; changes apply without a restart (a new type package still needs one)');
    return {
      server,
      env,
      ...(metricsPort ? { metrics: metricsPort } : metrics ? { metrics: { path: metricsPath } } : {}),
      attachRealtime: () => live.attach(server),
      startMetrics,
      close: async (closeOptions = {}) => {
        if (metricsListener) await metricsModule?.closeMetrics(metricsListener);
        stopWatching?.();
        // Timers first; a run under way ends before its resource closes (server.close below).
        activeJobs?.stop();
        await stopBackups?.();
        dashboard?.closeStreams();
        // Scripts of the requests in flight may still emit: realtime closes once they are answered.
        const outcome = await server.drain({ closeIdle: closeOptions.graceful !== true, afterRequests: () => live.close() });
        await live.close();
        await server.close();
        await loginLimits?.close();
        await jobHost.close();
        scripts.close();
        return outcome;
      },
    };
  } catch (err) {
    await jobHost.close();
    await stopBackups?.();
    await live.close();
    await loginLimits?.close();
    await store.close();
    throw err;
  }
}

/** Loads an app folder and serves it on its own HTTP server. */
export async function startApp(options: StartOptions): Promise<RunningApp> {
  const built = await buildApp(options);
  const { server } = built;
  try {
    await built.attachRealtime();
    await built.startMetrics();
    // Any root key works in development (from this machine only), so the development server stays on it.
    const host = options.host ?? (built.env === 'production' ? '0.0.0.0' : '127.0.0.1');
    const port = await server.listen(options.port ?? 2403, host);
    const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
    const metrics = built.metrics;
    const metricsUrl = metrics === undefined ? undefined : 'port' in metrics ? `http://${metrics.host === '0.0.0.0' ? '127.0.0.1' : metrics.host}:${metrics.port}${metrics.path}` : `${url}${metrics.path}`;
    return { server, port, host, url, ...(metricsUrl !== undefined ? { metricsUrl } : {}), close: built.close };
  } catch (err) {
    await built.close();
    throw err;
  }
}

/** Options of {@link attachApp}: those of startApp but where to listen (the host decides). */
export type AttachOptions = Omit<StartOptions, 'port' | 'host'>;

/** An app living in a host application's HTTP server. */
export interface AttachedApp {
  server: SvcServer;
  /**
   * The request handler for the host: express `app.use(svc.middleware)`, or call it from a
   * node:http listener. Answers svc's resources, /svc.js and public/ files; passes anything else
   * to `next`. A body the host already parsed (express.json()) is used as it is.
   */
  middleware: SvcServer['middleware'];
  /** Stops svc (realtime, scripts, store); the host's server keeps running. */
  close(): Promise<DrainOutcome>;
}

/**
 * Runs an app folder inside an existing HTTP server (Deployd's `attach`): REST and /svc.js through
 * `middleware`, Socket.IO on the host's server and port. The host listens.
 *
 * @example
 * const server = http.createServer(expressApp);
 * const svc = await attachApp(server, { appDir: './backend', env: 'production' });
 * expressApp.use(svc.middleware);
 * server.listen(3000);
 */
export async function attachApp(httpServer: Server, options: AttachOptions): Promise<AttachedApp> {
  const built = await buildApp(options, httpServer);
  try {
    await built.attachRealtime();
    await built.startMetrics();
  } catch (err) {
    await built.close();
    throw err;
  }
  return { server: built.server, middleware: built.server.middleware, close: () => built.close() };
}

/** A store given by the caller (StartOptions.store): everything of it but close(), which is the caller's. */
function keptOpen(store: Store): Store {
  return forwardStore(store, { close: () => Promise.resolve() });
}

/** The realtime sockets open in this process, when the transport is Socket.IO's. */
function socketsOf(realtime: Realtime): number | undefined {
  const io = (realtime as { io?: { of(name: string): { sockets: { size: number } } } }).io;
  return io?.of('/').sockets.size;
}
