import type { Db } from 'mongodb';
import { DuplicateKeyError, deepEqual } from '@svc/core';
import type { Doc, ObjectChange, StagedChange, StoreCollection, UpdateOps } from '@svc/core';
import type { CollectionImportStatus } from '../importStatus.js';
import type { ChangeTarget, RunImportOptions } from './runImport.js';
import { toSvcDoc } from './toPlain.js';
import type { ConvertNotes } from './toPlain.js';
import { TypeTally } from './TypeTally.js';
import { writeCollectionConfig } from './writeCollectionConfig.js';

const MAX_ERRORS = 10;

/**
 * Streams one source collection into the store in batches: the cursor reads the next batch while
 * the previous one is written, so at most two batches are held at a time, whatever the size of
 * the collection. Objects are upserted by id, so running again adds no duplicates.
 */
export async function importCollection(db: Db, entry: CollectionImportStatus, options: RunImportOptions & { onBatch(): void }): Promise<void> {
  entry.state = 'running';
  const tally = new TypeTally();
  const notes: ConvertNotes = { dropped: [], renamedId: false };
  const dropped = new Set<string>();
  const target = options.store.collection(entry.resource);
  // Live queries on the collection hear of each object imported, as of any other write.
  const changes = options.changesOf?.(entry.resource);
  // Into an empty collection nothing needs looking up: inserts only, a duplicate id falls back to
  // a replace. (Lookups are what makes a re-run slower than a first import.)
  const lookup = (await target.count({})) > 0 ? options.store.kind : 'none';
  const cursor = db.collection(entry.source).find({}, { batchSize: options.batchSize });
  let writing: Promise<void> = Promise.resolve();
  let writeError: unknown;
  const flush = async (docs: Doc[]): Promise<void> => {
    await writing;
    if (writeError !== undefined) throw writeError;
    writing = writeBatch(target, docs, entry, lookup, changes).then(options.onBatch, (err: unknown) => {
      writeError = err;
    });
  };
  try {
    let batch: Doc[] = [];
    for await (const raw of cursor) {
      if (options.signal.aborted) throw new Error('import stopped: the server is shutting down');
      const doc = toSvcDoc(raw, notes);
      for (const name of notes.dropped.splice(0)) dropped.add(name);
      tally.add(doc);
      batch.push(doc);
      entry.read++;
      if (batch.length >= options.batchSize) {
        await flush(batch);
        batch = [];
      }
    }
    await flush(batch);
    await writing;
    if (writeError !== undefined) throw writeError;
  } catch (err) {
    entry.state = 'failed';
    throw err;
  } finally {
    await cursor.close();
  }
  const { properties, mixed } = tally.result();
  if (notes.renamedId) properties.originalId ??= { type: 'string' };
  entry.properties = properties;
  entry.mixed = mixed;
  entry.dropped = [...dropped];
  entry.renamedId = notes.renamedId;
  entry.config = await writeCollectionConfig(options.appDir, entry.resource, properties);
  entry.state = 'done';
}

/** Writes in flight at once per batch: MongoDB-compatible servers on SQLite refuse many more. */
const WRITE_CONCURRENCY = 8;

async function writeBatch(target: StoreCollection, docs: Doc[], entry: CollectionImportStatus, kind: string, changes: ChangeTarget | undefined): Promise<void> {
  if (docs.length === 0) return;
  const known = await existingObjects(target, docs, kind);
  await forEachLimit(docs, WRITE_CONCURRENCY, async (doc) => {
    try {
      const before = known.get(doc.id);
      const told = before === undefined ? await insertOrReplace(target, doc, entry, changes) : await replace(target, doc, before, entry, changes);
      // Told as a Collection tells its own writes: every listener (a webhook on creates only wants
      // no reads before deletes, but hears of every write), what was told inside the write waited for.
      if (told !== undefined && changes !== undefined) await changes.tellChanges([told.change], [told.hooks]);
    } catch (err) {
      entry.failed++;
      if (entry.errors.length < MAX_ERRORS) entry.errors.push(`${doc.id}: ${(err as Error).message}`);
    }
  });
}

/**
 * The stored objects having the ids of `docs` ('none': the collection was empty at the start).
 * One `$in` query on a database server; one lookup
 * per id on the embedded store, where those are in-memory index hits while its `$in` scans the
 * whole collection (so a batch would cost time in proportion to the collection's size).
 */
async function existingObjects(target: StoreCollection, docs: Doc[], kind: string): Promise<Map<string, Doc>> {
  if (kind === 'none') return new Map();
  const found =
    kind === 'embedded'
      ? (await Promise.all(docs.map((d) => target.findOne({ id: d.id })))).filter((d): d is Doc => d !== null)
      : await target.find({ id: { $in: docs.map((d) => d.id) } });
  return new Map(found.map((d) => [d.id, d]));
}

/** Runs `fn` on every item, at most `limit` at a time. */
async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** A write of the import and the hooks it was given (told inside it where the store can). */
interface Told {
  change: ObjectChange;
  hooks: StagedChange | undefined;
}

/** Inserts `doc` (or replaces the object written meanwhile); answers the change made. */
async function insertOrReplace(target: StoreCollection, doc: Doc, entry: CollectionImportStatus, changes: ChangeTarget | undefined): Promise<Told | undefined> {
  const hooks = changes?.writeHooks?.('create');
  try {
    const stored = await target.insert(doc, hooks);
    entry.inserted++;
    return { change: { kind: 'create', object: stored }, hooks };
  } catch (err) {
    // Written meanwhile (another run, or two source ids with the same string form).
    if (!(err instanceof DuplicateKeyError) || err.field !== 'id') throw err;
    const current = await target.findOne({ id: doc.id });
    if (current === null) throw err;
    return replace(target, doc, current, entry, changes);
  }
}

/** Makes the stored object equal to `doc`: changed properties set, vanished ones unset; answers the change made, if any. */
async function replace(target: StoreCollection, doc: Doc, before: Doc, entry: CollectionImportStatus, changes: ChangeTarget | undefined): Promise<Told | undefined> {
  if (deepEqual(before, doc)) {
    entry.unchanged++;
    return undefined;
  }
  const { id, ...values } = doc;
  const ops: UpdateOps = {};
  if (Object.keys(values).length > 0) ops.$set = values;
  const gone = Object.keys(before).filter((k) => k !== 'id' && !(k in values));
  if (gone.length > 0) ops.$unset = Object.fromEntries(gone.map((k) => [k, true as const]));
  const hooks = changes?.writeHooks?.('update');
  const updated = await target.update({ id }, ops, undefined, hooks);
  entry.updated++;
  return updated === null ? undefined : { change: { kind: 'update', object: updated, previous: before }, hooks };
}
