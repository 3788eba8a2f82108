import { deepEqual } from '../resources/updates.js';
import type { Doc, Filter, Store, StoreCollection } from '../store/Store.js';
import { pendingOf, readRecords, undoTarget } from './applyMigrations.js';
import type { MigrationRecord, MigrationState } from './applyMigrations.js';
import { convertValue } from './convertValue.js';
import { describeStep, isReversible } from './migration.js';
import type { Migration, MigrationStep } from './migration.js';
import { VALUES_COLLECTION, countDuplicates, scanConversion } from './steps.js';

/** One migration as `svc migrate status` shows it. */
export interface MigrationStatus {
  id: string;
  collection: string;
  /** `pending`: not applied (empty: waits for its steps); the others: its record's state. */
  state: 'pending' | MigrationState;
  steps: string[];
  /** No steps yet: not applied until it has some. */
  empty?: boolean;
  /** Applied, and its file changed since (the change is not applied). */
  changed?: boolean;
  /** Applied to the store, but no file has it any more. */
  fileMissing?: boolean;
  /** Objects changed by each step done. */
  counts?: number[];
  /** Under way or stopped: the step (1-based) and the objects of it done. */
  at?: { step: number; touched: number };
  finishedAt?: string;
  error?: string;
  /** `svc migrate down` can undo it. */
  reversible: boolean;
}

/** Every migration, those of the files and those only the store knows of, in id order. */
export async function migrationStatus(store: Store, migrations: readonly Migration[]): Promise<MigrationStatus[]> {
  const records = await readRecords(store);
  const out: MigrationStatus[] = [];
  const files = new Set(migrations.map((m) => m.id));
  for (const migration of migrations) out.push(statusOf(migration.id, migration.collection, migration.steps, records.get(migration.id), migration.checksum));
  for (const record of records.values()) if (!files.has(record.migration)) out.push({ ...statusOf(record.migration, record.collection, record.steps, record, record.checksum), fileMissing: true });
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function statusOf(id: string, collection: string, steps: readonly MigrationStep[], record: MigrationRecord | undefined, checksum: string): MigrationStatus {
  const base = { id, collection, steps: steps.map(describeStep), reversible: steps.every(isReversible) };
  if (record === undefined) return { ...base, state: 'pending', ...(steps.length === 0 ? { empty: true } : {}) };
  return {
    ...base,
    state: record.state,
    counts: record.counts,
    ...(record.state === 'applied' ? {} : { at: { step: record.step + 1, touched: record.touched } }),
    ...(record.state === 'applied' && record.checksum !== checksum ? { changed: true } : {}),
    ...(record.finishedAt !== undefined ? { finishedAt: record.finishedAt } : {}),
    ...(record.error !== undefined ? { error: record.error } : {}),
  };
}

/** One step of a dry run: what it would do, to how many objects. */
export interface DryRunStep {
  step: string;
  /** Objects the step would change. */
  objects: number;
  /** More about it (values that do not convert, duplicates a unique index refuses). */
  detail?: string;
}

/** A migration of a dry run. */
export interface DryRunMigration {
  id: string;
  collection: string;
  steps: DryRunStep[];
}

/**
 * What `svc migrate up` would do, counted on the store as it is and changing nothing: for each
 * pending migration in order, each step and how many objects it touches. A step after a rename or
 * a removal of the same migrations is counted on the objects under the name they have now.
 */
export async function dryRunUp(store: Store, migrations: readonly Migration[]): Promise<DryRunMigration[]> {
  const pending = pendingOf(migrations, await readRecords(store));
  // Per collection: the name each property has in the store now (null: gone by an earlier step).
  const names = new Map<string, Map<string, string | null>>();
  const out: DryRunMigration[] = [];
  for (const migration of pending) {
    const coll = store.collection(migration.collection);
    const known = names.get(migration.collection) ?? new Map<string, string | null>();
    names.set(migration.collection, known);
    const now = (name: string): string | null => (known.has(name) ? (known.get(name) as string | null) : name);
    const steps: DryRunStep[] = [];
    for (const step of migration.steps) steps.push({ step: describeStep(step), ...(await countUp(store, coll, step, now)) });
    for (const step of migration.steps) {
      if (step.op === 'rename') {
        known.set(step.to, now(step.from));
        known.set(step.from, null);
      } else if (step.op === 'remove') known.set(step.property, null);
    }
    out.push({ id: migration.id, collection: migration.collection, steps });
  }
  return out;
}

async function countUp(store: Store, coll: StoreCollection, step: MigrationStep, now: (name: string) => string | null): Promise<Omit<DryRunStep, 'step'>> {
  const has = (name: string | null): Promise<number> => (name === null ? Promise.resolve(0) : coll.count({ [name]: { $exists: true } }));
  switch (step.op) {
    case 'rename':
      return { objects: await has(now(step.from)) };
    case 'remove':
      return { objects: await has(now(step.property)) };
    case 'add': {
      if (step.default === undefined) return { objects: 0, detail: 'no default: stored objects are left as they are' };
      const name = now(step.property);
      return { objects: name === null ? await coll.count({}) : await coll.count({ [name]: { $exists: false } }) };
    }
    case 'convert': {
      const name = now(step.property);
      if (name === null) return { objects: 0 };
      const scan = await scanConversion(coll, name, step.to, 1000);
      const invalidTouched = step.invalid === 'keep' || step.invalid === 'fail' ? 0 : scan.invalid;
      const detail = scan.invalid === 0 ? undefined : `${scan.invalid} values do not convert (e.g. objects ${scan.examples.join(', ')}): ${step.invalid === 'fail' ? 'the migration would fail' : step.invalid === 'keep' ? 'left as they are' : step.invalid === 'unset' ? 'removed, kept for down' : `set to ${JSON.stringify(step.invalid.set)}`}`;
      return { objects: scan.changed + invalidTouched, ...(detail ? { detail } : {}) };
    }
    case 'addIndex': {
      const name = now(step.property);
      if (!step.unique || name === null) return { objects: 0 };
      const duplicates = await countDuplicates(coll, name, 1000);
      return { objects: 0, ...(duplicates > 0 ? { detail: `${duplicates} objects share a value with another: the unique index would fail` } : {}) };
    }
    case 'dropIndex':
      return { objects: 0 };
    case 'renameCollection':
      return { objects: await store.collection(step.from).count({}) };
  }
}

/** What `svc migrate down` would undo (`id`, or the newest migration; see undoMigration), counted without changing anything. */
export async function dryRunDown(store: Store, id?: string): Promise<DryRunMigration> {
  const record = undoTarget(await readRecords(store), id);
  const coll = store.collection(record.collection);
  const last = record.state === 'applied' ? record.steps.length - 1 : Math.min(record.step, record.steps.length - 1);
  const steps: DryRunStep[] = [];
  for (let i = last; i >= 0; i--) {
    const step = record.steps[i] as MigrationStep;
    steps.push({ step: `undo ${describeStep(step)}`, ...(await countDown(store, coll, record.migration, i, step)) });
  }
  return { id: record.migration, collection: record.collection, steps };
}

async function countDown(store: Store, coll: StoreCollection, migration: string, index: number, step: MigrationStep): Promise<Omit<DryRunStep, 'step'>> {
  const kept = (): Promise<number> => store.collection(VALUES_COLLECTION).count({ m: migration, s: index });
  switch (step.op) {
    case 'rename':
      return { objects: await coll.count({ [step.to]: { $exists: true } }) };
    case 'remove':
      if (!isReversible(step)) return { objects: 0, detail: 'cannot be undone: its values were not kept' };
      return { objects: await kept(), detail: 'values put back where the object has none' };
    case 'add': {
      if (step.default === undefined) return { objects: 0 };
      const value = step.default;
      return { objects: await countWhere(coll, { [step.property]: { $exists: true } }, step.property, (v) => deepEqual(v, value)), detail: 'objects still holding the default lose it' };
    }
    case 'convert': {
      const back = await countWhere(coll, { [step.property]: { $exists: true } }, step.property, (v) => convertValue(v, step.to).kind === 'same' && convertValue(v, step.from).kind === 'changed');
      const restored = await kept();
      return { objects: back + restored, detail: `${back} converted back to ${step.from}, ${restored} values that did not convert put back` };
    }
    case 'addIndex':
    case 'dropIndex':
      return { objects: 0 };
    case 'renameCollection':
      return { objects: await coll.count({}) };
  }
}

async function countWhere(coll: StoreCollection, filter: Filter, name: string, test: (value: unknown) => boolean): Promise<number> {
  let n = 0;
  let cursor: string | null = null;
  for (;;) {
    const page: Doc[] = await coll.find(cursor === null ? filter : { ...filter, id: { $gt: cursor } }, { sort: { id: 1 }, limit: 1000, fields: { id: 1, [name]: 1 } });
    const last = page[page.length - 1];
    if (last === undefined) return n;
    for (const doc of page) if (test(doc[name])) n++;
    cursor = last.id;
  }
}
