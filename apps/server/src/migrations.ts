import { existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { advanceShape, applyMigrations, createMongoStore, DEFAULT_LEASE_MS, migrationWriteLimits, diffShapes, formatMigration, isPlainObject, newMigrationId, parseMigration, pendingOf, readRecords, shapeOf } from '@svc/core';
import type { ApplyOutcome, BlockedCollection, CollectionShape, Logger, Migration, MigrationStep, Store } from '@svc/core';
import type { AppFolder, ResourceFolder } from './loadApp.js';

/** The app's migrations folder: one JSON file per migration, applied in the order of their names. */
export const MIGRATIONS_DIR = 'migrations';

/** Reads every migration file of the app (none without a migrations/ folder), in id order. A file that does not read throws. */
export async function readMigrationFiles(appDir: string): Promise<Migration[]> {
  const dir = join(appDir, MIGRATIONS_DIR);
  if (!existsSync(dir)) return [];
  const names = (await readdir(dir)).filter((name) => name.endsWith('.json')).sort();
  const out: Migration[] = [];
  for (const name of names) out.push(parseMigration(name.slice(0, -'.json'.length), await readFile(join(dir, name), 'utf8')));
  return out;
}

/**
 * Writes a new migration file (a temporary file, synced, renamed into place: never half a file).
 * Answers it as read back.
 */
export async function writeMigrationFile(appDir: string, collection: string, steps: readonly MigrationStep[], now = new Date(), options: { once?: boolean } = {}): Promise<Migration> {
  const dir = join(appDir, MIGRATIONS_DIR);
  await mkdir(dir, { recursive: true });
  const base = newMigrationId(collection, steps, now);
  // `once`: the file of this name is this migration (made from the same time) when it exists.
  if (options.once && existsSync(join(dir, `${base}.json`))) return parseMigration(base, await readFile(join(dir, `${base}.json`), 'utf8'));
  let id = base;
  for (let n = 2; existsSync(join(dir, `${id}.json`)); n++) id = `${base}-${n}`;
  const text = formatMigration(collection, steps);
  // Checked before it is written: a file that would not read is never left behind.
  const migration = parseMigration(id, text);
  const file = join(dir, `${id}.json`);
  // The temporary name ends in neither .js nor .json: the development watcher ignores it.
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(tmp, 'w');
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
  return migration;
}

/** The collections of an app (Collection and UserCollection folders), by store name. */
function collectionsOf(app: AppFolder): Map<string, ResourceFolder> {
  const out = new Map<string, ResourceFolder>();
  for (const folder of app.resources) if (folder.config.type === 'Collection' || folder.config.type === 'UserCollection') out.set(folder.path.slice(1), folder);
  return out;
}

/** What {@link runMigrations} needs. */
export interface MigrationRunOptions {
  appDir: string;
  /** The app folder as it is now (to serve). */
  app: AppFolder;
  /** On a reload: the app folder served until now and the migration files it knew. */
  previous?: { app: AppFolder; migrations: ReadonlySet<string> };
  store: Store;
  env: 'development' | 'production';
  logger: Logger;
  /** Told after each batch of objects a migration changed (crash tests). */
  onBatch?(): void;
  /**
   * Opens the store the pending migrations are applied through, when there are any (closed after):
   * on MongoDB a client of its own whose calls may take minutes (app.json migrations.timeoutMs),
   * so that a batch a busy database takes long over is waited for instead of timed out while the
   * database goes on with it. Default: `store`.
   */
  applyStore?: () => Promise<Store>;
  /** The lock's lease, ms (app.json migrations.leaseMs). */
  leaseMs?: number;
  /** The longest a write of `applyStore` may take (LeaseOptions.writeMs). */
  writeMs?: number;
}

/** What a start or a reload did with the app's migrations. */
export interface MigrationRun {
  /** Collections not served: a migration of theirs failed. */
  blocked: Map<string, BlockedCollection>;
  /** The migration files known now. */
  migrations: Set<string>;
  /** Files written now (development). */
  written: string[];
  /**
   * Whether a blocked collection's migrations are all applied now (another process sharing the
   * store applied them, or svc migrate up): it is then no longer blocked.
   */
  recheck(name: string): Promise<boolean>;
}

/**
 * Migrations at a start or a reload. In development, the changes of each collection's properties
 * become migration files first: on a reload, against the properties served until then (advanced
 * by the migration files that arrived since, so that a `git pull` bringing a change and its file
 * writes nothing more); at a start, only the renames `$renameFrom` names and the defaults
 * `$default` gives (a start cannot tell what changed while nothing ran: `svc migrate new` records
 * such changes). `$renameFrom` and `$default` are then removed from config.json. Production writes nothing: a reload that would need a migration fails.
 * Then the pending migrations are applied (applyMigrations); a store is not touched while the app
 * has no migration file.
 */
export async function runMigrations(options: MigrationRunOptions): Promise<MigrationRun> {
  const { appDir, app, logger } = options;
  let files = await readMigrationFiles(appDir);
  const written: string[] = [];
  const changes = changesToRecord(options, files);
  if (options.env === 'production') {
    const needed = [...changes].filter(([, steps]) => steps.length > 0);
    if (options.previous && needed.length > 0) {
      throw new Error(`resource ${needed[0]?.[0]}: property changes that move stored data (${needed[0]?.[1].map((s) => s.op).join(', ')}) are made in development, where they become migration files (migrations/) to commit and deploy; production applies those at start`);
    }
    warnHints(app, files, logger);
  } else {
    for (const [collection, steps] of changes) {
      if (steps.length === 0) continue;
      const migration = await writeMigrationFile(appDir, collection, steps);
      written.push(migration.id);
      logger.info(`migration ${migration.id}: written to ${MIGRATIONS_DIR}/${migration.id}.json (${steps.length} step${steps.length === 1 ? '' : 's'}); review and commit it with config.json`);
    }
    if (written.length > 0) files = await readMigrationFiles(appDir);
    await dropHints(app, logger);
  }
  const blocked = new Map<string, BlockedCollection>();
  if (files.length > 0) {
    let batches = 0;
    const pending = pendingOf(files, await readRecords(options.store)).length > 0;
    const store = pending && options.applyStore ? await options.applyStore() : options.store;
    let outcome: ApplyOutcome;
    try {
      outcome = await applyMigrations({
        store,
        migrations: files,
        logger,
        lease: { ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}), ...(store !== options.store && options.writeMs !== undefined ? { writeMs: options.writeMs } : {}) },
        onBatch: () => {
          batches++;
          options.onBatch?.();
        },
      });
    } finally {
      if (store !== options.store) await store.close().catch(() => undefined);
    }
    for (const [name, reason] of outcome.blocked) blocked.set(name, reason);
    if (batches > 0 || outcome.applied.length > 0) logger.info(`migrations: ${outcome.applied.length} applied${blocked.size > 0 ? `, ${blocked.size} collection${blocked.size === 1 ? '' : 's'} not served (${[...blocked.keys()].join(', ')})` : ''}`);
  }
  const recheck = async (name: string): Promise<boolean> => {
    if (!blocked.has(name)) return true;
    const ofIt = files.filter((m) => m.collection === name || m.steps.some((step) => step.op === 'renameCollection' && step.from === name));
    if (pendingOf(ofIt, await readRecords(options.store)).length > 0) return false;
    blocked.delete(name);
    logger.info(`migrations: ${name} is served again: its migrations were applied by another process`);
    return true;
  };
  return { blocked, migrations: new Set(files.map((m) => m.id)), written, recheck };
}

/** How long one database call of a migration may take on MongoDB by default (app.json migrations.timeoutMs). */
export const MIGRATION_CALL_MS = 10 * 60_000;

/**
 * runMigrations' options from app.json `migrations`: the lease, and at start on MongoDB (`db`) a
 * client of its own for applying them, whose reads may take minutes (not on a reload: its writes
 * go through the served store, which tells live queries). That client's writes are bounded by the
 * lease (migrationWriteLimits: 8 connections, a write sent within a twentieth of the lease after its
 * lease check or not at all, and limited to a quarter of it in the database).
 */
export function applySettings(settings: { leaseMs?: number; timeoutMs?: number } | undefined, db: string | undefined, reload: boolean): Pick<MigrationRunOptions, 'applyStore' | 'leaseMs' | 'writeMs'> {
  const out: Pick<MigrationRunOptions, 'applyStore' | 'leaseMs' | 'writeMs'> = {};
  if (settings?.leaseMs !== undefined) out.leaseMs = settings.leaseMs;
  if (db !== undefined && !reload) {
    const limits = migrationWriteLimits(settings?.leaseMs ?? DEFAULT_LEASE_MS);
    out.writeMs = limits.writeMs;
    out.applyStore = () => createMongoStore({ url: db, timeoutMs: settings?.timeoutMs ?? MIGRATION_CALL_MS, writeTimeoutMs: limits.writeTimeoutMs, queueTimeoutMs: limits.queueTimeoutMs, maxConnections: limits.maxConnections });
  }
  return out;
}

/** Per collection, the steps its properties' changes need (see runMigrations). */
function changesToRecord(options: MigrationRunOptions, files: readonly Migration[]): Map<string, MigrationStep[]> {
  const out = new Map<string, MigrationStep[]>();
  const before = options.previous ? collectionsOf(options.previous.app) : undefined;
  for (const [name, folder] of collectionsOf(options.app)) {
    const next = shapeOf(folder.config.properties);
    const old = before?.get(name);
    let base: CollectionShape;
    if (old !== undefined && options.previous) {
      const arrived = files.filter((m) => m.collection === name && !options.previous?.migrations.has(m.id)).flatMap((m) => m.steps);
      base = advanceShape(shapeOf(old.config.properties).shape, arrived);
    } else {
      // A start (or a collection new to this reload): only what $renameFrom says, unless a
      // migration file renames that way already.
      base = { ...next.shape };
      for (const [to, from] of Object.entries(next.renames)) {
        if (from in next.shape || renamedBy(files, name, from, to)) continue;
        const shape = base[to];
        if (shape === undefined) continue;
        delete base[to];
        base[from] = shape;
      }
    }
    // A property that is (or was) a file property is left alone: a type change to or from `file`
    // removes or converts nothing (stored files are the file properties' own business).
    const after = { ...next.shape };
    for (const skipped of [...next.skipped, ...(old ? shapeOf(old.config.properties).skipped : [])]) {
      delete base[skipped];
      delete after[skipped];
    }
    out.set(name, diffShapes(base, after, next.renames, defaultsToRecord(name, next.defaults, old, files)));
  }
  return out;
}

/**
 * The `$default` hints still to become migration steps: on a reload, those the previous load did
 * not have already (its migration is written; config.json could not be rewritten); at a start,
 * those no migration file adds with that value.
 */
function defaultsToRecord(collection: string, hints: Record<string, unknown>, old: ResourceFolder | undefined, files: readonly Migration[]): Record<string, unknown> {
  const done = old !== undefined ? shapeOf(old.config.properties).defaults : undefined;
  const out: Record<string, unknown> = {};
  for (const [property, value] of Object.entries(hints)) {
    const seen = done ? Object.hasOwn(done, property) && sameValue(done[property], value) : addedBy(files, collection, property, value);
    if (!seen) out[property] = value;
  }
  return out;
}

function addedBy(files: readonly Migration[], collection: string, property: string, value: unknown): boolean {
  return files.some((m) => m.collection === collection && m.steps.some((s) => s.op === 'add' && s.property === property && sameValue(s.default, value)));
}

const sameValue = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

function renamedBy(files: readonly Migration[], collection: string, from: string, to: string): boolean {
  return files.some((m) => m.collection === collection && m.steps.some((s) => s.op === 'rename' && s.from === from && s.to === to));
}

/** Production: a `$renameFrom` or `$default` no migration file has done is ignored, and said so. */
function warnHints(app: AppFolder, files: readonly Migration[], logger: Logger): void {
  for (const [name, folder] of collectionsOf(app)) {
    const { renames, defaults } = shapeOf(folder.config.properties);
    for (const [to, from] of Object.entries(renames)) {
      if (renamedBy(files, name, from, to)) continue;
      logger.warn(`resource ${name}: property ${to}: "$renameFrom": "${from}" is ignored in production: renames are migration files (start the app in development once, or svc migrate new ${name} --rename ${from}:${to}, and deploy the file)`);
    }
    for (const [property, value] of Object.entries(defaults)) {
      if (addedBy(files, name, property, value)) continue;
      logger.warn(`resource ${name}: property ${property}: "$default" is ignored in production: defaults for stored objects are migration files (start the app in development once, or svc migrate new --collection ${name} --add '${property}:<type>=<value>', and deploy the file)`);
    }
  }
}

/** Development: config.json without its `$renameFrom` and `$default` keys, once their migration is written (atomically). */
async function dropHints(app: AppFolder, logger: Logger): Promise<void> {
  for (const [name, folder] of collectionsOf(app)) {
    if (!hasHint(folder.config.properties)) continue;
    const file = join(folder.dir, 'config.json');
    try {
      const config = JSON.parse(await readFile(file, 'utf8')) as { properties?: Record<string, unknown> };
      for (const def of Object.values(config.properties ?? {})) {
        if (!isPlainObject(def)) continue;
        delete def.$renameFrom;
        delete def.$default;
      }
      const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
      const handle = await open(tmp, 'w');
      try {
        await handle.writeFile(`${JSON.stringify(config, null, 2)}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, file);
    } catch (err) {
      logger.warn(`resource ${name}: its migration is written, but config.json could not be rewritten without $renameFrom and $default (tried again at the next start): ${(err as Error).message}`);
    }
  }
}

function hasHint(properties: unknown): boolean {
  return isPlainObject(properties) && Object.values(properties).some((def) => isPlainObject(def) && (def.$renameFrom !== undefined || def.$default !== undefined));
}
