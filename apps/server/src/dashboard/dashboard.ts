import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { crashPoint, isLocalHostName, isPlainObject, isSvcError, SvcError, validateSettings, withoutPaths } from '@svc/core';
import type { Context, Logger, Reply, Resource, ResourceConfig, ResourceType, SettingsSchema, Store } from '@svc/core';
import type { AppFolder } from '../loadApp.js';
import type { AppScripts } from '../scripts.js';
import { COLLECTION_EVENT_FILES } from '../scripts.js';
import type { Feed, FeedEvent } from './feed.js';
import { BUILT_IN_TYPES, describeApp, eventFilesOf } from './describe.js';
import { parseLogFilter } from '@svc/dashboard';
import type { LogFilter } from '@svc/dashboard';
import { newCollectionConfig } from '../defaultRules.js';
import { tryAccess } from './tryAccess.js';
import { clearIntent, dropRenameMigrations, ensureRenameMigrations, finishObjects, moveFolder, moveObjects, notMoved, readIntent, renameCollections, syncDir, writeIntent } from './renameJournal.js';
import type { RenameIntent } from './renameJournal.js';
import { resolveEnvReferences } from '../envReferences.js';
import type { ExportSource } from '../storeTransfer.js';
import type { Exclusive, StoreGate } from '../storeGate.js';
import { BACKUP_FILE, createBackupsApi } from './dashboardBackups.js';
import { accountsApi, redactSecrets, resetTwoFactor, restoreSecrets, withoutEnvValues } from './dashboardAccounts.js';
import type { AccountsDeps } from './dashboardAccounts.js';

/** What the dashboard needs from the running app. */
export interface DashboardOptions {
  appDir: string;
  env: 'development' | 'production';
  feed: Feed;
  /** The built web app (index.html, app.js, ...); undefined: the API only. */
  assetsDir: string | undefined;
  types: ReadonlyMap<string, ResourceType>;
  scripts: AppScripts;
  store: Store;
  /** Loads the app folder again and serves it; rejects (serving the previous version) when it does not load. */
  reload(): Promise<void>;
  /** The app folder as last loaded. */
  current(): AppFolder;
  /** The text `svc types` writes. */
  typesText(): Promise<string>;
  /** What the Backups page's backups read (as svc backup): the embedded store's files, or MongoDB. */
  backupSource: ExportSource;
  /** One backup or restore at a time (shared with the scheduled backups). */
  exclusive: Exclusive;
  /** The store without its gate, and the gate closed while a backup is restored. */
  rawStore: Store;
  gate: StoreGate;
  logger: Logger;
  /** Tells the server's session listeners (realtime) that a restore ended these sessions. */
  sessionsEnded(ids: string[]): Promise<void>;
  /** The migration files the last reload wrote (development: a change of properties becomes one). */
  writtenMigrations?(): readonly string[];
  /** The resources served now (the Rules tab's "try as this user" asks the live collection). */
  resources(): readonly Resource[];
  /**
   * Follows the collections' changes made by every process (the live queries' change log), while
   * a dashboard stream is open: the data grid then shows other processes' writes too.
   */
  followChanges?(listener: (change: { path: string; kind: 'create' | 'update' | 'delete' | 'resync'; id?: string }) => void): () => void;
}

/** The dashboard resource, plus what the app's shutdown must end (open live streams). */
export interface Dashboard extends Resource {
  closeStreams(): void;
}

/** One file of the built web app. */
interface Asset {
  body: Buffer;
  gzip: Buffer | undefined;
  type: string;
  etag: string;
}

const gzipAsync = promisify(gzip);
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
/**
 * The longest resource name, nested names and their / included: its folder, its data file
 * (`<name>.db`) and its folder in .svc/trash (`<name>-<time>`) stay far below the 255 bytes a
 * file name may have.
 */
const MAX_NAME = 100;
const NAME_RULE = 'letters, digits, - and _, starting with a letter or digit; / between nested names';
/** Live streams a process keeps open at once (each holds a connection). */
const MAX_STREAMS = 16;
/** A stream whose client reads slower than this many bytes behind is closed. */
const MAX_STREAM_BACKLOG = 1 << 20;
const HEARTBEAT_MS = 20_000;
/** The most log entries one GET /dashboard/api/logs answers (the whole ring by default). */
const MAX_LOG_ANSWER = 2000;
const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};
/** The page may load only its own files (and blob: previews of file properties it fetched as root); CodeMirror styles itself with <style> elements. */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/**
 * The administration dashboard at /dashboard/: the web app's files, open to anyone (they hold no
 * data), and its API under /dashboard/api/, root only: with a key of .svc/keys.json in
 * production, from this machine in development. Changes are written to the app folder and served
 * after a reload; a change that does not load is undone and answered 400.
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const streams = new Set<() => void>();
  // The request ids of the dashboard page's calls start with this (given to root only): the Logs
  // page leaves those calls out unless asked (LogFilter.withoutDashboard).
  const ownIdPrefix = `dashboard-${randomBytes(6).toString('hex')}-`;
  let assets: Map<string, Asset> | undefined;
  let editing: Promise<unknown> = Promise.resolve();

  /** One change of the app folder at a time: each applies, reloads, or is undone. */
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const run = editing.then(work, work);
    editing = run.catch(() => undefined);
    return run;
  };

  const backups = createBackupsApi({
    dir: join(options.appDir, 'backups'),
    source: options.backupSource,
    exclusive: options.exclusive,
    restore: { raw: options.rawStore, gate: options.gate, logger: options.logger, sessionsEnded: options.sessionsEnded, resources: options.resources },
  });
  const resourceDir = (name: string): string => join(options.appDir, 'resources', ...name.split('/'));

  /** The built files, read once, with their gzip form and an ETag. */
  async function loadAssets(): Promise<Map<string, Asset>> {
    const out = new Map<string, Asset>();
    if (options.assetsDir === undefined || !existsSync(options.assetsDir)) return out;
    for (const file of await readdir(options.assetsDir)) {
      const ext = file.slice(file.lastIndexOf('.'));
      const type = MIME[ext];
      if (!type) continue;
      const body = await readFile(join(options.assetsDir, file));
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
      out.set(file, { body, type, etag, gzip: type.startsWith('image/png') ? undefined : await gzipAsync(body) });
    }
    return out;
  }

  async function serveAsset(ctx: Context, file: string): Promise<Reply | undefined> {
    assets ??= await loadAssets();
    const asset = assets.get(file);
    if (!asset) {
      if (assets.size === 0) throw new SvcError('NOT_FOUND', 'the dashboard is not built: run pnpm build (or install @svc/dashboard)');
      throw new SvcError('NOT_FOUND', `no dashboard file ${file}`);
    }
    const res = ctx.res;
    if (!res) return { status: 404 };
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    res.setHeader('etag', asset.etag);
    res.setHeader('vary', 'accept-encoding');
    if (ctx.headers['if-none-match'] === asset.etag) {
      res.statusCode = 304;
      res.end();
      return undefined;
    }
    const gzip = asset.gzip !== undefined && /\bgzip\b/.test(String(ctx.headers['accept-encoding'] ?? ''));
    const body = gzip ? (asset.gzip as Buffer) : asset.body;
    res.setHeader('content-type', asset.type);
    if (gzip) res.setHeader('content-encoding', 'gzip');
    res.setHeader('content-length', body.length);
    res.statusCode = 200;
    res.end(ctx.req?.method === 'HEAD' ? undefined : body);
    return undefined;
  }

  /** Refuses what a browser sends on another site's behalf, and (development) other host names. */
  function checkCaller(ctx: Context): void {
    const headers = ctx.headers;
    const host = String(headers.host ?? '');
    const site = headers['sec-fetch-site'];
    if (site === 'cross-site' || site === 'same-site') throw new SvcError('FORBIDDEN', 'the dashboard API answers its own page only');
    const origin = headers.origin;
    if (typeof origin === 'string' && origin !== 'null') {
      let originHost: string;
      try {
        originHost = new URL(origin).host;
      } catch {
        throw new SvcError('FORBIDDEN', 'the dashboard API answers its own page only');
      }
      if (originHost !== host) throw new SvcError('FORBIDDEN', 'the dashboard API answers its own page only');
    }
    // Any key is root in development: a page of another site whose name points at this machine
    // (DNS rebinding) must not get it.
    if (options.env === 'development' && !isLocalHostName(host)) {
      throw new SvcError('FORBIDDEN', 'the development dashboard answers on localhost or 127.0.0.1 only');
    }
  }

  function requireRoot(ctx: Context): void {
    if (!ctx.isRoot) {
      throw new SvcError('UNAUTHORIZED', options.env === 'production' ? 'the dashboard needs the root key (svc showkey prints it)' : 'the dashboard API answers root requests only: from this machine, with any svc-ssh-key header (development)');
    }
  }

  async function reloadOrUndo(undo: () => Promise<void>): Promise<void> {
    try {
      await options.reload();
    } catch (err) {
      await undo();
      await options.reload().catch(() => undefined);
      const message = safeMessage((err as Error).message);
      throw new SvcError('BAD_REQUEST', message, { errors: fieldErrors(message) });
    }
    options.feed.emit({ kind: 'reload', time: new Date().toISOString() });
  }

  function folderOf(name: string) {
    const folder = options.current().resources.find((r) => r.path === `/${name}`);
    if (!folder) throw new SvcError('NOT_FOUND', `no resource ${name}`);
    return folder;
  }

  function typeOf(type: string): ResourceType | undefined {
    return options.types.get(type);
  }

  function checkName(name: unknown, field = 'name'): string {
    if (typeof name !== 'string' || name === '') throw new SvcError('BAD_REQUEST', 'a name is required', { errors: { [field]: 'required' } });
    const trimmed = name.replace(/^\/+|\/+$/g, '');
    // Checked before the file system sees it (a long name failed there, ENAMETOOLONG).
    if (trimmed.length > MAX_NAME) throw new SvcError('BAD_REQUEST', `a resource name has at most ${MAX_NAME} characters (this one has ${trimmed.length}): ${NAME_RULE}`, { errors: { [field]: `at most ${MAX_NAME} characters` } });
    const segments = trimmed.split('/');
    for (const s of segments) {
      if (!SEGMENT.test(s)) throw new SvcError('BAD_REQUEST', `"${s}": ${NAME_RULE}`, { errors: { [field]: 'letters, digits, - and _ only' } });
    }
    if (segments[0]?.toLowerCase() === 'dashboard') throw new SvcError('BAD_REQUEST', 'dashboard is the dashboard\'s own path', { errors: { [field]: 'reserved' } });
    return segments.join('/');
  }

  /** An error's text for an answer: paths relative to the app folder, no other path of the server. */
  function safeMessage(message: string): string {
    return withoutPaths(message.replaceAll(`${options.appDir}/`, '').replaceAll(options.appDir, 'the app folder'));
  }

  async function writeAtomic(file: string, text: string): Promise<void> {
    // The temporary name ends in neither .js nor .json: the development watcher ignores it.
    const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(tmp, text);
    await rename(tmp, file);
  }

  async function create(body: Record<string, unknown>): Promise<Reply> {
    const name = checkName(body.name);
    const type = body.type;
    if (typeof type !== 'string' || (!BUILT_IN_TYPES.has(type) && !typeOf(type))) {
      throw new SvcError('BAD_REQUEST', `unknown resource type ${String(type)}`, { errors: { type: 'not installed' } });
    }
    const dir = resourceDir(name);
    if (existsSync(dir)) throw new SvcError('CONFLICT', `a resource ${name} exists`, { errors: { name: 'taken' } });
    // Paths are case-sensitive, but two differing in case only would not load (the router refuses them).
    const sameButCase = options.current().resources.find((r) => r.path.toLowerCase() === `/${name}`.toLowerCase());
    if (sameButCase) throw new SvcError('CONFLICT', `a resource ${sameButCase.path.slice(1)} exists (names differing in case only are not allowed)`, { errors: { name: 'taken' } });
    let config: ResourceConfig = { type };
    // A new collection starts with write rules (defaultRules.ts): create needs a login, owners change their own.
    if (type === 'Collection' || type === 'UserCollection') config = newCollectionConfig(type, body.owner);
    else {
      // Defaults, then what the form gave (the settings a type requires).
      const schema = typeOf(type)?.settings ?? {};
      for (const [field, spec] of Object.entries(schema)) if (spec.default !== undefined) config[field] = spec.default;
      if (body.settings !== undefined && !isPlainObject(body.settings)) throw new SvcError('BAD_REQUEST', 'settings must be an object', { errors: { settings: 'an object' } });
      for (const [field, value] of Object.entries(body.settings ?? {})) if (field in schema && value !== '' && value !== null) config[field] = value;
      checkSettings(name, schema, config);
    }
    await serial(async () => {
      await finishPending();
      await mkdir(dir, { recursive: true });
      await writeAtomic(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
      await reloadOrUndo(() => rm(dir, { recursive: true, force: true }));
    });
    return { status: 201, body: describe() };
  }

  async function saveConfig(name: string, body: Record<string, unknown>): Promise<Reply> {
    const config = body.config;
    if (!isPlainObject(config)) throw new SvcError('BAD_REQUEST', 'config must be an object', { errors: { config: 'an object' } });
    await writeConfig(name, config as ResourceConfig);
    const written = options.writtenMigrations?.() ?? [];
    return { status: 200, body: { ...describe(), ...(written.length > 0 ? { migrations: written.map((id) => `migrations/${id}.json`) } : {}) } };
  }

  /** The app as the dashboard shows it: secrets written as values in config.json hidden. */
  function describe(): ReturnType<typeof describeApp> {
    const view = describeApp(options.current(), options.types, options.env);
    return { ...view, resources: view.resources.map((r) => ({ ...r, config: redactSecrets(r.config) })) };
  }

  /** The one config path: checked, written, loaded; undone with the server's message when it does not load. */
  async function writeConfig(name: string, config: ResourceConfig): Promise<void> {
    await serial(async () => {
      const folder = folderOf(name);
      if (config.type !== folder.config.type) throw new SvcError('BAD_REQUEST', 'a resource keeps its type: create another one instead', { errors: { type: 'cannot change' } });
      const type = typeOf(folder.config.type);
      if (type) checkSettings(name, type.settings, config as ResourceConfig);
      const file = join(folder.dir, 'config.json');
      const before = await readFile(file, 'utf8');
      // The page shows a secret written as a value hidden (redactSecrets): saved back, it keeps the file's value.
      restoreSecrets(config, JSON.parse(before) as unknown);
      await writeAtomic(file, `${JSON.stringify(config, null, 2)}\n`);
      await reloadOrUndo(() => writeAtomic(file, before)).catch((err: unknown) => {
        throw withoutEnvValues(err, config);
      });
    });
  }

  const accountsDeps: AccountsDeps = { folderOf, saveConfig: writeConfig, serial, reloadOrUndo, writeAtomic, resources: () => options.resources() };

  /**
   * A rename that a failure of the store left unfinished in this process (the next start would
   * finish it too) is finished before any other change of names: a resource created under the old
   * name would otherwise show, then lose, the objects still waiting there.
   */
  async function finishPending(): Promise<void> {
    const intent = await readIntent(options.appDir);
    if (!intent) return;
    const folder = await moveFolder(options.appDir, intent);
    if (folder === 'left') return clearIntent(options.appDir);
    if (options.env === 'development') await ensureRenameMigrations(options.appDir, options.store, intent);
    if (folder === 'moved') await options.reload();
    try {
      await finishObjects(options.appDir, options.store, intent);
    } catch (err) {
      throw new SvcError('UNAVAILABLE', `the rename of ${intent.from} to ${intent.to} is not finished, try again: ${safeMessage((err as Error).message)}`, { cause: err, headers: { 'retry-after': '5' } });
    }
  }

  /**
   * Journaled (see renameJournal.ts): the intent is written first; then a store that can
   * (MongoDB) renames the collections in one step; then the folder is renamed and served; then the
   * objects still under the old name move a batch at a time (the embedded store's, or all when the
   * new name held objects already). A crash anywhere is finished by the next start, so the folder
   * and the objects never stay apart. A batch move is not one transaction: while it runs, an
   * object not yet moved answers 404 under the new name.
   */
  async function renameResource(name: string, body: Record<string, unknown>): Promise<Reply> {
    const to = checkName(body.to, 'to');
    let moved = 0;
    const stuck: string[] = [];
    let renamedBy: string[] = [];
    await serial(async () => {
      await finishPending();
      const folder = folderOf(name);
      const target = resourceDir(to);
      if (existsSync(target)) throw new SvcError('CONFLICT', `a resource ${to} exists`, { errors: { to: 'taken' } });
      if (target.startsWith(`${folder.dir}/`)) throw new SvcError('BAD_REQUEST', 'a resource cannot move into itself', { errors: { to: 'inside itself' } });
      // A collection's objects follow it (Deployd renamed its store collection too), and so do
      // those of collections nested in its folder, which move with it.
      const moves: [string, string][] = options
        .current()
        .resources.filter((r) => (r.path === `/${name}` || r.path.startsWith(`/${name}/`)) && (r.config.type === 'Collection' || r.config.type === 'UserCollection'))
        .map((r) => [r.path.slice(1), to + r.path.slice(name.length + 1)]);
      const intent: RenameIntent = { version: 1, from: name, to, moves, started: new Date().toISOString() };
      await mkdir(join(target, '..'), { recursive: true });
      await writeIntent(options.appDir, intent);
      // Development: the rename is also a migration file per collection (so that production moves
      // its objects too), recorded as applied here, where the journal moves them.
      const written = options.env === 'development' ? await ensureRenameMigrations(options.appDir, options.store, intent) : [];
      crashPoint('rename:intent');
      // Before the folder: nothing serves the new name yet (see renameCollections).
      moved += await renameCollections(options.store, moves);
      crashPoint('rename:collections');
      // Undone the same journaled way (a crash during the undo finishes the undo), one object at a
      // time: the previous version serves the old name meanwhile, renameCollections must not drop it.
      const back: RenameIntent = { ...intent, from: to, to: name, moves: moves.map(([a, b]) => [b, a]) };
      try {
        await rename(folder.dir, target);
      } catch (err) {
        await dropRenameMigrations(options.appDir, options.store, written);
        if (moved === 0) await clearIntent(options.appDir);
        else {
          await writeIntent(options.appDir, back);
          await finishObjects(options.appDir, options.store, back);
        }
        throw err;
      }
      await syncDir(join(target, '..'));
      await syncDir(join(folder.dir, '..'));
      crashPoint('rename:folder');
      await reloadOrUndo(async () => {
        await writeIntent(options.appDir, back);
        await rename(target, folder.dir);
        await finishObjects(options.appDir, options.store, back);
        await dropRenameMigrations(options.appDir, options.store, written);
      });
      crashPoint('rename:reloaded');
      try {
        for (const [from, into] of moves) moved += await moveObjects(options.store, from, into, stuck);
      } catch (err) {
        throw new SvcError('UNAVAILABLE', `renamed to ${to}; moving its objects stopped after ${moved}: ${safeMessage((err as Error).message)}; the rest follow at the next change of names in the dashboard or the next start`, { cause: err, headers: { 'retry-after': '5' } });
      }
      crashPoint('rename:moved');
      await clearIntent(options.appDir);
      renamedBy = written;
    });
    return { status: 200, body: { ...describe(), moved, ...(renamedBy.length > 0 ? { migrations: renamedBy.map((id) => `migrations/${id}.json`) } : {}), ...(stuck.length > 0 ? { notMoved: stuck.length, message: notMoved({ from: name, to }, stuck) } : {}) } };
  }

  async function deleteResource(name: string): Promise<Reply> {
    let trash = '';
    await serial(async () => {
      await finishPending();
      const folder = folderOf(name);
      // Kept, not destroyed: a deleted resource's folder (its scripts) waits in .svc/trash, its
      // objects in the store. One rename: a crash leaves the folder either here or there.
      trash = join(options.appDir, '.svc', 'trash', `${name.replace(/\//g, '__')}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
      await mkdir(join(trash, '..'), { recursive: true });
      await rename(folder.dir, trash);
      await syncDir(join(trash, '..'));
      await syncDir(join(folder.dir, '..'));
      crashPoint('delete:folder');
      await reloadOrUndo(() => rename(trash, folder.dir));
    });
    return { status: 200, body: { ...describe(), trash: trash.slice(options.appDir.length + 1) } };
  }

  function eventFile(name: string, file: string): { dir: string; file: string; event: string } {
    const folder = folderOf(name);
    const allowed = eventFilesOf(folder.config.type, options.types);
    if (!allowed.includes(file)) throw new SvcError('NOT_FOUND', `${folder.config.type} has no event ${file}; it has ${allowed.join(', ') || 'none'}`);
    return { dir: folder.dir, file: join(folder.dir, file), event: file.slice(0, -3) };
  }

  async function saveEvent(name: string, fileName: string, body: Record<string, unknown>): Promise<Reply> {
    const source = body.source;
    if (typeof source !== 'string') throw new SvcError('BAD_REQUEST', 'source must be a string', { errors: { source: 'a string' } });
    await serial(async () => {
      const { file, event } = eventFile(name, fileName);
      const problem = options.scripts.check(source, `resources/${name}/${fileName}`, event);
      if (problem) throw new SvcError('BAD_REQUEST', `line ${problem.line ?? '?'}: ${problem.message}`, { errors: { source: `line ${problem.line ?? '?'}${problem.column !== undefined ? `:${problem.column}` : ''}: ${problem.message}` } });
      const before = existsSync(file) ? await readFile(file, 'utf8') : undefined;
      if (source.trim() === '') {
        if (before !== undefined) await unlink(file);
      } else {
        await writeAtomic(file, source);
      }
      await reloadOrUndo(async () => {
        if (before === undefined) await rm(file, { force: true });
        else await writeAtomic(file, before);
      });
    });
    return { status: 200, body: describe() };
  }

  async function readEvent(name: string, fileName: string): Promise<Reply> {
    const { file } = eventFile(name, fileName);
    return { status: 200, body: { source: existsSync(file) ? await readFile(file, 'utf8') : '' } };
  }

  function check(body: Record<string, unknown>): Reply {
    const { source, event } = body;
    if (typeof source !== 'string' || typeof event !== 'string') throw new SvcError('BAD_REQUEST', 'source and event are required', { errors: { source: 'a string' } });
    const problem = options.scripts.check(source, `${String(body.name ?? 'script')}/${event}.js`, event);
    return { status: 200, body: problem ? { ok: false, problem } : { ok: true } };
  }

  async function trial(ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    const { source, event, name } = body;
    if (typeof source !== 'string' || typeof event !== 'string' || typeof name !== 'string') {
      throw new SvcError('BAD_REQUEST', 'name, event and source are required', { errors: { source: 'a string' } });
    }
    const object = body.object ?? {};
    const previous = body.previous ?? {};
    if (!isPlainObject(object) || !isPlainObject(previous)) throw new SvcError('BAD_REQUEST', 'the sample object must be a JSON object', { errors: { object: 'a JSON object' } });
    const me = body.me;
    const query = body.query ?? {};
    if ((me !== undefined && me !== null && !isPlainObject(me)) || !isPlainObject(query)) throw new SvcError('BAD_REQUEST', 'me and query must be JSON objects', { errors: { me: 'a JSON object' } });
    const folder = folderOf(name);
    if (!eventFilesOf(folder.config.type, options.types).includes(`${event}.js`)) throw new SvcError('BAD_REQUEST', `${folder.config.type} has no event ${event}`);
    const outcome = await options.scripts.trial({
      source,
      filename: `resources/${name}/${event}.js (trial)`,
      event,
      object,
      previous,
      ...(isPlainObject(me) ? { me } : {}),
      query,
      parent: ctx,
    });
    return { status: 200, body: outcome };
  }

  function stream(ctx: Context): Reply | undefined {
    const res = ctx.res;
    const req = ctx.req;
    if (!res || !req) return { status: 400, body: new SvcError('BAD_REQUEST', 'streams are HTTP only').toJSON() };
    if (streams.size >= MAX_STREAMS) throw new SvcError('TOO_MANY_REQUESTS', `at most ${MAX_STREAMS} dashboards follow this server at once`);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    const send = (event: FeedEvent): void => {
      if (res.writableLength > MAX_STREAM_BACKLOG) return end();
      res.write(`data: ${JSON.stringify(event)}\n\n`);
    };
    for (const line of options.feed.recentLogs()) send(line);
    const unsubscribe = options.feed.subscribe(send);
    const heartbeat = setInterval(() => res.write(': \n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    const end = (): void => {
      if (!streams.delete(end)) return;
      clearInterval(heartbeat);
      unsubscribe();
      if (streams.size === 0) unfollow?.();
      res.end();
    };
    streams.add(end);
    req.on('close', end);
    followWhileStreaming();
    return undefined;
  }

  /**
   * While a stream is open, every process's changes of the collections come into the feed (the
   * grids reload on them); this process's own writes come into it from the store as well.
   */
  let unfollow: (() => void) | undefined;
  function followWhileStreaming(): void {
    if (unfollow !== undefined || options.followChanges === undefined) return;
    const stop = options.followChanges((change) => {
      const op = change.kind === 'create' ? 'insert' : change.kind === 'delete' ? 'remove' : 'update';
      options.feed.emit({ kind: 'change', collection: change.path.replace(/^\//, ''), op, ...(change.id !== undefined ? { id: change.id } : {}) });
    });
    unfollow = () => {
      stop();
      unfollow = undefined;
    };
  }

  /** The kept log entries passing the query's filter (see parseLogFilter), the newest `limit`. */
  function logs(ctx: Context): Reply {
    let filter: LogFilter;
    try {
      filter = parseLogFilter(ctx.query);
    } catch (err) {
      throw new SvcError('BAD_REQUEST', (err as Error).message);
    }
    // The dashboard's own calls only when asked for (?dashboard=1): they would fill the page.
    if (ctx.query.dashboard !== '1') filter.withoutDashboard = ownIdPrefix;
    const limitText = ctx.query.limit;
    const limit = limitText === undefined ? MAX_LOG_ANSWER : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LOG_ANSWER) throw new SvcError('BAD_REQUEST', `limit must be a whole number from 1 to ${MAX_LOG_ANSWER}`);
    const ring = options.feed.logs;
    return { status: 200, body: { entries: ring.find(filter, limit), kept: ring.size, capacity: ring.maxEntries } };
  }

  /** A root-only request for the resource served at /<name> (Resource.rootApi). */
  async function resourceApi(name: string, parts: string[], ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    const resource = options.resources().find((r) => r.path === `/${name}`);
    if (resource === undefined) throw new SvcError('NOT_FOUND', `no resource ${name}`);
    if (resource.rootApi === undefined) throw new SvcError('NOT_FOUND', `${resource.type} ${name} has no dashboard API`);
    return resource.rootApi({ method: ctx.method, parts, query: ctx.query, body });
  }

  async function api(ctx: Context, path: string[]): Promise<Reply | undefined> {
    checkCaller(ctx);
    const [what, ...rest] = path;
    const method = ctx.method;
    if (what === 'session' && method === 'GET') {
      // Without the key, only what the page needs to ask for it: not even the app's name.
      return { status: 200, body: { env: options.env, root: ctx.isRoot, ...(ctx.isRoot ? { app: basename(options.appDir), requestIdPrefix: ownIdPrefix } : {}) } };
    }
    requireRoot(ctx);
    const body = isPlainObject(ctx.body) ? ctx.body : {};
    if (what === 'app' && method === 'GET') return { status: 200, body: describe() };
    if (what === 'types' && method === 'GET') {
      return { status: 200, body: await options.typesText(), headers: { 'content-type': 'text/plain; charset=utf-8', 'content-disposition': 'attachment; filename="svc-types.ts"' } };
    }
    if (what === 'stream' && method === 'GET') return stream(ctx);
    if (what === 'backups') {
      if (rest.length === 0 && method === 'GET') return { status: 200, body: { store: options.backupSource.kind === 'embedded' ? 'embedded' : options.backupSource.store.kind, backups: await backups.list() } };
      if (rest.length === 0 && method === 'POST') return { status: 201, body: await backups.take() };
      if (rest.length === 1 && (method === 'GET' || method === 'HEAD')) return backups.download(ctx, rest[0] as string);
      if (rest.length === 2 && rest[1] === 'restore' && method === 'POST') {
        if (!BACKUP_FILE.test(rest[0] as string)) throw new SvcError('NOT_FOUND', 'no such backup');
        // Named twice (the path and the body): a stray request restores nothing.
        if (body.confirm !== rest[0]) throw new SvcError('BAD_REQUEST', 'a restore needs {"confirm": "<the backup\'s name>"}', { errors: { confirm: 'the backup\'s name' } });
        const done = await backups.restore(rest[0] as string);
        options.feed.emit({ kind: 'reload', time: new Date().toISOString() });
        return { status: 200, body: done };
      }
    }
    if (what === 'logs' && method === 'GET' && rest.length === 0) return logs(ctx);
    if (what === 'check' && method === 'POST') return check(body);
    if (what === 'try' && method === 'POST') return trial(ctx, body);
    if (what === 'resources') {
      if (rest.length === 0 && method === 'POST') return create(body);
      // resources/<name...>[/events/<file>][/rename][/explain]
      const eventsAt = rest.indexOf('events');
      if (eventsAt > 0 && rest.length === eventsAt + 2) {
        const name = checkName(rest.slice(0, eventsAt).join('/'));
        const file = rest[eventsAt + 1] as string;
        if (method === 'GET') return readEvent(name, file);
        if (method === 'PUT') return saveEvent(name, file, body);
      }
      if (rest.length > 1 && rest[rest.length - 1] === 'rename' && method === 'POST') return renameResource(checkName(rest.slice(0, -1).join('/')), body);
      if (rest.length > 1 && rest[rest.length - 1] === 'explain' && method === 'POST') {
        return { status: 200, body: await tryAccess({ resources: options.resources, store: options.store }, { name: checkName(rest.slice(0, -1).join('/')), body }) };
      }
      // resources/<name...>/-/<parts...>: the resource's own root-only API (a webhook's
      // deliveries). '-' cannot start a resource name, so no nested resource is shadowed.
      const dash = rest.indexOf('-');
      if (dash > 0) return resourceApi(checkName(rest.slice(0, dash).join('/')), rest.slice(dash + 1), ctx, body);
      // resources/<name...>/accounts, resources/<name...>/mail: a UserCollection's Accounts tab.
      const last = rest[rest.length - 1];
      // (A nested resource of that name, /users/mail, keeps its own path.)
      if (rest.length > 1 && (last === 'accounts' || last === 'mail') && !options.current().resources.some((r) => r.path === `/${rest.join('/')}`)) {
        const answer = await accountsApi(accountsDeps, checkName(rest.slice(0, -1).join('/')), last, method, ctx.query, body);
        if (answer) return { status: 200, body: answer };
      }
      if (rest.length > 1 && last === 'reset-mfa' && method === 'POST' && !options.current().resources.some((r) => r.path === `/${rest.join('/')}`)) {
        return { status: 200, body: await resetTwoFactor(options.resources(), checkName(rest.slice(0, -1).join('/')), body) };
      }
      if (rest.length > 0) {
        const name = checkName(rest.join('/'));
        if (method === 'PUT') return saveConfig(name, body);
        if (method === 'DELETE') return deleteResource(name);
        if (method === 'GET') return { status: 200, body: redactSecrets(folderOf(name).config) };
      }
    }
    throw new SvcError('NOT_FOUND', `no dashboard API ${method} /${path.join('/')}`);
  }

  return {
    path: '/dashboard',
    type: 'Dashboard',
    async handle(ctx: Context): Promise<Reply | undefined> {
      if (ctx.internal) throw new SvcError('NOT_FOUND', 'no resource at /dashboard');
      const parts = ctx.parts;
      if (parts[0] === 'api') {
        try {
          return await api(ctx, parts.slice(1));
        } catch (err) {
          if (isSvcError(err)) throw err;
          // A failed read or write of the app folder: its message names the server's files. The
          // log gets it (the error handler logs the cause), the answer only its code.
          const code = (err as NodeJS.ErrnoException).code;
          throw new SvcError('INTERNAL', `the dashboard could not do it${typeof code === 'string' && /^E[A-Z]+$/.test(code) ? ` (${code})` : ''}; the server's log has the details`, { cause: err });
        }
      }
      if (ctx.method !== 'GET') throw new SvcError('METHOD_NOT_ALLOWED', 'the dashboard\'s files are read with GET');
      const url = ctx.req?.url ?? '';
      if (parts.length === 0 && !/^\/dashboard\/(\?|$)/.test(url)) return { status: 301, headers: { location: '/dashboard/' }, body: undefined };
      return serveAsset(ctx, parts.length === 0 ? 'index.html' : parts.join('/'));
    },
    closeStreams() {
      for (const end of [...streams]) end();
    },
  };
}

/** The settings schema's complaints, by field, before anything is written. */
function checkSettings(name: string, schema: SettingsSchema | undefined, config: ResourceConfig): void {
  const errors: Record<string, string> = {};
  // Checked as the server will load it, `${env:NAME}` replaced; only the file is written, and no
  // message quotes a value that came from the environment.
  let resolved: ResourceConfig;
  try {
    resolved = resolveEnvReferences(name, config, schema);
  } catch (err) {
    const message = (err as Error).message;
    const field = /^resource [^:]+: setting (\w+)/.exec(message)?.[1] ?? 'config';
    throw new SvcError('VALIDATION_FAILED', 'some settings are not valid', { errors: { [field]: message.replace(/^resource [^:]+: setting \w+:? ?/, '') } });
  }
  for (const [field, spec] of Object.entries(schema ?? {})) {
    try {
      validateSettings(name, { [field]: spec }, resolved);
    } catch (err) {
      errors[field] = (err as Error).message.replace(/^resource [^:]+: setting \S+ /, '');
    }
  }
  if (Object.keys(errors).length > 0) throw new SvcError('VALIDATION_FAILED', 'some settings are not valid', { errors });
}

/** "resource x: setting port must be ..." -> {port: "must be ..."} for the form. */
function fieldErrors(message: string): Record<string, string> | undefined {
  const match = /setting (\w+) (.*)$/.exec(message) ?? /property (\w+) (.*)$/.exec(message);
  return match ? { [match[1] as string]: match[2] as string } : undefined;
}


export { COLLECTION_EVENT_FILES };
