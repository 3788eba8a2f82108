import type { FilesSettings } from './fileStorage.js';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { isPlainObject } from '@svc/core';
import { DEFAULT_EMBEDDED_ENGINE } from '@svc/core';
import type { EmbeddedEngine, HttpLimits, Logger, ResourceConfig } from '@svc/core';
import { validateAppJson } from './appSchema.js';
import type { OutboundSettings } from './scriptOutbound.js';

/** app.json: every key optional. */
export interface AppSettings {
  /** Non-root GET /<c>/count: true for every collection, or a list of collection names. */
  publicCount?: boolean | string[];
  /** Largest request body in bytes (default 1 MB). */
  bodyLimit?: number;
  /** Session idle time in seconds (default 30 days). */
  sessionIdleSeconds?: number;
  cors?: { origins?: '*' | string[]; crossSiteCookies?: boolean };
  methodOverrideKey?: string;
  /**
   * Script limits: per run (memoryLimitMb, timeoutMs), per request and every internal call it
   * causes (requestCpuMs, requestWallMs), waiting runs (queueLimit), the largest
   * `$limitRecursion` of a non-root request (recursionCap). See docs/event-scripts.md.
   */
  scripts?: {
    memoryLimitMb?: number;
    timeoutMs?: number;
    isolates?: number;
    requestCpuMs?: number;
    requestWallMs?: number;
    queueLimit?: number;
    recursionCap?: number;
    /** npm packages of the app's node_modules that scripts may require() (bundled at start). */
    modules?: string[];
  };
  /** MongoDB (--db): how long an operation may take before the request answers 503, ms. */
  databaseTimeoutMs?: number;
  /**
   * Applying migrations at start (docs/migrations.md): how long the lock holds without a renewal
   * (`leaseMs`, default 120 s) and, on MongoDB, how long one database call of a migration may take
   * (`timeoutMs`, default 10 minutes: a busy database is waited for, not given up on).
   */
  migrations?: { leaseMs?: number; timeoutMs?: number };
  /** `$expand` and filters across relations: levels (default 2, at most 4), objects per relation and level, ids a filter may match. */
  relations?: { expandDepth?: number; maxExpanded?: number; maxFilterIds?: number };
  /** GET /<c>/aggregate: groups answered, objects read, time in ms; beyond them 413. */
  aggregate?: { maxGroups?: number; maxScanned?: number; timeoutMs?: number };
  /**
   * Event scripts' http, https and fetch: who besides the public Internet may be reached
   * (`allow`: addresses, CIDR ranges, host names) and the limits of each call and of a request's
   * calls. See docs/event-scripts.md.
   */
  outbound?: OutboundSettings;
  /** bcrypt cost of user passwords (default 10). */
  passwordCost?: number;
  /** Failed logins allowed per username and per client address (default 10 a minute). */
  loginRateLimit?: { max?: number; windowSeconds?: number; maxPerAddress?: number; slowdownMs?: number };
  /** false: no administration dashboard at /dashboard/ (default true). */
  dashboard?: boolean;
  /**
   * false: every shortcut of the read side off (answers from kept texts, static script plans...):
   * each request takes the plain path. The same answers, more CPU; for diagnosing. Default true.
   */
  fastPaths?: boolean;
  /** Timeouts and connection caps of the server (defaults: DEFAULT_HTTP_LIMITS of @svc/core). */
  http?: HttpLimits;
  /** Health check paths (defaults /healthz and /readyz; false: not served). */
  health?: { livePath?: string | false; readyPath?: string | false };
  /** Socket.IO caps, per process: open sockets per client address (default 100) and in all (default 10000); 0: no cap. */
  realtime?: {
    maxSocketsPerAddress?: number;
    maxSockets?: number;
    maxLiveQueriesPerSocket?: number;
    maxLiveQueriesPerUser?: number;
    liveReplay?: number;
    liveBufferedPackets?: number;
  };
  /**
   * The embedded store: fsync each commit before acknowledging it (default false; docs/deploying.md);
   * `engine` "sqlite" (the default) is the on-disk engine (docs/embedded-engine.md), "files" the
   * old store kept in memory (kept while apps move: an app's old files are converted at its first
   * start on the engine). `cacheMb` / `mmapMb`: the engine's memory (SQLite's page cache, the
   * memory map of its file; docs/embedded-engine.md, "Memory").
   */
  embeddedStore?: { fsync?: boolean; engine?: 'files' | 'sqlite'; cacheMb?: number; mmapMb?: number };
  /**
   * The start of every Redis key and channel of this app (realtime, live queries, login limits,
   * scheduled-job locks), so that several apps can share one Redis. Default "svc".
   */
  redisPrefix?: string;
  /**
   * Scheduled backups into <app>/backups (svc backup's format): every intervalMinutes, the newest
   * `keep` kept (default 7); each also stored as backups/<file> in the Bucket resource `bucket`.
   */
  backups?: { intervalMinutes?: number; keep?: number; bucket?: string };
  /** Where file properties keep their files (default <app>/data/files) and their orphan sweep: docs/files.md. */
  files?: FilesSettings;
  /**
   * The reverse proxies in front of the server, whose X-Forwarded-For / Forwarded and
   * X-Forwarded-Proto name the client: addresses and CIDR blocks ("loopback" for 127.0.0.0/8 and
   * ::1), or a hop count. Default: none. See docs/deploying.md.
   */
  trustProxy?: string[] | number;
  /**
   * Prometheus metrics (off unless present): at `path` (default /metrics) of the app's port for
   * root requests, or on a port of their own (`port`, on `host`, default 127.0.0.1) without a key.
   */
  metrics?: { enabled?: boolean; path?: string; port?: number; host?: string };
  /** The access log: on unless `access: false`; health checks only with `health: true`. */
  log?: { access?: boolean; health?: boolean };
  [key: string]: unknown;
}

/** One resource folder of an app. */
export interface ResourceFolder {
  /** '/todos', '/a/b'. */
  path: string;
  dir: string;
  config: ResourceConfig;
  /** The event script files present: file name -> source. */
  scripts: Map<string, string>;
}

/** An app folder as read from disk. */
export interface AppFolder {
  dir: string;
  settings: AppSettings;
  resources: ResourceFolder[];
  /** Dependencies of the app's package.json (resource-type packages). */
  dependencies: string[];
}

const RESOURCE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

/**
 * Type names Deployd's modules wrote in config.json, and the svc type each is: dpd-event wrote
 * "EventResource" (its class name) where svc says "Event". `svc migrate-deployd` rewrites them;
 * an app that was not migrated loads all the same.
 */
export const DEPLOYD_TYPE_NAMES: Readonly<Record<string, string>> = { EventResource: 'Event' };

/**
 * Reads an app folder: app.json (optional), package.json (optional) and every resource folder
 * under resources/ that holds a config.json, nested folders included. Deployd apps are read as
 * they are: unknown files are reported, not refused.
 */
export async function loadApp(dir: string, logger: Logger): Promise<AppFolder> {
  if (!existsSync(dir)) throw new Error(`app folder ${dir} does not exist`);
  const appJson = await readJson(join(dir, 'app.json'));
  if (appJson !== undefined) validateAppJson(join(dir, 'app.json'), appJson);
  const settings = (appJson ?? {}) as AppSettings;
  const pkg = (await readJson(join(dir, 'package.json'))) as { dependencies?: Record<string, string> } | undefined;
  const resourcesDir = join(dir, 'resources');
  const resources: ResourceFolder[] = [];
  if (existsSync(resourcesDir)) await collect(resourcesDir, resourcesDir, resources, logger);
  resources.sort((a, b) => a.path.localeCompare(b.path));
  return { dir, settings, resources, dependencies: Object.keys(pkg?.dependencies ?? {}) };
}

/** app.json alone, checked (what the transfer commands need without loading the resources). */
export async function readAppSettings(dir: string): Promise<AppSettings> {
  const appJson = await readJson(join(dir, 'app.json'));
  if (appJson !== undefined) validateAppJson(join(dir, 'app.json'), appJson);
  return (appJson ?? {}) as AppSettings;
}

/** Which embedded store keeps the app's data folder (app.json `embeddedStore.engine`). */
export function embeddedEngineOf(settings: AppSettings): EmbeddedEngine {
  return settings.embeddedStore?.engine ?? DEFAULT_EMBEDDED_ENGINE;
}

async function collect(root: string, dir: string, out: ResourceFolder[], logger: Logger): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  const configFile = join(dir, 'config.json');
  if (dir !== root && entries.some((e) => e.isFile() && e.name === 'config.json')) {
    const segments = relative(root, dir).split(sep);
    for (const s of segments) if (!RESOURCE_NAME.test(s)) throw new Error(`resource folder name "${s}" is not allowed (letters, digits, - and _)`);
    const config = (await readJson(configFile)) as ResourceConfig | undefined;
    if (!isPlainObject(config)) throw new Error(`${configFile}: must be a JSON object with a "type", such as {"type": "Collection"}`);
    if (typeof config.type !== 'string' || config.type === '') throw new Error(`${configFile}: "type" is missing (a resource type such as "Collection" or "UserCollection")`);
    const svcType = Object.hasOwn(DEPLOYD_TYPE_NAMES, config.type) ? DEPLOYD_TYPE_NAMES[config.type] : undefined;
    if (svcType !== undefined) {
      logger.info(`resource ${segments.join('/')}: type ${config.type} is Deployd's name of ${svcType}; loaded as ${svcType} (svc migrate-deployd renames it)`);
      config.type = svcType;
    }
    const scripts = new Map<string, string>();
    for (const e of entries) {
      if (e.isFile() && e.name.endsWith('.js')) scripts.set(e.name, await readFile(join(dir, e.name), 'utf8'));
    }
    out.push({ path: `/${segments.join('/')}`, dir, config, scripts });
  }
  for (const e of entries) {
    if (e.isDirectory()) await collect(root, join(dir, e.name), out, logger);
  }
}

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Error(`${file}: invalid JSON (${(err as Error).message})`, { cause: err });
  }
}
