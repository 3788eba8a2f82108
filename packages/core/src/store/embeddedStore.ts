import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import nedb from '@seald-io/nedb';
import { RE2JS } from 're2js';
import { SvcError } from '../errors.js';
import { DuplicateKeyError, assertCollectionName, AggregateScanError } from './Store.js';
import type { Doc, Filter, FindOptions, IndexSpec, Revised, Store, StoreCollection, StoredTexts, UpdateOps, AggregateRow, AggregateSpec, WriteCondition } from './Store.js';
import { RevisionTable, conditionId, type Revisions } from './internal/revisions.js';
import { groupRows } from './internal/groupRows.js';
import { SEQ, copyDoc, copyValue } from './internal/copy.js';
import { appendThroughOpenHandle } from './internal/nedbAppend.js';
import { HashTree, hashIdIndex } from './internal/hashIdIndex.js';
import { nedbModel } from './internal/nedbModel.js';
import { renameId } from './internal/renameId.js';
import { lockDataFolder } from './internal/dataLock.js';
import { repairTornTail } from './internal/tornTail.js';
import { escapeLineBreaks } from '../lineBreaks.js';
import { readLineBreaksAsText } from './internal/nedbLineBreaks.js';
import { DiskState, diskErrorCode } from './internal/diskError.js';
import { rollbackOnFailedAppend } from './internal/rollbackOnFailedAppend.js';
import { collectionOfDataFile, dataFileOfCollection } from './embeddedSnapshot.js';
import { ENGINE_FILE } from './embedded/engine.js';
import { isSearchFilter, matchesSearch } from '../query/search.js';
import { jsonList } from '../jsonList.js';

/** Options of {@link createEmbeddedStore}. */
export interface EmbeddedStoreOptions {
  /** Folder of the data files, created when missing (`<app>/data`). */
  dir: string;
  /** How often collections written since their last compaction are rewritten; default 5 min. */
  compactionIntervalMs?: number;
  /** Where repairs of data files are reported (a torn last line dropped); default console.warn. */
  warn?: (message: string) => void;
  /**
   * fsync every append before acknowledging it (one per group commit of inserts, one per update
   * or removal): acknowledged writes then survive a power loss too. Default false: they survive a
   * crash of the process, and the operating system writes them out within about 30 s.
   */
  fsync?: boolean;
}

type Raw = { _id: string } & Record<string, unknown>;
type Query = Record<string, unknown>;
// nedb's typings declare an ES default export; the CommonJS module they describe is the class.
const Datastore = nedb as unknown as typeof nedb.default;
type Db = InstanceType<typeof Datastore<Record<string, unknown>>>;

/** nedb's Cursor (lib/cursor.js, untyped): runs a query in the datastore's executor and hands the matches to `mapFn`. */
interface NedbCursor extends PromiseLike<unknown> {
  sort(sort: Record<string, unknown>): NedbCursor;
  skip(n: number): NedbCursor;
  limit(n: number): NedbCursor;
}
type CursorClass = new (db: Db, query: Query, mapFn: (docs: Raw[]) => unknown) => NedbCursor;
const Cursor = createRequire(import.meta.url)('@seald-io/nedb/lib/cursor.js') as CursorClass;
/** nedb's executor: runs the datastore's operations one at a time, in order. */
interface Executor {
  pushAsync<T>(task: () => Promise<T>): Promise<T>;
}
/** An insert waiting for the next group commit. */
interface PendingInsert {
  raw: Raw;
  touched: string[];
  resolve(doc: Doc): void;
  reject(err: unknown): void;
}

const DEFAULT_COMPACTION_MS = 5 * 60_000;
// A $pull is a read then a compare-and-set; this bounds the retries under heavy contention.
const MAX_PULL_ATTEMPTS = 1000;

/**
 * Opens the embedded store: one append-only nedb datafile per collection, `<dir>/<name>.db`
 * (`a/b` is `a.b.db`; `.` cannot occur in a name, so the mapping is one-to-one). A write is
 * acknowledged once its line was appended to the file, so it survives a crash of the process
 * (not of the machine, unless `fsync`: appends are left to the operating system to write out;
 * docs/deploying.md, "Backups and durability"). Collections written to are compacted
 * periodically and on close.
 *
 * A full disk (or quota, ENOSPC/EDQUOT) fails the writes it refuses with 507 STORAGE_FULL and
 * leaves nothing of them: not in the file (a torn append is cut off), not in memory (the cache
 * change is undone). Reads go on, and writes work again as soon as there is room, without a
 * restart. A failing or read-only disk (EIO/EROFS) is the same with 503 STORAGE_FAILED. A
 * compaction that cannot write keeps the old file, which holds every acknowledged write; so does a
 * start on a full disk. The first refusal is logged with the folder (see DiskState).
 */
export async function createEmbeddedStore(options: EmbeddedStoreOptions): Promise<Store> {
  const dir = resolve(options.dir);
  await mkdir(dir, { recursive: true });
  // One process per data folder: a second one would rewrite the files the first appends to.
  const unlock = await lockDataFolder(dir);
  if (existsSync(join(dir, ENGINE_FILE))) {
    await unlock();
    // The app's data went to the engine (converted, or written there): these files would start empty.
    throw new Error(
      `the data folder ${dir} holds ${ENGINE_FILE}, the embedded engine's database, which app.json "embeddedStore": {"engine": "files"} does not read: run on the engine (remove that setting), or move the data back to files with svc export (on the engine) and svc import (on files), then remove ${ENGINE_FILE}`,
    );
  }
  const warn = options.warn ?? ((message: string) => console.warn(message));
  const disk = new DiskState(dir, warn);
  const collections = new Map<string, EmbeddedCollection>();
  const revisions = new RevisionTable(); // of every collection's objects, for conditional writes
  // Two names differing only in case would share one file on a case-insensitive file system.
  const byFoldedName = new Map<string, string>();
  let closed = false;
  const compactAll = (): Promise<void[]> => Promise.all([...collections.values()].map((c) => c.compactIfDirty()));
  const timer = setInterval(() => {
    compactAll().catch((err: unknown) => process.emitWarning(`embedded store compaction failed: ${String(err)}`));
  }, options.compactionIntervalMs ?? DEFAULT_COMPACTION_MS);
  timer.unref();
  return {
    kind: 'embedded',
    collection(name: string): StoreCollection {
      if (closed) throw new Error('the store is closed');
      let collection = collections.get(name);
      if (!collection) {
        assertCollectionName(name);
        const folded = name.toLowerCase();
        const other = byFoldedName.get(folded);
        if (other !== undefined) throw new TypeError(`collection name ${name} differs from ${other} only in case`);
        byFoldedName.set(folded, name);
        collection = new EmbeddedCollection(name, join(dir, dataFileOfCollection(name)), warn, disk, options.fsync === true, revisions.of(name));
        collections.set(name, collection);
      }
      return collection;
    },
    async listCollections(): Promise<string[]> {
      const names = new Set(collections.keys());
      for (const file of await readdir(dir)) {
        const name = collectionOfDataFile(file);
        if (name !== undefined) names.add(name);
      }
      return [...names].sort();
    },
    // Files in this process: open is reachable (a full disk still serves reads, and says so per write).
    async ping(): Promise<void> {
      if (closed) throw new Error('the store is closed');
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      try {
        await compactAll();
      } finally {
        await Promise.all([...collections.values()].map((c) => c.closeFile()));
        await unlock();
      }
    },
  };
}

class EmbeddedCollection implements StoreCollection {
  readonly name: string;
  readonly #db: Db;
  readonly #executor: Executor;
  readonly #closeFile: () => Promise<void>;
  #ready: Promise<void> | undefined;
  /** The datafile was loaded: reads need not wait for #open (one promise turn less each). */
  #loaded = false;
  #dirty = false;
  /** The compaction under way, if any. */
  #compacting: Promise<void> | undefined;
  /** Inserts that arrived while a group commit was being written; the next one writes them all. */
  #pending: PendingInsert[] = [];
  #committing = false;
  /** The insertion number of the last insert (SEQ). */
  #seq = 0;
  /** Revisions (the store's table), advanced when a write is called, in nedb's queue order: a
   *  conditional write compares and queues in one synchronous step. */
  readonly #revisions: Revisions;
  /**
   * Counts writes: raised when one starts and when it ends, so a fact about the stored objects
   * computed while no write was under way holds until the number changes.
   */
  #version = 0;
  /** Writes under way (called and not finished): while none is, the cache may be read at once. */
  #writing = 0;
  /** Every cached object, collected at a #version from the id index `tree` (#inAnyOrder). */
  #everything: { version: number; tree: unknown; raws: Raw[] } | undefined;
  /** Indexed properties known to hold no array in any object, at a #version. */
  readonly #arrayFree = new Map<string, number>();

  readonly #filename: string;
  readonly #warn: (message: string) => void;
  readonly #disk: DiskState;

  constructor(name: string, filename: string, warn: (message: string) => void, disk: DiskState, fsync: boolean, revisions: Revisions) {
    this.name = name;
    this.#revisions = revisions;
    this.#filename = filename;
    this.#warn = warn;
    this.#disk = disk;
    // No corrupt line is tolerated (nedb's default drops up to 10% silently): a torn last line is
    // repaired before loading (see repairTornTail), anything else refuses to start.
    // afterSerialization writes compactions with NEL, U+2028 and U+2029 escaped (appends do the
    // same in appendThroughOpenHandle); readLineBreaksAsText loads files written with them raw.
    this.#db = new Datastore({ filename, corruptAlertThreshold: 0, afterSerialization: escapeLineBreaks, beforeDeserialization: (line: string) => line });
    readLineBreaksAsText(this.#db);
    // Ids are looked up, never walked in order: a hash instead of nedb's tree (see HashTree).
    hashIdIndex(this.#db);
    this.#executor = Reflect.get(this.#db, 'executor') as Executor;
    // A write whose append failed leaves nothing behind, in memory as in the file.
    rollbackOnFailedAppend(this.#db);
    this.#closeFile = appendThroughOpenHandle(this.#db, {
      fsync,
      keptOldFile: (err) => {
        // Loaded from the old file, which holds everything: only its compaction is put off.
        this.#dirty = true;
        this.#disk.refused(err, `${this.#filename}~`);
      },
    });
  }

  /** Closes the datafile's append handle (the store is closing). */
  closeFile(): Promise<void> {
    return this.#closeFile();
  }

  /**
   * Loads the datafile on first use; a failed load fails every later call the same way, except
   * one the disk refused (full, failing), which the next call tries again.
   */
  async #open(): Promise<Db> {
    const ready = (this.#ready ??= this.#load());
    try {
      await ready;
    } catch (err) {
      if (diskErrorCode(err) !== undefined && this.#ready === ready) this.#ready = undefined;
      throw this.#disk.refused(err, this.#filename);
    }
    return this.#db;
  }

  async #load(): Promise<void> {
    const repair = await repairTornTail(this.#filename);
    if (repair.kind === 'dropped') this.#warn(`embedded store: dropped a torn last line (${repair.bytes} bytes, a write that never completed) of ${this.#filename}`);
    try {
      await this.#db.loadDatabaseAsync();
    } catch (err) {
      // Only what nedb could not parse is corruption; a disk or file system error is reported as such.
      if (diskErrorCode(err) !== undefined) throw err;
      const message = err instanceof Error ? err.message : String(err);
      const what = isUnreadableData(err) ? 'is corrupt' : 'could not be loaded';
      throw new Error(`embedded store: ${this.#filename} ${what} (${message}); it was left as it is`, { cause: err });
    }
    // Insertion order: numbers go on from the highest stored; an index keeps objects in that order.
    for (const raw of this.#db.getAllData() as unknown as Raw[]) {
      const n = raw[SEQ];
      if (typeof n === 'number' && n > this.#seq) this.#seq = n;
    }
    if (!indexesOf(this.#db)[SEQ]) {
      try {
        await this.#db.ensureIndexAsync({ fieldName: SEQ });
      } catch (err) {
        // The index is built in memory before nedb writes its line, and rebuilt at every start
        // anyway: a disk with no room for the line need not stop the load.
        if (diskErrorCode(err) === undefined || !indexesOf(this.#db)[SEQ]) throw err;
        this.#dirty = true;
        this.#disk.refused(err, this.#filename);
      }
    }
    this.#loaded = true;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    // One copy out of nedb's cache, projected and re-keyed as it is made (nedb's findAsync would
    // deep-copy every object and the re-keying copy it again). Cached objects are never changed
    // in place (nedb replaces an updated object), so they may be copied after the executor.
    return (await this.#matching(filter, options)).map(projector(options.fields));
  }

  /**
   * The JSON text of what `find(filter, options)` answers (no projection): each object's text is
   * made once and kept while the object is unchanged, so a list is written by joining them.
   */
  async findJson(filter: Filter, options: Omit<FindOptions, 'fields'> = {}): Promise<string> {
    const raws = await this.#matching(filter, options);
    const texts = new Array<string>(raws.length);
    for (let i = 0; i < raws.length; i++) texts[i] = jsonOf(raws[i] as Raw);
    return jsonList(texts);
  }

  /**
   * Groups the cached objects the filter matches (found through the indexes it can use) in the
   * process, reading only the grouped and measured properties, without copying the objects.
   */
  async aggregate(filter: Filter, spec: AggregateSpec): Promise<AggregateRow[]> {
    const started = Date.now();
    // Groups need no order: every object comes from the id hash, not from a walk of the insertion-order tree.
    const raws = isEmpty(toNedbFilter(filter)) ? await this.#inAnyOrder() : await this.#matching(filter, {});
    if (raws.length > spec.maxScanned) throw new AggregateScanError(raws.length);
    return groupRows(raws, spec, { started, idKey: '_id' });
  }

  /** A write starts or ends: facts kept about the stored objects no longer hold (and the list of them is let go). */
  #changed(): void {
    this.#version++;
    this.#everything = undefined;
  }

  /** Every object as nedb caches them, in no particular order. */
  async #inAnyOrder(): Promise<Raw[]> {
    const db = await this.#open();
    return this.#executor.pushAsync(() => {
      // Kept until the next write (or a reset of the index): aggregates over a collection nobody
      // writes meanwhile skip collecting 100,000 objects (3 ms) each time.
      const tree = (indexesOf(db)._id as { tree?: unknown } | undefined)?.tree;
      const kept = this.#everything;
      if (kept !== undefined && kept.version === this.#version && kept.tree === tree) return Promise.resolve(kept.raws);
      const raws = (tree instanceof HashTree ? tree.values() : db.getAllData()) as Raw[];
      this.#everything = { version: this.#version, tree, raws };
      return Promise.resolve(raws);
    });
  }

  /** What `find` answers, each object with its kept JSON text (see findJson). */
  async findWithJson(filter: Filter, options: Omit<FindOptions, 'fields'> = {}): Promise<{ docs: Doc[]; texts: string[] }> {
    const raws = await this.#matching(filter, options);
    const docs: Doc[] = new Array<Doc>(raws.length);
    const texts: string[] = new Array<string>(raws.length);
    for (let i = 0; i < raws.length; i++) {
      const raw = raws[i] as Raw;
      docs[i] = copyDoc(raw);
      texts[i] = jsonOf(raw);
    }
    return { docs, texts };
  }

  /**
   * What `findJson` joins, each object's kept text apart, beside the properties `pick` names
   * (`id` for the id) read off the cached object: `$expand` splices related texts into them
   * without copying the objects (relations/expandTexts.ts).
   */
  findTexts(filter: Filter, options: Omit<FindOptions, 'fields'>, pick: readonly string[]): Promise<StoredTexts> {
    const ids = this.#loaded && this.#writing === 0 && options.sort === undefined && options.anyOrder === true ? idListOnly(toNedbFilter(filter)) : undefined;
    if (ids !== undefined) {
      const found = this.#withIdsKept(ids, options);
      const texts = textsOf(found.raws, found.kept, pick);
      if (found.listedRows !== undefined) texts.listedRows = found.listedRows;
      return Promise.resolve(texts);
    }
    return this.#matching(filter, options).then((raws) => textsOf(raws, undefined, pick));
  }

  /** findTexts of `{id: {$in: ids}}` in any order, at once; undefined while the store loads or a write is under way (see #matching). */
  findTextsOfIdsNow(ids: readonly string[], pick: readonly string[]): StoredTexts | undefined {
    if (!this.#loaded || this.#writing !== 0) return undefined;
    const found = this.#withIdsKept(ids, {});
    const texts = textsOf(found.raws, found.kept, pick);
    if (found.listedRows !== undefined) texts.listedRows = found.listedRows;
    return texts;
  }

  /**
   * `{id: {$in: [...]}}` in the list's order, read at once (no write under way: see #matching),
   * each object with its kept facts; an id named twice is answered once (told by a mark on its
   * facts, which are needed anyway, instead of a Set of the ids), and where each listed id's
   * object is in the answer (StoredTexts.listedRows).
   */
  #withIdsKept(ids: readonly string[], options: Omit<FindOptions, 'fields'>): { raws: Raw[]; kept: Kept[]; listedRows?: number[] } {
    const byId = idLookup(this.#db);
    const mark = ++readMark;
    const raws: Raw[] = [];
    const kept: Kept[] = [];
    const listedRows = new Array<number>(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as string;
      const raw = byId(id);
      if (raw === undefined) {
        listedRows[i] = -1;
        continue;
      }
      const facts = keptOf(raw);
      if (facts.mark !== mark) {
        facts.mark = mark;
        facts.row = raws.length;
        raws.push(raw);
        kept.push(facts);
      }
      listedRows[i] = facts.row;
    }
    const from = options.skip ?? 0;
    if (from === 0 && !options.limit) return { raws, kept, listedRows };
    const to = options.limit ? from + options.limit : undefined;
    return { raws: raws.slice(from, to), kept: kept.slice(from, to) };
  }

  /** The matching objects as nedb caches them, ordered and paged. */
  async #matching(filter: Filter, options: Omit<FindOptions, 'fields'>): Promise<Raw[]> {
    const query = toNedbFilter(filter);
    const ids = byIdsOnly(query);
    if (ids !== undefined && this.#loaded && this.#writing === 0) {
      // `{id: {$in: [...]}}` ($expand's read, a relation's check) while no write is under way: the
      // cache is what the executor would read (nedb changes it only in tasks of writes), so the
      // queue's promise turns are not needed for these few lookups.
      return this.#withIds(this.#db, ids, options);
    }
    const db = await this.#open();
    const from = options.skip ?? 0;
    const to = options.limit ? from + options.limit : undefined;
    const indexes = indexesOf(db);
    const bySeq = indexes[SEQ] as unknown as { getAll(): Raw[] };
    const order = options.sort ? sorter(renameId(options.sort)) : undefined;
    const all = isEmpty(query);
    if (order === undefined && all) {
      // Every object in insertion order (the SEQ index), without matching each against {}.
      return this.#executor.pushAsync(() => Promise.resolve(bySeq.getAll().slice(from, to)));
    }
    if (ids !== undefined) return this.#executor.pushAsync(() => Promise.resolve(this.#withIds(db, ids, options)));
    const walk = order && options.sort ? this.#walkable(renameId(options.sort), indexes, bySeq) : undefined;
    if (walk) {
      // The sort's index holds every object once, in the sort's order: walk it, test the filter,
      // stop at the limit (no sort, no look at what comes after the page).
      return this.#executor.pushAsync(() => Promise.resolve(walkIndex(walk.root, walk.field, walk.direction, query, all, from, to)));
    }
    if (all || !Object.keys(query).some((key) => key !== SEQ && key in indexes)) {
      // No index can narrow it: scan in insertion order (the SEQ index); without a sort, stop at the limit.
      const matches = all ? undefined : matcherOf(query);
      return this.#executor.pushAsync(() => {
        const out: Raw[] = [];
        let seen = 0;
        for (const raw of bySeq.getAll()) {
          if (matches && !matches(raw)) continue;
          if (order === undefined && seen++ < from) continue;
          out.push(raw);
          if (order === undefined && to !== undefined && seen >= to) break;
        }
        return Promise.resolve(order ? order(out).slice(from, to) : out);
      });
    }
    // An index narrows the matches: order those (by the sort, ties and no sort by insertion).
    // nedb's index answers an object once per matching element of an array: once is enough.
    return (await new Cursor(db, query, (raws) => (order ?? insertionOrder)(raws.length > 1 ? [...new Set(raws)] : raws).slice(from, to))) as Raw[];
  }


  /**
   * `{id: {$in: [...]}}`: each id from the _id index, without nedb's matching of every candidate
   * against the $in; in insertion order unless sorted or `anyOrder`.
   */
  #withIds(db: Db, ids: ReadonlySet<string>, options: Omit<FindOptions, 'fields'>): Raw[] {
    const found: Raw[] = [];
    const byId = idLookup(db);
    for (const id of ids) {
      const raw = byId(id);
      if (raw !== undefined) found.push(raw);
    }
    const ordered = options.sort ? sorter(renameId(options.sort))(found) : options.anyOrder === true ? found : insertionOrder(found);
    const from = options.skip ?? 0;
    return from === 0 && options.limit === undefined ? ordered : ordered.slice(from, options.limit ? from + options.limit : undefined);
  }

  /**
   * The index a sort can be answered from by walking it: one property, not dotted, a non-sparse
   * index (every object is in it), and no object holding an array there (nedb indexes each element
   * of an array, and none of an empty one, while a sort compares whole values). Whether any
   * object holds an array is checked by one scan, kept until the next write.
   */
  #walkable(sort: Record<string, unknown>, indexes: Record<string, { unique: boolean } | undefined>, bySeq: { getAll(): Raw[] }): { root: TreeNode; field: string; direction: 1 | -1 } | undefined {
    const keys = Object.keys(sort);
    if (keys.length !== 1) return undefined;
    const field = keys[0] as string;
    if (field.includes('.') || field === SEQ) return undefined;
    const index = indexes[field] as { sparse?: boolean; tree?: { tree?: TreeNode } } | undefined;
    const root = index?.tree?.tree;
    if (!index || index.sparse || !root) return undefined;
    if (this.#arrayFree.get(field) !== this.#version) {
      const version = this.#version;
      for (const raw of bySeq.getAll()) if (Array.isArray(raw[field])) return undefined;
      this.#arrayFree.set(field, version);
    }
    return { root, field, direction: Number(sort[field]) < 0 ? -1 : 1 };
  }

  async findOne(filter: Filter, options: Pick<FindOptions, 'fields'> = {}): Promise<Doc | null> {
    const db = this.#loaded ? this.#db : await this.#open();
    const query = toNedbFilter(filter);
    const project = projector(options.fields);
    const id = typeof query._id === 'string' ? query._id : undefined;
    if (id !== undefined) {
      // A lookup by id: the _id index, in the executor like any read (so in order with writes).
      // Other conditions beside the id (an access rule's, a write's precondition) are tested on
      // that one object: nedb's own planner may pick another index first, and scan every object
      // of an owner who has them all (118 µs instead of 5 at 1,000 objects).
      const rest = byIdOnly(query) === undefined ? matcherOf(query) : undefined;
      // nedb's executor chains on what a task answers: it must be a promise.
      return this.#executor.pushAsync(() => {
        const found = withId(db, id)[0];
        return Promise.resolve(found !== undefined && (rest === undefined || rest(found)) ? project(found) : null);
      });
    }
    return (await new Cursor(db, query, (raws) => (raws.length === 1 ? project(raws[0] as Raw) : null)).limit(1)) as Doc | null;
  }

  /** The kept JSON text of the object with this id, or null (see findJson). */
  findOneJson(id: string): Promise<string | null> {
    const now = this.findOneJsonNow(id);
    return now === undefined ? this.#findOneJsonQueued(id) : Promise.resolve(now);
  }

  findOneJsonNow(id: string): string | null | undefined {
    if (!this.#loaded || this.#writing !== 0) return undefined;
    // No write under way: the cache is what the executor would read (nedb changes it only in
    // tasks of writes), so the queue's promise turns are not needed.
    const found = withId(this.#db, id);
    return found.length > 0 ? jsonOf(found[0] as Raw) : null;
  }

  findOneWithJsonNow(id: string): { doc: Doc; text: string } | null | undefined {
    if (!this.#loaded || this.#writing !== 0) return undefined;
    const found = withId(this.#db, id);
    if (found.length === 0) return null;
    const raw = found[0] as Raw;
    return { doc: copyDoc(raw), text: jsonOf(raw) };
  }

  async #findOneJsonQueued(id: string): Promise<string | null> {
    const db = await this.#open();
    return this.#executor.pushAsync(() => {
      const found = withId(db, id);
      return Promise.resolve(found.length > 0 ? jsonOf(found[0] as Raw) : null);
    });
  }

  async findRevised(id: string): Promise<Revised | null> {
    const db = await this.#open();
    // Counted when the read is queued: every write queued before it is in what it reads, and
    // every write queued after it has advanced the count beyond this one.
    const revision = this.#revisions.of(id);
    return this.#executor.pushAsync(() => {
      const found = withId(db, id)[0];
      return Promise.resolve(found === undefined ? null : { doc: copyDoc(found), revision });
    });
  }

  async count(filter: Filter): Promise<number> {
    // Through the same matching as find: nedb's own count counts an object once per matching
    // element of an indexed array.
    return (await this.#matching(filter, {})).length;
  }

  /**
   * Group commit: an insert that arrives while another one is being written waits, and every
   * insert that waited is written by the next commit as one nedb batch (one append). Each insert is
   * acknowledged once the append holding it completed.
   */
  async insert(doc: Doc): Promise<Doc> {
    // nedb's loader rebuilds the cache in a plain object keyed by id: `__proto__` would set its
    // prototype and the object would vanish at the next start. Refused here, where it is reported.
    if (doc.id === '__proto__') throw new TypeError('the embedded store cannot keep an object whose id is "__proto__" (it would be lost at the next start); give it another id');
    await this.#open();
    const { id, ...rest } = doc;
    this.#dirty = true;
    this.#changed();
    this.#writing++;
    this.#revisions.advanced(id);
    const seq = ++this.#seq;
    return new Promise<Doc>((resolve, reject) => {
      this.#pending.push({ raw: { _id: id, ...rest, [SEQ]: seq }, touched: Object.keys(rest), resolve, reject });
      if (!this.#committing) void this.#commit();
    });
  }

  async #commit(): Promise<void> {
    this.#committing = true;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending;
        this.#pending = [];
        try {
          if (batch.length === 1) await this.#insertOne(batch[0] as PendingInsert);
          else await this.#insertBatch(batch);
        } finally {
          this.#changed();
          this.#writing -= batch.length;
        }
      }
    } finally {
      this.#committing = false;
    }
  }

  async #insertOne(p: PendingInsert): Promise<void> {
    try {
      p.resolve(toDoc((await this.#db.insertAsync(p.raw)) as Raw));
      this.#disk.wrote();
    } catch (err) {
      p.reject(await this.#translate(err, p.touched).catch((e: unknown) => e));
    }
  }

  /**
   * nedb inserts an array all or nothing into its cache, then appends it in one write. When the
   * batch is refused before it reached the cache (a unique index, an invalid object), the inserts
   * are retried one by one so that only the offending ones fail, each with its own error. When it
   * failed after (the append), every insert of the batch fails with that error, as each would have
   * (a full disk: the batch was taken back out of the cache, see rollbackOnFailedAppend).
   */
  async #insertBatch(batch: PendingInsert[]): Promise<void> {
    let stored: Raw[];
    try {
      stored = (await this.#db.insertAsync(batch.map((p) => p.raw))) as unknown as Raw[];
    } catch (err) {
      if (diskErrorCode(err) !== undefined) {
        const refused = this.#disk.refused(err, this.#filename);
        for (const p of batch) p.reject(refused);
        return;
      }
      // nedb takes a batch that a unique index refused back out of its cache; any other error
      // either came before the cache (an invalid object) or after it (the append).
      if (!isUniqueViolation(err)) {
        if (batch.every((p) => withId(this.#db, p.raw._id).some((r) => isSameInsert(r, p.raw)))) {
          for (const p of batch) p.reject(err);
          return;
        }
      }
      for (const p of batch) await this.#insertOne(p);
      return;
    }
    for (let i = 0; i < batch.length; i++) (batch[i] as PendingInsert).resolve(toDoc(stored[i] as Raw));
    this.#disk.wrote();
  }

  async update(filter: Filter, ops: UpdateOps, condition?: WriteCondition): Promise<Doc | null> {
    const only = condition === undefined ? undefined : conditionId(filter);
    if (typeof filter.id !== 'string') {
      // Which object it changes is known only once it ran: found first, then updated by id.
      const target = await this.findOne(filter, { fields: { id: 1 } });
      return target === null ? null : this.update({ ...filter, id: target.id }, ops);
    }
    const db = await this.#open();
    const query = toNedbFilter(filter);
    const { modifier, pulls } = toNedbUpdate(ops);
    if (only !== undefined && this.#revisions.of(only) !== condition?.revision) return null;
    if (!pulls && Object.keys(modifier).length === 0) return this.findOne(filter);
    // Compared above and advanced here in the same synchronous step as the write is queued.
    this.#revisions.advanced(filter.id);
    this.#dirty = true;
    this.#changed();
    this.#writing++;
    try {
      if (!pulls) {
        const { affectedDocuments } = await db.updateAsync(query, modifier, { returnUpdatedDocs: true });
        this.#disk.wrote();
        return affectedDocuments ? toDoc(affectedDocuments as Raw) : null;
      }
      const updated = await this.#updateWithPull(db, query, modifier, pulls, only === undefined ? undefined : { id: only, revision: this.#revisions.of(only) });
      this.#disk.wrote();
      return updated;
    } catch (err) {
      throw await this.#translate(err, Object.values(ops).flatMap((fields: object | undefined) => Object.keys(fields ?? {})));
    } finally {
      this.#changed();
      this.#writing--;
    }
  }

  /**
   * nedb's own $pull cannot express "remove elements equal to one of these" for object elements
   * (its matcher throws on them) and throws on a missing array, where MongoDB does nothing. So the
   * new array is computed here and written only if the arrays read are still current
   * (compare-and-set), together with the other operators; a lost race reads again.
   */
  async #updateWithPull(db: Db, query: Query, modifier: Query, pulls: Record<string, unknown[]>, own?: { id: string; revision: number }): Promise<Doc | null> {
    for (const field of Object.keys(pulls)) {
      for (const op of Object.values(modifier) as Query[]) {
        if (field in op) throw new Error(`update would change property ${field} twice`);
      }
    }
    for (let attempt = 0; attempt < MAX_PULL_ATTEMPTS; attempt++) {
      const current = (await db.findOneAsync(query)) as unknown as Raw | null;
      if (!current) return null;
      const guards: Query[] = [query];
      const $set: Query = { ...(modifier.$set as Query | undefined) };
      for (const [field, values] of Object.entries(pulls)) {
        const array = current[field];
        if (array === undefined) {
          guards.push({ [field]: { $exists: false } });
          continue;
        }
        if (!Array.isArray(array)) throw new Error(`cannot $pull from property ${field}: not an array`);
        guards.push({ [field]: array });
        $set[field] = array.filter((el: unknown) => !values.some((v) => isDeepStrictEqual(el, v)));
      }
      const update = Object.keys($set).length > 0 ? { ...modifier, $set } : modifier;
      // An empty update would make nedb replace the object with {}; nothing to change is no write.
      if (Object.keys(update).length === 0) return toDoc(current);
      const guarded = { _id: current._id, $and: guards };
      // A conditional write: any write called since this one was compared ran or will run first.
      if (own !== undefined && this.#revisions.of(own.id) !== own.revision) return null;
      const { affectedDocuments } = await db.updateAsync(guarded, update, { returnUpdatedDocs: true });
      if (affectedDocuments) return toDoc(affectedDocuments as Raw);
    }
    throw new Error(`$pull on ${this.name} kept losing races with concurrent writes`);
  }

  async remove(filter: Filter, condition?: WriteCondition): Promise<number> {
    const only = condition === undefined ? undefined : conditionId(filter);
    const db = await this.#open();
    if (only !== undefined && this.#revisions.of(only) !== condition?.revision) return 0;
    if (typeof filter.id === 'string') this.#revisions.advanced(filter.id);
    this.#dirty = true;
    this.#changed();
    this.#writing++;
    try {
      const removed = await db.removeAsync(toNedbFilter(filter), { multi: true });
      this.#disk.wrote();
      return removed;
    } catch (err) {
      throw this.#disk.refused(err, this.#filename);
    } finally {
      this.#changed();
      this.#writing--;
    }
  }

  async ensureIndex(spec: IndexSpec): Promise<void> {
    const db = await this.#open();
    const field = spec.field === 'id' ? '_id' : spec.field;
    if (field === '_id') return;
    const unique = spec.unique ?? false;
    const existing = indexesOf(db)[field];
    if (existing && existing.unique === unique) return;
    this.#dirty = true;
    this.#changed();
    this.#writing++;
    /** No index of this field is left in the map, nor in the file (none was there, or its removal was written). */
    let noneLeft = false;
    try {
      // nedb keeps an existing index as it is, so a change of uniqueness means building it anew.
      if (existing) await db.removeIndexAsync(field);
      noneLeft = true;
      await db.ensureIndexAsync({ fieldName: field, unique, sparse: unique });
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError(spec.field, { cause: err });
      if (diskErrorCode(err) !== undefined) {
        // nedb changes its index map before it appends the line saying so: when the line did not
        // make it, the map goes back to what the file says.
        const indexes = Reflect.get(db, 'indexes') as Record<string, unknown>;
        if (noneLeft) delete indexes[field];
        else if (existing) indexes[field] = existing;
      }
      throw this.#disk.refused(err, this.#filename);
    } finally {
      this.#changed();
      this.#writing--;
    }
  }

  async dropIndex(field: string): Promise<void> {
    const db = await this.#open();
    const name = field === 'id' ? '_id' : field;
    if (name === '_id' || indexesOf(db)[name] === undefined) return;
    this.#dirty = true;
    this.#changed();
    this.#writing++;
    const existing = indexesOf(db)[name];
    try {
      await db.removeIndexAsync(name);
    } catch (err) {
      // As in ensureIndex: the map goes back to what the file says when the line did not make it.
      if (diskErrorCode(err) !== undefined) (Reflect.get(db, 'indexes') as Record<string, unknown>)[name] = existing;
      throw this.#disk.refused(err, this.#filename);
    } finally {
      this.#changed();
      this.#writing--;
    }
  }

  /**
   * Rewrites the datafile without its superseded lines when it was written to since last time. A
   * disk with no room for the new file (or failing) keeps the old one, which holds every write
   * appended: that is reported (once, see DiskState) and tried again next time, not thrown.
   */
  async compactIfDirty(): Promise<void> {
    // One at a time, and the store's close() waits for the one under way: the timer's compaction
    // may still be writing `<file>~` and renaming it when close() asks, and returning before it
    // ends would unlock the folder for another process while this one still writes in it.
    while (this.#compacting !== undefined) await this.#compacting.catch(() => undefined);
    if (!this.#dirty || !this.#loaded) return;
    this.#dirty = false;
    const run = this.#compact();
    this.#compacting = run;
    try {
      await run;
    } finally {
      this.#compacting = undefined;
    }
  }

  async #compact(): Promise<void> {
    try {
      await this.#db.compactDatafileAsync();
      this.#disk.wrote();
    } catch (err) {
      this.#dirty = true;
      if (diskErrorCode(err) !== undefined) {
        this.#disk.refused(err, `${this.#filename}~`);
        return;
      }
      throw err;
    }
  }

  /**
   * nedb reports the refused key value but not the index: the field is the first unique one
   * (those the write touched first) where another object holds that value.
   */
  async #translate(err: unknown, touched: string[]): Promise<unknown> {
    if (!isUniqueViolation(err)) return this.#disk.refused(err, this.#filename);
    const unique = Object.entries(indexesOf(this.#db)).filter(([, index]) => index?.unique).map(([f]) => f);
    const candidates = [...new Set([...touched.map((f) => (f === 'id' ? '_id' : f)), '_id'])];
    for (const field of [...candidates.filter((f) => unique.includes(f)), ...unique]) {
      if ((await this.#db.countAsync({ [field]: err.key })) > 0) {
        return new DuplicateKeyError(field === '_id' ? 'id' : field, { cause: err });
      }
    }
    return new DuplicateKeyError(unique.find((f) => f !== '_id') ?? 'id', { cause: err });
  }
}

/** nedb's refusal of a datafile it cannot parse (more corrupt lines than allowed). */
function isUnreadableData(err: unknown): boolean {
  return err instanceof Error && ('corruptionRate' in err || isUniqueViolation(err));
}

function isUniqueViolation(err: unknown): err is Error & { key: unknown } {
  return err instanceof Error && 'errorType' in err && err.errorType === 'uniqueViolated';
}

/** nedb's index map: documented on Datastore, missing from its typings. */
/** The cached objects with this id (none or one), from nedb's _id index. */
function withId(db: Db, id: string): Raw[] {
  return (indexesOf(db)._id as unknown as { getMatching(value: string): Raw[] }).getMatching(id);
}

function indexesOf(db: Db): Record<string, { unique: boolean } | undefined> {
  const indexes: unknown = Reflect.get(db, 'indexes');
  if (typeof indexes !== 'object' || indexes === null) throw new Error('nedb without an index map');
  return indexes as Record<string, { unique: boolean } | undefined>;
}

function isEmpty(query: Query): boolean {
  for (const _ in query) return false;
  return true;
}

/** The id of a filter that is `{_id: <string>}` and nothing else. */
function byIdOnly(query: Query): string | undefined {
  let id: unknown;
  for (const key in query) {
    if (key !== '_id') return undefined;
    id = query[key];
  }
  return typeof id === 'string' ? id : undefined;
}

/** The distinct ids of a filter that is `{_id: {$in: [<string>, ...]}}` and nothing else. */
function byIdsOnly(query: Query): Set<string> | undefined {
  const list = idListOnly(query);
  return list === undefined ? undefined : new Set(list);
}

/** The ids of a filter that is `{_id: {$in: [<string>, ...]}}` and nothing else, as listed. */
function idListOnly(query: Query): string[] | undefined {
  let condition: unknown;
  for (const key in query) {
    if (key !== '_id') return undefined;
    condition = query[key];
  }
  if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) return undefined;
  let list: unknown;
  for (const key in condition) {
    if (key !== '$in') return undefined;
    list = (condition as Record<string, unknown>)[key];
  }
  if (!Array.isArray(list) || !list.every((id) => typeof id === 'string')) return undefined;
  return list as string[];
}

/** Whether a cached object is the one a batch inserted (not an older object with the same id). */
function isSameInsert(cached: Raw, raw: Raw): boolean {
  for (const key of Object.keys(raw)) if (!isDeepStrictEqual(cached[key], raw[key])) return false;
  return true;
}

function toDoc(raw: Raw): Doc {
  const out: Record<string, unknown> = { id: raw._id };
  for (const key in raw) if (key !== '_id' && key !== SEQ) out[key] = raw[key];
  return out as Doc;
}

/** Builds the re-keying of raw objects for a projection (`id` kept unless excluded by name). */
function projector(fields: Record<string, 0 | 1> | undefined): (raw: Raw) => Doc {
  if (!fields) return copyDoc;
  const keys = Object.keys(fields).filter((k) => k !== 'id');
  const included = keys.filter((k) => fields[k] === 1);
  const withId = fields.id !== 0;
  if (included.length > 0 && included.length < keys.length) {
    throw new Error('a projection cannot both include and exclude properties other than id');
  }
  if (included.length > 0 || (fields.id === 1 && keys.length === 0)) {
    return (raw) => {
      const out: Record<string, unknown> = withId ? { id: raw._id } : {};
      for (const key of included) if (key !== SEQ && Object.hasOwn(raw, key)) out[key] = copyValue(raw[key]);
      return out as Doc;
    };
  }
  const excluded = new Set(keys);
  return (raw) => {
    const out: Record<string, unknown> = withId ? { id: raw._id } : {};
    for (const key in raw) if (key !== '_id' && key !== SEQ && !excluded.has(key) && Object.hasOwn(raw, key)) out[key] = copyValue(raw[key]);
    return out as Doc;
  };
}

function toNedbUpdate(ops: UpdateOps): { modifier: Query; pulls: Record<string, unknown[]> | undefined } {
  // The insertion number is the store's own: no update changes it.
  ops = withoutSeq(ops);
  const modifier: Query = {};
  if (ops.$set && Object.keys(ops.$set).length > 0) modifier.$set = renameId(ops.$set);
  if (ops.$unset && Object.keys(ops.$unset).length > 0) modifier.$unset = renameId(ops.$unset);
  if (ops.$inc && Object.keys(ops.$inc).length > 0) modifier.$inc = renameId(ops.$inc);
  if (ops.$push && Object.keys(ops.$push).length > 0) {
    modifier.$push = Object.fromEntries(Object.entries(ops.$push).map(([f, values]) => [f, { $each: values }]));
  }
  if (ops.$addToSet && Object.keys(ops.$addToSet).length > 0) {
    modifier.$addToSet = Object.fromEntries(Object.entries(ops.$addToSet).map(([f, values]) => [f, { $each: values }]));
  }
  const pulls = ops.$pull && Object.keys(ops.$pull).length > 0 ? ops.$pull : undefined;
  return { modifier, pulls };
}

/**
 * Translates a MongoDB filter into one nedb evaluates the way MongoDB would: `id` is `_id`;
 * `$ne`/`$nin` exclude arrays holding the value (nedb keeps them when any element differs);
 * `$exists: true` holds for empty arrays; `null` also matches a missing property; field-level
 * `$not`, `$nor` and `$options` become nedb constructs. Simple equalities stay top-level
 * so nedb can still answer them from an index.
 */
function toNedbFilter(filter: Filter): Query {
  const out: Query = {};
  const and: Query[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and') and.push(...subFilters(key, value));
    else if (key === '$or') out.$or = subFilters(key, value);
    else if (key === '$nor') and.push({ $not: { $or: subFilters(key, value) } });
    else if (key === '$search') and.push(searchWhere(value));
    else if (key.startsWith('$')) throw new Error(`unsupported query operator ${key}`);
    else addCondition(key === 'id' ? '_id' : key, value, out, and);
  }
  if (and.length > 0) out.$and = and;
  return out;
}

/** `$search` in the process (query/search.ts): every word in one of the fields, tested by a `$where` of nedb. */
function searchWhere(value: unknown): Query {
  if (!isSearchFilter(value)) throw new Error('$search needs words and fields');
  return {
    $where(this: Record<string, unknown>): boolean {
      return matchesSearch(this, value);
    },
  };
}

function subFilters(operator: string, value: unknown): Query[] {
  if (!Array.isArray(value)) throw new Error(`${operator} needs an array of filters`);
  return value.map((f: Filter) => toNedbFilter(f));
}

function addCondition(path: string, condition: unknown, out: Query, and: Query[]): void {
  if (!isOperatorObject(condition)) {
    if (condition === null) and.push(equals(path, null));
    else out[path] = condition instanceof RegExp ? regex(condition, undefined) : condition;
    return;
  }
  const direct: Query = {};
  for (const [op, value] of Object.entries(condition)) {
    switch (op) {
      case '$eq':
        and.push(equals(path, value));
        break;
      case '$ne':
        and.push({ $not: equals(path, value) });
        break;
      case '$in': {
        // nedb answers a top-level {path: {$in}} from the field's index; inside $and it scans.
        const clause = oneOf(path, value);
        if (path in clause && Object.keys(condition).length === 1 && !(path in out)) out[path] = clause[path];
        else and.push(clause);
        break;
      }
      case '$nin':
        and.push({ $not: oneOf(path, value) });
        break;
      case '$regex':
        direct.$regex = regex(value, condition.$options);
        break;
      case '$options':
        if (!('$regex' in condition)) throw new Error('$options without $regex');
        break;
      case '$exists':
        if (value) and.push({ $not: { [path]: { $exists: false } } });
        else direct.$exists = false;
        break;
      case '$not':
        and.push({ $not: toNedbFilter({ [path]: value }) });
        break;
      case '$gt': case '$gte': case '$lt': case '$lte': case '$size': case '$elemMatch':
        direct[op] = value;
        break;
      default:
        throw new Error(`unsupported query operator ${op}`);
    }
  }
  if (Object.keys(direct).length > 0) out[path] = direct;
}

function equals(path: string, value: unknown): Query {
  return value === null ? { $or: [{ [path]: null }, { [path]: { $exists: false } }] } : { [path]: value };
}

function oneOf(path: string, values: unknown): Query {
  if (!Array.isArray(values)) throw new Error('$in and $nin need an array');
  // nedb's $in compares with equality only: null (missing) and RegExp members need their own clause.
  if (values.every((v) => v !== null && !(v instanceof RegExp))) return { [path]: { $in: values } };
  return { $or: values.map((v: unknown) => equals(path, v)) };
}

/**
 * A RegExp whose test() runs in linear time (RE2's automaton, from the pure-JavaScript re2js):
 * nedb tests every object with `regex.test(value)` on the event loop, and a backtracking pattern
 * such as `^(a+)+$` over 'aaaa...!' took seconds there, holding up every other request. It is a
 * real RegExp subclass so that nedb accepts it; only test() is used.
 */
class LinearRegExp extends RegExp {
  readonly #re2: ReturnType<typeof RE2JS.compile>;

  constructor(source: string, flags: string, re2: ReturnType<typeof RE2JS.compile>) {
    super(source, flags);
    this.#re2 = re2;
  }

  override test(value: string): boolean {
    return this.#re2.test(value);
  }
}

const RE2_FLAGS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, u: 0 };

function regex(pattern: unknown, options: unknown): RegExp {
  const source = pattern instanceof RegExp ? pattern.source : String(pattern);
  const flags = (pattern instanceof RegExp ? pattern.flags : '') + (typeof options === 'string' ? options : '');
  // g and y would make RegExp.test stateful across the objects nedb tests.
  const kept = [...new Set(flags)].filter((f) => f !== 'g' && f !== 'y').join('');
  let re2: ReturnType<typeof RE2JS.compile>;
  try {
    re2 = RE2JS.compile(source, [...kept].reduce((all, f) => all | (RE2_FLAGS[f] ?? 0), 0));
  } catch (err) {
    // Backreferences and lookarounds need backtracking: the embedded store does not run them.
    throw new SvcError('INVALID_QUERY', `$regex: ${err instanceof Error ? err.message : String(err)} (the embedded store runs regular expressions in linear time, without backreferences or lookarounds)`);
  }
  return new LinearRegExp(source, kept, re2);
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof RegExp || value instanceof Date) {
    return false;
  }
  const keys = Object.keys(value);
  const operators = keys.filter((k) => k.startsWith('$')).length;
  if (operators > 0 && operators < keys.length) throw new Error('a condition cannot mix operators and properties');
  return operators > 0;
}

function withoutSeq(ops: UpdateOps): UpdateOps {
  if (!Object.values(ops).some((fields: object | undefined) => fields !== undefined && SEQ in fields)) return ops;
  const out: Record<string, Record<string, unknown>> = {};
  for (const [kind, fields] of Object.entries(ops) as [string, Record<string, unknown> | undefined][]) {
    if (fields === undefined) continue;
    const { [SEQ]: _seq, ...rest } = fields;
    out[kind] = rest;
  }
  return out as UpdateOps;
}

const seqOf = (raw: Raw): number => (raw[SEQ] as number | undefined) ?? 0;

/** Sorts matches in place by insertion number. */
function insertionOrder(raws: Raw[]): Raw[] {
  return raws.sort((a, b) => seqOf(a) - seqOf(b));
}

/**
 * A sort the way nedb's cursor sorts (its compareThings order across types), about 5x faster: each
 * object's sort values are read once, numbers and strings compare directly, anything else through
 * compareThings; ties keep insertion order.
 */
function sorter(sort: Record<string, unknown>): (raws: Raw[]) => Raw[] {
  const keys = Object.entries(sort).map(([field, direction]) => ({ field, direction: Number(direction) < 0 ? -1 : 1, dotted: field.includes('.') }));
  return (raws) => {
    const rows = raws.map((raw) => ({ raw, values: keys.map((k) => (k.dotted ? nedbModel.getDotValue(raw, k.field) : raw[k.field])) }));
    rows.sort((a, b) => {
      for (let i = 0; i < keys.length; i++) {
        const x = a.values[i];
        const y = b.values[i];
        const c = (typeof x === 'number' && typeof y === 'number') || (typeof x === 'string' && typeof y === 'string') ? (x < y ? -1 : x > y ? 1 : 0) : nedbModel.compareThings(x, y);
        if (c !== 0) return c * (keys[i] as { direction: number }).direction;
      }
      return seqOf(a.raw) - seqOf(b.raw);
    });
    return rows.map((row) => row.raw);
  };
}

/** A node of nedb's index tree (@seald-io/binary-search-tree): a key and the objects holding it. */
interface TreeNode {
  key?: unknown;
  data: Raw[];
  left?: TreeNode | null;
  right?: TreeNode | null;
}

/**
 * Objects matching `query` in the order of an index (ties in insertion order), from `from` to
 * `to`: an in-order walk that stops at `to`. A lower bound of the filter on the same property
 * ($gt/$gte ascending, $lt/$lte descending) skips the subtrees below it.
 */
function walkIndex(root: TreeNode, field: string, direction: 1 | -1, query: Query, all: boolean, from: number, to: number | undefined): Raw[] {
  const out: Raw[] = [];
  const wanted = to === undefined ? Infinity : to - from;
  let skipped = 0;
  const matches = all ? undefined : matcherOf(query);
  const condition = query[field];
  const ops = isPlainOperators(condition) ? condition : undefined;
  const bound = direction === 1 ? (ops?.$gt ?? ops?.$gte) : (ops?.$lt ?? ops?.$lte);
  const compare = nedbModel.compareThings;
  // Iterative in-order walk (in the sort's direction) with the path kept on a stack: each node is
  // reached once, and keys on the far side of the bound (compareThings orders them there) are
  // skipped together with the subtree on their near side.
  const stack: TreeNode[] = [];
  const descend = (start: TreeNode | null | undefined): void => {
    let node = start;
    while (node) {
      if (!Object.hasOwn(node, 'key')) return; // the empty tree's root
      if (bound !== undefined && compare(node.key, bound) * direction < 0) {
        node = direction === 1 ? node.right : node.left;
        continue;
      }
      stack.push(node);
      node = direction === 1 ? node.left : node.right;
    }
  };
  descend(root);
  while (stack.length > 0 && out.length < wanted) {
    const node = stack.pop() as TreeNode;
    const data = node.data;
    const raws = data.length > 1 ? [...data].sort((a, b) => seqOf(a) - seqOf(b)) : data;
    for (let i = 0; i < raws.length && out.length < wanted; i++) {
      const raw = raws[i] as Raw;
      if (matches && !matches(raw)) continue;
      if (skipped < from) {
        skipped++;
        continue;
      }
      out.push(raw);
    }
    descend(direction === 1 ? node.right : node.left);
  }
  return out;
}

/**
 * Whether an object matches a store filter, with the embedded store's meaning of every operator
 * (access rules on objects in hand, live queries). MongoDB agrees on what svc's query language
 * accepts; the store tests run the same queries on both.
 */
export function matchesFilter(object: Record<string, unknown>, filter: Filter): boolean {
  // The filter names the identifier `_id` once translated, as the embedded store keeps it.
  const raw = Object.hasOwn(object, 'id') ? { ...object, _id: object.id } : object;
  return nedbModel.match(raw, toNedbFilter(filter));
}

/**
 * How an object is tested against a query: nedb's matcher, or for the common query made only of
 * equalities on top-level properties with a string, number or boolean (`{"done": false}`), a
 * direct test with nedb's meaning (an array property matches when an element is equal).
 */
function matcherOf(query: Query): (raw: Raw) => boolean {
  const keys = Object.keys(query);
  const simple = keys.length > 0 && keys.length <= 4 && keys.every((k) => !k.startsWith('$') && !k.includes('.') && isPrimitive(query[k]));
  if (!simple) return (raw) => nedbModel.match(raw, query);
  const values = keys.map((k) => query[k]);
  return (raw) => {
    for (let i = 0; i < keys.length; i++) {
      const v = raw[keys[i] as string];
      const want = values[i];
      if (v !== want && !(Array.isArray(v) && v.some((el) => el === want))) return false;
    }
    return true;
  };
}

function isPrimitive(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

function isPlainOperators(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof RegExp) && !(value instanceof Date) && Object.keys(value).every((k) => k.startsWith('$'));
}

/** What is kept about a cached object: its JSON text, and where property values are in it. */
interface Kept {
  text: string;
  /**
   * Where property values are in the text, made when first asked: name, start, end, name...
   * (see spanOf). A list, not a Map: a reader asks for one to three names, and comparing them
   * costs less than hashing.
   */
  spans: (string | number)[] | undefined;
  /** The read that last found this object, and where in its answer (see #withIdsKept). */
  mark: number;
  row: number;
  /**
   * The names the last findTexts asked, and what it found for them in one list (see pickRow): the
   * start and end of each value in the text, then, when every value is primitive, the values.
   */
  pick: readonly string[] | undefined;
  picked: unknown[] | undefined;
  /** Whether `picked` holds the values after the spans. */
  pickedValues: boolean;
}

/**
 * Cached objects by id through the _id index: the index's own map when it is one (looked up once
 * per read, not through nedb's Index per id).
 */
function idLookup(db: Db): (id: string) => Raw | undefined {
  const index = indexesOf(db)._id as unknown as { tree?: unknown; getMatching(value: string): Raw[] };
  const tree = index.tree instanceof HashTree ? index.tree : undefined;
  return tree !== undefined ? (id) => tree.first(id) as Raw | undefined : (id) => index.getMatching(id)[0];
}

/** Numbers the reads that mark what they found. */
let readMark = 0;

/**
 * Per cached object, made on first read and held by the object itself under this symbol (not
 * enumerable: no copy, spread or for-in of the object takes it, and nedb's copies, serialisation
 * and JSON.stringify skip symbols); an updated object is a new object. A property instead of a
 * WeakMap: a list's reads look it up for every object, and a WeakMap lookup hashes into a table
 * of its own for each.
 */
const KEPT = Symbol('svc.kept');

const ABSENT = -1;
const UNKNOWN = -2;

/**
 * Writes into `out` at `at` and `at + 1` where the value of the property `key` is in the object's
 * kept JSON text: [start, end), ABSENT twice when the text does not name it at all, UNKNOWN twice
 * when it cannot be told by a search (the name occurs twice: a nested object's key, a key
 * containing it; or not followed by the value). Found once per object and name: a cached object
 * is never changed (an update replaces it).
 */
function spanOf(raw: Raw, facts: Kept, key: string, out: unknown[], at: number): void {
  const spans = (facts.spans ??= []);
  let i = 0;
  while (i < spans.length && spans[i] !== key) i += 3;
  if (i === spans.length) {
    const [start, end] = findSpan(raw, facts.text, key);
    spans.push(key, start, end);
  }
  out[at] = spans[i + 1] as number;
  out[at + 1] = spans[i + 2] as number;
}

function findSpan(raw: Raw, text: string, key: string): [number, number] {
  const name = `${JSON.stringify(key)}:`;
  const at = text.indexOf(name);
  if (at < 0) return Object.hasOwn(raw, key) ? [UNKNOWN, UNKNOWN] : [ABSENT, ABSENT];
  // Inside JSON strings every " is escaped: a name found once, of a property the object has, is that property's.
  if (text.includes(name, at + name.length) || !Object.hasOwn(raw, key)) return [UNKNOWN, UNKNOWN];
  const value = JSON.stringify(copyValue(raw[key])) as string | undefined;
  const start = at + name.length;
  return value !== undefined && text.startsWith(value, start) ? [start, start + value.length] : [UNKNOWN, UNKNOWN];
}

/** findTexts' answer for these objects (their kept facts, when found already). */
function textsOf(raws: readonly Raw[], found: readonly Kept[] | undefined, pick: readonly string[]): StoredTexts {
  const count = raws.length;
  const texts: string[] = new Array<string>(count);
  const width = pick.length;
  const values: unknown[] = new Array<unknown>(count * width);
  // A plain array: an Int32Array of a list's size is allocated outside the heap, which costs
  // more than the list's whole splicing.
  const spans = new Array<number>(count * width * 2);
  for (let i = 0; i < count; i++) {
    const raw = raws[i] as Raw;
    const facts = found !== undefined ? (found[i] as Kept) : keptOf(raw);
    texts[i] = facts.text;
    // Nothing picked: the kept picks of another reader's names stay.
    if (width === 0) continue;
    const picked = pickRow(raw, facts, pick);
    const at = i * width * 2;
    for (let s = 0; s < width * 2; s++) spans[at + s] = picked[s] as number;
    if (facts.pickedValues) for (let k = 0; k < width; k++) values[i * width + k] = picked[width * 2 + k];
    else for (let k = 0; k < width; k++) values[i * width + k] = valueOf(raw, pick[k] as string);
  }
  return { texts, values, spans };
}

/**
 * The spans of `pick`'s values in the object's text (findTexts's `spans` for one object) and, when
 * they are all primitive, the values after them, kept with the text while the next read asks for
 * the same names (told by identity first: keysToExpand hands out one list per set of names): a
 * list read again and again (On Get over a list reads the script's properties) then finds them
 * with the text, in one lookup, without reading the object. One list, not one for spans and one
 * for values: a list's objects were made at different times, so each list of theirs read is
 * mostly a cache miss (two, with its elements).
 */
function pickRow(raw: Raw, facts: Kept, pick: readonly string[]): unknown[] {
  if (facts.picked !== undefined && (facts.pick === pick || sameNames(facts.pick as readonly string[], pick))) return facts.picked;
  const width = pick.length;
  const picked = new Array<unknown>(width * 3);
  let primitive = true;
  for (let k = 0; k < width; k++) {
    const key = pick[k] as string;
    const value = valueOf(raw, key);
    if (value !== null && typeof value === 'object') primitive = false;
    picked[width * 2 + k] = value;
    if (key === 'id') {
      picked[k * 2] = UNKNOWN;
      picked[k * 2 + 1] = UNKNOWN;
      continue;
    }
    spanOf(raw, facts, key, picked, k * 2);
  }
  // A value that is an object is copied out afresh by each read (valueOf): not kept.
  if (!primitive) picked.length = width * 2;
  facts.pick = pick;
  facts.picked = picked;
  facts.pickedValues = primitive;
  return picked;
}

/** The value of `key` as find() answers the object (a copy): `id` for `_id`, no `_id`, no insertion number. */
function valueOf(raw: Raw, key: string): unknown {
  if (key === 'id') return raw._id;
  return key !== '_id' && key !== SEQ && Object.hasOwn(raw, key) ? copyValue(raw[key]) : undefined;
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function keptOf(raw: Raw): Kept {
  let facts = (raw as unknown as Record<symbol, Kept | undefined>)[KEPT];
  if (facts === undefined) {
    facts = { text: JSON.stringify(copyDoc(raw)), spans: undefined, mark: 0, row: -1, pick: undefined, picked: undefined, pickedValues: false };
    Object.defineProperty(raw, KEPT, { value: facts });
  }
  return facts;
}

function jsonOf(raw: Raw): string {
  return keptOf(raw).text;
}
