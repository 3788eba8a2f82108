import { join } from 'node:path';
import { applyMigrations, conversionNote, createEmbeddedStore, createEngineStore, createMongoStore, migrationWriteLimits, describeStep, dryRunDown, dryRunUp, isCollectionName, migrationStatus, undoMigration } from '@svc/core';
import type { DryRunMigration, Logger, MigrationStep, PropertyType, Store } from '@svc/core';
import { embeddedEngineOf, loadApp } from './loadApp.js';
import { MIGRATIONS_DIR, readMigrationFiles, writeMigrationFile } from './migrations.js';

/** Options of {@link migrateCommand}. */
export interface MigrateCommandOptions {
  appDir: string;
  action: string;
  /** A mongodb:// URL; absent: the app's embedded store (the server must be stopped). */
  db?: string;
  dryRun: boolean;
  /** down: the migration to undo (default the newest applied). */
  id?: string;
  /** new: the collection and the steps given as flags. */
  collection?: string;
  steps?: StepFlags;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

/** `svc migrate new`'s step flags, each given any number of times. */
export interface StepFlags {
  rename?: string[];
  remove?: string[];
  add?: string[];
  convert?: string[];
  index?: string[];
  unique?: string[];
  dropIndex?: string[];
}

const TYPES = ['string', 'number', 'boolean', 'object', 'array', 'date', 'relation'];

/** `svc migrate status|up|down|new`: answers the exit code. */
export async function migrateCommand(options: MigrateCommandOptions): Promise<number> {
  const print = (line: string): void => void options.out.write(`${line}\n`);
  if (options.action === 'new') return newMigration(options, print);
  if (!['status', 'up', 'down'].includes(options.action)) throw new Error(`svc migrate ${options.action}: use status, up, down or new`);
  const migrations = await readMigrationFiles(options.appDir);
  const store = await openStore(options);
  try {
    if (options.action === 'status') {
      const list = await migrationStatus(store, migrations);
      if (list.length === 0) print(`no migrations (${MIGRATIONS_DIR}/ holds none, the store records none)`);
      for (const m of list) {
        const state = m.state === 'pending' && m.empty ? 'empty' : m.state;
        const notes = [m.changed ? 'file changed since it was applied (not applied again)' : '', m.fileMissing ? 'applied, but no file has it' : '', m.at && m.state !== 'pending' ? `at step ${m.at.step}, ${m.at.touched} objects of it done` : '', m.error ? `error: ${m.error}` : ''].filter(Boolean);
        print(`${state.padEnd(8)} ${m.id}  (${m.collection})${m.finishedAt ? ` ${m.finishedAt}` : ''}${notes.length ? ` - ${notes.join('; ')}` : ''}`);
        m.steps.forEach((step, i) => print(`           ${i + 1}. ${step}${m.counts?.[i] !== undefined ? `: ${m.counts[i]} objects` : ''}`));
      }
      return list.some((m) => m.state === 'failed') ? 1 : 0;
    }
    const logger = cliLogger(options.err);
    if (options.action === 'up') {
      if (options.dryRun) {
        const report = await dryRunUp(store, migrations);
        if (report.length === 0) print('nothing to apply');
        for (const m of report) printDry(print, m);
        return 0;
      }
      const outcome = await applyMigrations({ store, migrations, logger, ...leaseOf(store) });
      print(`${outcome.applied.length} migration${outcome.applied.length === 1 ? '' : 's'} applied${outcome.blocked.size > 0 ? `; failed: ${[...outcome.blocked.values()].map((b) => b.migration).join(', ')}` : ''}`);
      return outcome.blocked.size > 0 ? 1 : 0;
    }
    if (options.dryRun) {
      printDry(print, await dryRunDown(store, options.id));
      return 0;
    }
    const undone = await undoMigration({ store, migrations, logger, ...leaseOf(store), ...(options.id !== undefined ? { id: options.id } : {}) });
    print(`undid ${undone.id} (${undone.collection}): ${undone.counts.join(', ')} objects changed back by its steps; it is pending again (remove its file, or revert config.json, so that it is not applied at the next start)`);
    return 0;
  } finally {
    await store.close();
  }
}

/** On MongoDB, the lease knows how long the client's writes may take (openStore bounds them). */
function leaseOf(store: Store): { lease?: { writeMs: number } } {
  return store.kind === 'mongodb' ? { lease: { writeMs: migrationWriteLimits().writeMs } } : {};
}

function printDry(print: (line: string) => void, m: DryRunMigration): void {
  print(`${m.id}  (${m.collection})`);
  m.steps.forEach((step, i) => print(`  ${i + 1}. ${step.step}: ${step.objects} objects${step.detail ? ` (${step.detail})` : ''}`));
}

/** The app's store, as the server opens it (app.json's embeddedStore.engine), or MongoDB. */
async function openStore(options: MigrateCommandOptions): Promise<Store> {
  if (options.db) {
    // Bounded as at start (migrationWriteLimits, for the default lease): reads may take 60 s.
    const limits = migrationWriteLimits();
    return createMongoStore({ url: options.db, timeoutMs: 60_000, writeTimeoutMs: limits.writeTimeoutMs, queueTimeoutMs: limits.queueTimeoutMs, maxConnections: limits.maxConnections });
  }
  const app = await loadApp(options.appDir, cliLogger(options.err));
  const dir = join(options.appDir, 'data');
  const warn = (message: string): void => void options.err.write(`${message}\n`);
  // The engine unless app.json chooses the old store (embeddedStore.engine "files").
  return embeddedEngineOf(app.settings) === 'sqlite' ? createEngineStore({ dir, warn }) : createEmbeddedStore({ dir, warn });
}

function cliLogger(err: NodeJS.WritableStream): Logger {
  const line = (text: string): void => void err.write(`${text}\n`);
  return { info: line, warn: (text) => line(`warning: ${text}`), error: (text) => line(`error: ${text}`) };
}

/** `svc migrate new`: a migration file from the step flags (or an empty one to fill in). */
async function newMigration(options: MigrateCommandOptions, print: (line: string) => void): Promise<number> {
  const collection = options.collection;
  if (collection === undefined || !isCollectionName(collection) || collection.startsWith('_')) throw new Error('svc migrate new needs --collection <name> (a resource path without its leading /)');
  const steps = stepsOf(options.steps ?? {});
  const migration = await writeMigrationFile(options.appDir, collection, steps);
  print(`wrote ${MIGRATIONS_DIR}/${migration.id}.json`);
  if (steps.length === 0) print('it has no steps yet: add them (docs/migrations.md); an empty migration is not applied');
  for (const step of steps) print(`  ${describeStep(step)}`);
  print('review it, commit it with config.json; svc migrate up --dry-run counts what it would change, the next start applies it');
  return 0;
}

/** The steps the flags ask for, in the order a migration runs them best (as the dashboard writes them). */
export function stepsOf(flags: StepFlags): MigrationStep[] {
  const pair = (value: string, flag: string, parts: number): string[] => {
    const split = value.split(':');
    if (split.length !== parts || split.some((s) => s === '')) throw new Error(`--${flag} ${value}: expected ${flag === 'rename' ? '<from>:<to>' : flag === 'convert' ? '<property>:<from type>:<to type>' : '<property>:<type>'}`);
    return split;
  };
  const type = (value: string, flag: string): PropertyType => {
    if (!TYPES.includes(value)) throw new Error(`--${flag}: ${value} is not a type (${TYPES.join(', ')})`);
    return value as PropertyType;
  };
  const drops: MigrationStep[] = (flags.dropIndex ?? []).map((property) => ({ op: 'dropIndex', property, unique: false }));
  const renames: MigrationStep[] = (flags.rename ?? []).map((v) => {
    const [from, to] = pair(v, 'rename', 2) as [string, string];
    return { op: 'rename', from, to };
  });
  const converts: MigrationStep[] = (flags.convert ?? []).map((v) => {
    const [property, from, to] = pair(v, 'convert', 3) as [string, string, string];
    return { op: 'convert', property, from: type(from, 'convert'), to: type(to, 'convert'), invalid: 'unset', note: conversionNote(type(from, 'convert'), type(to, 'convert'), 'unset') };
  });
  const removes: MigrationStep[] = (flags.remove ?? []).map((property) => ({ op: 'remove', property, keep: true }));
  const adds: MigrationStep[] = (flags.add ?? []).map((v) => {
    const at = v.indexOf('=');
    const [property, t] = pair(at < 0 ? v : v.slice(0, at), 'add', 2) as [string, string];
    if (at < 0) return { op: 'add', property, type: type(t, 'add') };
    let value: unknown;
    try {
      value = JSON.parse(v.slice(at + 1));
    } catch {
      throw new Error(`--add ${v}: the default after = must be JSON (a text in double quotes: --add 'status:string="new"')`);
    }
    return { op: 'add', property, type: type(t, 'add'), default: value };
  });
  const indexes: MigrationStep[] = [...(flags.index ?? []).map((property) => ({ op: 'addIndex' as const, property, unique: false })), ...(flags.unique ?? []).map((property) => ({ op: 'addIndex' as const, property, unique: true }))];
  return [...drops, ...renames, ...converts, ...removes, ...adds, ...indexes];
}
