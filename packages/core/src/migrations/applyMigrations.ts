import type { Logger } from '../logger.js';
import type { Doc, Store } from '../store/Store.js';
import { acquireLease, LeaseLostError } from './lease.js';
import type { Lease, LeaseOptions } from './lease.js';
import { describeStep, isReversible } from './migration.js';
import type { Migration, MigrationStep } from './migration.js';
import { isUnavailable, VALUES_COLLECTION, stepDown, stepUp } from './steps.js';
import type { StepContext, StepProgress } from './steps.js';

/** The store collection of the migrations' records and lock. */
export const MIGRATIONS_COLLECTION = '_migrations';

/** Where a migration stands in a store. */
export type MigrationState = 'running' | 'applied' | 'failed' | 'undoing';

/** A migration's record in `_migrations` (`id`: `migration:<its id>`). */
export interface MigrationRecord extends Doc {
  migration: string;
  collection: string;
  checksum: string;
  /** The steps as applied (what `down` undoes, even once the file changed or is gone). */
  steps: MigrationStep[];
  state: MigrationState;
  /** The step under way (applying: the next to do; undoing: the one being undone). */
  step: number;
  phase: number;
  cursor: string | null;
  touched: number;
  /** The page of objects being written when the record was written (StepProgress.pending). */
  pending?: StepProgress['pending'];
  /** Objects changed by each step done. */
  counts: number[];
  startedAt: string;
  finishedAt?: string;
  error?: string;
  by: string;
}

/** What applying migrations needs. */
export interface MigrationsOptions {
  store: Store;
  /** Every migration file of the app, read (parseMigration), in id order. */
  migrations: readonly Migration[];
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Objects read and written at a time (default 500). */
  batch?: number;
  lease?: Omit<LeaseOptions, 'onWait'>;
  /** Told after every batch (crash tests stop the process there). */
  onBatch?(where: { migration: string; step: number; phase: number; touched: number }): void;
}

/** A collection not served because a migration of it failed. */
export interface BlockedCollection {
  migration: string;
  error: string;
}

/** What {@link applyMigrations} did. */
export interface ApplyOutcome {
  applied: { id: string; counts: number[] }[];
  /** Collection -> the migration that failed (later ones of the collection were not tried). */
  blocked: Map<string, BlockedCollection>;
}

const recordId = (migration: string): string => `migration:${migration}`;

/** The records of the store's migrations, by migration id. */
export async function readRecords(store: Store): Promise<Map<string, MigrationRecord>> {
  const docs = (await store.collection(MIGRATIONS_COLLECTION).find({ migration: { $exists: true } })) as MigrationRecord[];
  return new Map(docs.map((doc) => [doc.migration, doc]));
}

/** The migrations that still have to be applied (empty ones wait for their steps). */
export function pendingOf(migrations: readonly Migration[], records: ReadonlyMap<string, MigrationRecord>): Migration[] {
  return migrations.filter((m) => m.steps.length > 0 && records.get(m.id)?.state !== 'applied');
}

/**
 * Applies the pending migrations in order, exactly once across the processes sharing the store:
 * under the lock of `_migrations` (acquireLease; a process that finds it taken waits, then finds
 * the work done), each step recorded as it goes (a batch of objects at a time), so that a process
 * killed anywhere is resumed by the next one from the last batch recorded (steps are idempotent:
 * they find the objects still to change). A migration that fails blocks its collection (and the
 * later migrations of it); the others go on.
 */
export async function applyMigrations(options: MigrationsOptions): Promise<ApplyOutcome> {
  const outcome: ApplyOutcome = { applied: [], blocked: new Map() };
  const logger = options.logger;
  if (pendingOf(options.migrations, await readRecords(options.store)).length === 0) {
    warnChanged(options.migrations, await readRecords(options.store), logger);
    return outcome;
  }
  // A holder that lost the lock (it could not renew it in time, and another process took it)
  // stops writing at once, then waits for the lock again and goes on from the records: what the
  // other process applied meanwhile is applied, an interrupted migration is resumed.
  for (let attempt = 1; ; attempt++) {
    try {
      await applyUnderLease(options, outcome);
      return outcome;
    } catch (err) {
      if (!(err instanceof LeaseLostError) || attempt >= MAX_LEASE_LOSSES) throw err;
      logger?.warn(`migrations: ${err.message}; waiting for the lock to go on from where the migrations stand`);
    }
  }
}

/** Times in a row the lock may be lost before a start gives up (each time another process went on with the work). */
const MAX_LEASE_LOSSES = 5;

async function applyUnderLease(options: MigrationsOptions, outcome: ApplyOutcome): Promise<void> {
  const logger = options.logger;
  const lease = await acquireLease(options.store.collection(MIGRATIONS_COLLECTION), {
    ...options.lease,
    onWait: (holder) => logger?.info(`migrations: another process applies them (${holder.owner}, since ${holder.since}); waiting for it`),
  });
  try {
    const records = await readRecords(options.store);
    warnChanged(options.migrations, records, logger);
    for (const migration of pendingOf(options.migrations, records)) {
      const stop = outcome.blocked.get(migration.collection) ?? renamedFrom(migration).map((name) => outcome.blocked.get(name)).find(Boolean);
      if (stop) {
        logger?.error(`migration ${migration.id}: not applied, because migration ${stop.migration} of ${migration.collection} failed before it`);
        continue;
      }
      try {
        const counts = await applyOne(options, migration, records.get(migration.id), lease);
        outcome.applied.push({ id: migration.id, counts });
      } catch (err) {
        // Lost, the record is another process's to write: stop here.
        if (err instanceof LeaseLostError) throw err;
        await lease.hold();
        const error = (err as Error).message;
        await options.store
          .collection(MIGRATIONS_COLLECTION)
          .update({ id: recordId(migration.id) }, { $set: { state: 'failed', error, finishedAt: new Date().toISOString() } })
          .catch(() => undefined);
        logger?.error(`migration ${migration.id} failed: ${error}; collection ${migration.collection} is not served until it applies (fix it, then start again or run svc migrate up)`);
        for (const name of [migration.collection, ...renamedFrom(migration)]) outcome.blocked.set(name, { migration: migration.id, error });
      }
    }
  } finally {
    await lease.release().catch(() => undefined);
  }
}

/**
 * Records a migration as applied without running it: what it does was done another way in this
 * store (the dashboard's journaled rename of a resource moved the objects; the file carries the
 * change to the other stores). A record there already stays as it is.
 */
export async function recordApplied(store: Store, migration: Migration, counts: number[] = []): Promise<void> {
  const now = new Date().toISOString();
  const record: MigrationRecord = { id: recordId(migration.id), migration: migration.id, collection: migration.collection, checksum: migration.checksum, steps: [...migration.steps], state: 'applied', step: migration.steps.length, phase: 0, cursor: null, touched: 0, counts, startedAt: now, finishedAt: now, by: 'recorded' };
  try {
    await store.collection(MIGRATIONS_COLLECTION).insert(record);
  } catch (err) {
    if ((err as Error).name !== 'DuplicateKeyError') throw err;
  }
}

/** Forgets a migration's record (a change undone before it was kept). */
export async function forgetRecord(store: Store, id: string): Promise<void> {
  await store.collection(MIGRATIONS_COLLECTION).remove({ id: recordId(id) });
}

/** Collections whose objects a migration moves into its own. */
function renamedFrom(migration: Pick<Migration, 'steps'>): string[] {
  return migration.steps.flatMap((step) => (step.op === 'renameCollection' ? [step.from] : []));
}

function warnChanged(migrations: readonly Migration[], records: ReadonlyMap<string, MigrationRecord>, logger: MigrationsOptions['logger']): void {
  for (const migration of migrations) {
    const record = records.get(migration.id);
    if (record?.state === 'applied' && record.checksum !== migration.checksum) {
      logger?.warn(`migration ${migration.id} was changed after it was applied to this store: the change is not applied (write a new migration for it)`);
    }
  }
}

async function applyOne(options: MigrationsOptions, migration: Migration, found: MigrationRecord | undefined, lease: Lease): Promise<number[]> {
  const records = options.store.collection(MIGRATIONS_COLLECTION);
  const now = new Date().toISOString();
  let record: MigrationRecord;
  // An undo that was interrupted, or a migration changed since it failed, is applied again from
  // its first step: every step converges (it finds the objects it has still to change).
  if (found === undefined || found.state === 'undoing' || found.checksum !== migration.checksum) {
    record = { id: recordId(migration.id), migration: migration.id, collection: migration.collection, checksum: migration.checksum, steps: [...migration.steps], state: 'running', step: 0, phase: 0, cursor: null, touched: 0, counts: [], startedAt: now, by: lease.owner };
    if (found === undefined) {
      await lease.hold();
      await records.insert(record);
    } else await writeRecord(lease, () => records.update({ id: record.id }, { $set: withoutId(record), $unset: { error: true, finishedAt: true } }));
  } else {
    record = { ...found, state: 'running', by: lease.owner };
    await writeRecord(lease, () => records.update({ id: record.id }, { $set: { state: 'running', by: lease.owner }, $unset: { error: true } }));
    if (found.step > 0 || found.touched > 0) options.logger?.info(`migration ${migration.id}: resuming at step ${found.step + 1} (${found.touched} objects of it done)`);
  }
  const counts = [...record.counts];
  for (let i = record.step; i < migration.steps.length; i++) {
    const step = migration.steps[i] as MigrationStep;
    const start: StepProgress = i === record.step ? { phase: record.phase, cursor: record.cursor, touched: record.touched, pending: record.pending ?? null } : { phase: 0, cursor: null, touched: 0 };
    const started = performance.now();
    const touched = await stepUp(step, context(options, migration.id, migration.collection, i, start, lease));
    counts[i] = touched;
    await writeRecord(lease, () => records.update({ id: record.id }, { $set: { step: i + 1, phase: 0, cursor: null, touched: 0, pending: null, counts } }));
    options.logger?.info(`migration ${migration.id}: step ${i + 1}/${migration.steps.length} ${describeStep(step)}: ${touched} objects changed (${Math.round(performance.now() - started)} ms)`);
  }
  await writeRecord(lease, () => records.update({ id: record.id }, { $set: { state: 'applied', finishedAt: new Date().toISOString() } }));
  return counts;
}

/** Times a write of a migration's record is tried again while the store does not answer in time. */
const RECORD_RETRIES = 8;

/**
 * Writes a migration's record (a `$set`: the same write twice is harmless) under the lease, again
 * while the store does not answer in time: a write's time limit is a quarter of the lease on
 * MongoDB (migrationWriteLimits), which a busy database may exceed now and then.
 */
async function writeRecord(lease: Lease, write: () => Promise<unknown>): Promise<void> {
  for (let failures = 0; ; failures++) {
    await lease.hold();
    try {
      await write();
      return;
    } catch (err) {
      if (!isUnavailable(err) || failures >= RECORD_RETRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250 * (failures + 1)));
    }
  }
}

function context(options: MigrationsOptions, migration: string, collection: string, index: number, start: StepProgress, lease: Lease): StepContext {
  const records = options.store.collection(MIGRATIONS_COLLECTION);
  return {
    store: options.store,
    coll: options.store.collection(collection),
    values: options.store.collection(VALUES_COLLECTION),
    migration,
    index,
    batch: options.batch ?? 500,
    start,
    async progress(at) {
      await writeRecord(lease, () => records.update({ id: recordId(migration) }, { $set: { step: index, phase: at.phase, cursor: at.cursor, touched: at.touched, pending: at.pending ?? null } }));
      // After a batch written (not before it: crash tests count the batches done).
      if (!at.pending) options.onBatch?.({ migration, step: index, phase: at.phase, touched: at.touched });
    },
    hold: () => lease.hold(),
  };
}

/** What {@link undoMigration} undid. */
export interface UndoOutcome {
  id: string;
  collection: string;
  /** Objects changed back, by step (in the file's order). */
  counts: number[];
}

/**
 * `svc migrate down`: undoes the newest migration applied (or `id`, which must be the newest of its
 * collection), step by step from its last, under the lock, recorded as it goes (a second `down`
 * finishes an interrupted one); then its record is removed, so it is pending again. A migration
 * that failed or was interrupted is undone as far as it went. Refused, before anything is changed,
 * when a step cannot be undone (a remove with `keep: false`).
 */
export async function undoMigration(options: MigrationsOptions & { id?: string }): Promise<UndoOutcome> {
  const target = undoTarget(await readRecords(options.store), options.id);
  const lease = await acquireLease(options.store.collection(MIGRATIONS_COLLECTION), {
    ...options.lease,
    onWait: (holder) => options.logger?.info(`migrations: another process holds the lock (${holder.owner}, since ${holder.since}); waiting for it`),
  });
  try {
    const record = (await readRecords(options.store)).get(target.migration);
    if (record === undefined || record.state !== target.state || record.step !== target.step) throw new Error(`migration ${target.migration} changed while waiting for the lock; look at svc migrate status and try again`);
    return await undoOne(options, record, lease);
  } finally {
    await lease.release().catch(() => undefined);
  }
}

/**
 * The migration `svc migrate down` undoes: `id`, or the newest one the store has a record of; it
 * must be the newest of its collection, and every step it would undo must be reversible.
 */
export function undoTarget(records: ReadonlyMap<string, MigrationRecord>, id: string | undefined): MigrationRecord {
  const done = [...records.values()].sort((a, b) => (a.migration < b.migration ? -1 : 1));
  const target = id === undefined ? done[done.length - 1] : records.get(id);
  if (target === undefined) throw new Error(id === undefined ? 'no migration is applied to this store: nothing to undo' : `migration ${id} is not applied to this store`);
  const later = done.filter((r) => r.migration > target.migration && (r.collection === target.collection || renamedFrom(r).includes(target.collection) || renamedFrom(target).includes(r.collection)));
  if (later.length > 0) throw new Error(`migration ${target.migration} is followed by ${later.map((r) => r.migration).join(', ')} of the same collection: undo ${later.length === 1 ? 'it' : 'them'} first`);
  const last = undoStart(target);
  const stuck = target.steps.slice(0, last + 1).findIndex((step) => !isReversible(step));
  if (stuck >= 0) throw new Error(`migration ${target.migration} cannot be undone: step ${stuck + 1} (${describeStep(target.steps[stuck] as MigrationStep)}) kept nothing to put back`);
  return target;
}

/** The last step an undo starts with (those after it were never begun). */
function undoStart(record: MigrationRecord): number {
  if (record.state === 'applied') return record.steps.length - 1;
  return Math.min(record.step, record.steps.length - 1);
}

async function undoOne(options: MigrationsOptions, record: MigrationRecord, lease: Lease): Promise<UndoOutcome> {
  const records = options.store.collection(MIGRATIONS_COLLECTION);
  const first = undoStart(record);
  const resuming = record.state === 'undoing';
  await records.update({ id: record.id }, { $set: { state: 'undoing', step: first, by: lease.owner, ...(resuming ? {} : { phase: 0, cursor: null, touched: 0, pending: null }) } });
  const counts: number[] = [];
  for (let i = first; i >= 0; i--) {
    const step = record.steps[i] as MigrationStep;
    const start: StepProgress = resuming && i === first ? { phase: record.phase, cursor: record.cursor, touched: record.touched, pending: record.pending ?? null } : { phase: 0, cursor: null, touched: 0 };
    counts[i] = await stepDown(step, context(options, record.migration, record.collection, i, start, lease));
    await lease.hold();
    await records.update({ id: record.id }, { $set: { step: i - 1, phase: 0, cursor: null, touched: 0, pending: null } });
    options.logger?.info(`migration ${record.migration}: undid step ${i + 1}/${record.steps.length} ${describeStep(step)}: ${counts[i]} objects changed`);
  }
  await records.remove({ id: record.id });
  await options.store.collection(VALUES_COLLECTION).remove({ m: record.migration });
  return { id: record.migration, collection: record.collection, counts };
}

function withoutId(record: MigrationRecord): Omit<MigrationRecord, 'id'> {
  const { id: _id, ...rest } = record;
  return rest;
}
