import { repeatLimitedLogger } from './repeatLimitedLogger.js';
import type { Server } from 'node:http';
import { join, resolve } from 'node:path';
import { createEmbeddedStore, createMongoStore, createServer, createConsoleLogger } from '@svc/core';
import type { AnyResourceType, DrainOutcome, ExtraRoute, InternalRequest, Logger, Realtime, Resource, ResourceType, Store, SvcServer } from '@svc/core';
import { buildResources } from './buildResources.js';
import { loadInstalledTypes } from './installedTypes.js';
import { createScriptFactory } from './scripts.js';
import { bundleModules, loadScriptModules } from './scriptModules.js';
import { readKeys } from './keys.js';
import { loadApp } from './loadApp.js';
import type { AppFolder } from './loadApp.js';
import { createLiveRealtime, svcJsRoute } from './realtime.js';
import { connectLoginLimits } from './redisLoginLimits.js';
import { watchApp } from './watch.js';
import { createDashboard } from './dashboard/dashboard.js';
import { resumeFolder, resumeObjects } from './dashboard/renameJournal.js';
import { Feed, feedStore, teeLogger } from './dashboard/feed.js';
import { writeTypes } from './typesCommand.js';
import { scheduleBackups } from './scheduledBackups.js';
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
  /** Fails readiness, drains (see {@link CloseOptions}), then closes realtime, scripts and the store. */
  close(options?: CloseOptions): Promise<DrainOutcome>;
}

/** What startApp and attachApp share: the app's server, built but not yet listening. */
interface BuiltApp {
  server: SvcServer;
  env: 'development' | 'production';
  /** Attaches realtime to the server's HTTP server. */
  attachRealtime(): Promise<void>;
  close(options?: CloseOptions): Promise<DrainOutcome>;
}

async function buildApp(options: StartOptions, httpServer?: Server): Promise<BuiltApp> {
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
  const modules = await loadScriptModules(appDir, app.settings.scripts, logger);
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
  const live = createLiveRealtime({ given: options.realtime, redis: options.redis, logger, origins, caps: app.settings.realtime });
  let loginLimits: RedisLoginLimits | undefined;
  const realtime = live.realtime;
  if (options.db) logger.info('connecting to MongoDB (--db)');
  const rawStore: Store = options.db
    ? await createMongoStore({ url: options.db, ...(app.settings.databaseTimeoutMs !== undefined ? { timeoutMs: app.settings.databaseTimeoutMs } : {}) })
    : await createEmbeddedStore({ dir: join(appDir, 'data'), warn: (message) => logger.warn(message), fsync: app.settings.embeddedStore?.fsync === true });
  const store: Store = feedStore(rawStore, feed);
  let stopBackups: (() => Promise<void>) | undefined;
  try {
    if (interrupted) await resumeObjects(appDir, store, interrupted, logger);
    // Every process sharing the Redis counts login attempts together.
    if (options.redis) loginLimits = await connectLoginLimits(options.redis, logger);
    // Scripts reach the server through this before it exists; it is bound right after creation.
    const bound: { server?: SvcServer } = {};
    const request = (input: InternalRequest) => {
      if (!bound.server) return Promise.reject(new Error('internal request before the server started'));
      return bound.server.request(input);
    };
    const rootKeys = await readKeys(appDir);
    if (env === 'production' && rootKeys.length === 0) {
      logger.warn('production without a root key: requests with svc-ssh-key are refused (no root access); create one with: svc keygen');
    }
    const scripts = createScriptFactory({ app, env, logger, realtime, request, modules });
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
          });
    let dashboardShadowed = false;
    // An app folder's resources and the routes that depend on them (/svc.js), at start and on reload.
    const mount = async (folder: AppFolder): Promise<{ resources: Resource[]; routes: ExtraRoute[] }> => {
      const built = await buildResources({ app: folder, store, logger, env, types, scripts, realtime, request });
      scripts.bind(built);
      const routes = [await svcJsRoute(built, logger)];
      // An app's own resource at /dashboard wins (Deployd apps may have one); the dashboard steps aside.
      // In any case (/Dashboard): two resources differing in case only are refused.
      const shadowed = built.some((r) => r.path.toLowerCase() === '/dashboard' || r.path.toLowerCase().startsWith('/dashboard/'));
      if (shadowed && !dashboardShadowed && dashboard) logger.warn('resource dashboard: the app has its own /dashboard, so the administration dashboard is not served');
      dashboardShadowed = shadowed;
      return { resources: dashboard && !shadowed ? [...built, dashboard] : built, routes };
    };
    const { resources, routes } = await mount(app);
    const server = await createServer({
      store,
      resources,
      env,
      logger,
      publicDir: join(appDir, 'public'),
      rootKeys,
      ...(app.settings.bodyLimit !== undefined ? { bodyLimit: app.settings.bodyLimit } : {}),
      ...(app.settings.sessionIdleSeconds !== undefined ? { sessions: { idleSeconds: app.settings.sessionIdleSeconds } } : {}),
      ...(app.settings.methodOverrideKey !== undefined ? { methodOverrideKey: app.settings.methodOverrideKey } : {}),
      cors: { origins },
      crossSiteCookies: app.settings.cors?.crossSiteCookies === true,
      routes,
      ...(loginLimits ? { loginLimits: loginLimits.factory } : {}),
      ...(httpServer ? { httpServer } : {}),
      ...(app.settings.http !== undefined ? { http: app.settings.http } : {}),
      ...(app.settings.trustProxy !== undefined ? { trustProxy: app.settings.trustProxy } : {}),
      health: { ...app.settings.health, checks: [() => scripts.unready()] },
      accessLog: app.settings.log?.access === false ? false : { health: app.settings.log?.health === true },
    });
    bound.server = server;
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
      const bundled = names.length === 0 ? [] : await bundleModules(appDir, names);
      if (bundled.length !== activeModules.length || bundled.some((m, i) => m.name !== activeModules[i]?.name || m.source !== activeModules[i]?.source)) {
        activeModules = await loadScriptModules(appDir, { ...app.settings.scripts, modules: names }, logger);
        scripts.useModules(activeModules);
        if (names.length === 0) logger.info('event scripts may require no module any more');
      }
      const mounted = await mount(next);
      const previous = await server.replaceResources(mounted.resources, mounted.routes);
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
        source: options.db ? { kind: 'store', store: rawStore } : { kind: 'embedded', dir: join(appDir, 'data') },
        intervalMs: backups.intervalMinutes * 60_000,
        keep: backups.keep ?? 7,
        logger,
      });
      logger.info(`backups: every ${backups.intervalMinutes} min into ${join(appDir, 'backups')}, the newest ${backups.keep ?? 7} kept`);
    }
    if (stopWatching) logger.info('development: watching resources/ and app.json; changes apply without a restart (a new type package still needs one)');
    return {
      server,
      env,
      attachRealtime: () => live.attach(server),
      close: async (closeOptions = {}) => {
        stopWatching?.();
        await stopBackups?.();
        dashboard?.closeStreams();
        // Scripts of the requests in flight may still emit: realtime closes once they are answered.
        const outcome = await server.drain({ closeIdle: closeOptions.graceful !== true, afterRequests: () => live.close() });
        await live.close();
        await server.close();
        await loginLimits?.close();
        scripts.close();
        return outcome;
      },
    };
  } catch (err) {
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
    // Any root key works in development (from this machine only), so the development server stays on it.
    const host = options.host ?? (built.env === 'production' ? '0.0.0.0' : '127.0.0.1');
    const port = await server.listen(options.port ?? 2403, host);
    return { server, port, host, url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`, close: built.close };
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
  } catch (err) {
    await built.close();
    throw err;
  }
  return { server: built.server, middleware: built.server.middleware, close: () => built.close() };
}
