import type * as NodeSqlite from 'node:sqlite';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { RevisionTable } from '../internal/revisions.js';
import { Schema } from './schema.js';
import { registerWords } from './search.js';

/** The database file of a data folder. */
export const ENGINE_FILE = 'store.sqlite';

/** How a commit reaches the disk (app.json `embeddedStore.durability`). */
export type Durability = 'normal' | 'full';

/**
 * node:sqlite, loaded through process.getBuiltinModule (no static import: svc runs on Node >=
 * 22.12, where node:sqlite needs a flag before 22.13); the engine needs 22.16
 * (StatementSync.setReturnArrays). See engineSupported() for the default store without it.
 */
export function sqlite(): typeof NodeSqlite {
  const loaded = process.getBuiltinModule('node:sqlite') as typeof NodeSqlite | undefined;
  if (loaded === undefined || typeof loaded.StatementSync.prototype.setReturnArrays !== 'function') {
    throw new Error(`the embedded engine (embeddedStore.engine "sqlite") needs Node.js 22.16 or newer; this is ${process.version}`);
  }
  return loaded;
}

/**
 * SQLite's page cache of the engine's connection when not chosen (MiB). 32, not 64: at 1,000,000
 * todos the larger cache held ~30 MB more of the server's RSS and made no range query measurably
 * cheaper (bench/RESULTS.md, "Issue 41, round 8"); 100,000 todos (~19 MB of file) still fit whole.
 */
export const DEFAULT_CACHE_MB = 32;
/** The largest page cache an app may choose (MiB). */
export const MAX_CACHE_MB = 65_536;
/** The largest memory map: SQLite's own cap in node's build (SQLITE_MAX_MMAP_SIZE, 0x7fff0000 bytes). */
export const MAX_MMAP_MB = 2047;

/**
 * Memory of the engine's connection (app.json `embeddedStore.cacheMb` / `mmapMb`).
 * - `cacheMb`: SQLite's page cache, in the process's memory (default 32).
 * - `mmapMb`: how much of the database file SQLite reads through a memory map (PRAGMA mmap_size;
 *   default 0, off). Reads of pages not in the page cache become page faults on the operating
 *   system's cache instead of read() and a copy; writes still go through write() (SQLite's build
 *   in node maps read-only), so a full disk answers as without it. The mapped pages count in the
 *   RSS while the kernel keeps them, and an I/O error reading the file becomes SIGBUS, which ends
 *   the process, where without the map it fails the one read.
 */
export interface EngineMemory {
  cacheMb?: number;
  mmapMb?: number;
}

/** A write waiting for the next group commit. */
interface WriteTask {
  run(): unknown;
  /** See {@link Engine.write}'s `oneStatement`. */
  oneStatement: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** How often the WAL is checkpointed (and so synced) while writes come in. */
export const CHECKPOINT_MS = 1000;

/** Prepared statements kept per SQL text; past this many the oldest is let go. */
const MAX_STATEMENTS = 500;

/**
 * The database connection (one, used for reads and writes: node:sqlite is synchronous, so a read
 * never sees a transaction half done) and the group commit of writes.
 *
 * Group commit: a write is queued and the queue is run at the next turn of the event loop
 * (setImmediate: after the I/O callbacks of this turn, so the writes of every request that arrived
 * together) in one transaction, each write in a savepoint of its own (a write that fails, a
 * unique index refusing it, takes back only itself; a write of one statement needs none). A write is acknowledged once the COMMIT
 * returned. With `synchronous = NORMAL` (the default) a commit is in the WAL file in the operating
 * system's cache, not yet on the disk: a crash of the process loses nothing acknowledged, a power
 * cut or kernel crash can lose the commits since the last checkpoint, which syncs the WAL: at most
 * CHECKPOINT_MS after a commit (or at 10,000 pages of WAL, and at close). With `full` each COMMIT
 * waits for fsync of the WAL: nothing
 * acknowledged is lost by a power cut either, at the cost of one fsync per group commit.
 */
export class Engine {
  readonly db: DatabaseSync;
  readonly schema: Schema;
  readonly file: string;
  /** Object revisions of every collection (conditional writes; see RevisionTable). */
  readonly revisions = new RevisionTable();
  #statements = new Map<string, StatementSync>();
  readonly #begin: StatementSync;
  readonly #commit: StatementSync;
  #queue: WriteTask[] = [];
  /** Writes asked for by the hooks of the group commit under way (atCommit), made just before it commits. */
  #atCommit: WriteTask[] = [];
  /** A group commit is running its writes: atCommit joins it. */
  #flushing = false;
  #scheduled = false;
  /** A queued write asked to gather (see write): the group commit waits one more turn first. */
  #gather = false;
  #idle: { promise: Promise<void>; resolve(): void } | undefined;
  #closed = false;
  /** Something was committed since the last checkpoint. */
  #written = false;
  readonly #checkpoints: NodeJS.Timeout;

  constructor(file: string, durability: Durability, memory: EngineMemory = {}) {
    this.file = file;
    const cacheMb = memory.cacheMb ?? DEFAULT_CACHE_MB;
    const mmapMb = memory.mmapMb ?? 0;
    if (!Number.isSafeInteger(cacheMb) || cacheMb < 1 || cacheMb > MAX_CACHE_MB) throw new RangeError(`embedded store: cacheMb must be an integer from 1 to ${MAX_CACHE_MB}`);
    if (!Number.isSafeInteger(mmapMb) || mmapMb < 0 || mmapMb > MAX_MMAP_MB) throw new RangeError(`embedded store: mmapMb must be an integer from 0 to ${MAX_MMAP_MB}`);
    this.db = new (sqlite().DatabaseSync)(file);
    // WAL: readers are not blocked by the writer, a commit appends to one file. The page cache is
    // set (node:sqlite's default is 2 MB): bench/sqlite-drivers.mjs measured the range query at
    // 1.6x the CPU with the default at 100,000 objects.
    // Checkpoints: every CHECKPOINT_MS when something was written (so that the WAL is synced at
    // least that often: see Durability), else at 10,000 pages of WAL (~40 MB): a page written many
    // times meanwhile is copied into the database once (bench: ~20% less CPU per insert than
    // SQLite's default of 1,000 pages). The WAL file is cut back to 64 MB after a checkpoint.
    this.db.exec(
      `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}; PRAGMA cache_size = -${cacheMb * 1024}; PRAGMA temp_store = MEMORY; PRAGMA foreign_keys = OFF; PRAGMA wal_autocheckpoint = 10000; PRAGMA journal_size_limit = 67108864; PRAGMA mmap_size = ${mmapMb * 2 ** 20};`,
    );
    const mode = (this.db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode;
    if (mode !== 'wal') throw new Error(`embedded store: ${file} could not be put in WAL mode (${mode})`);
    registerWords(this.db);
    this.schema = new Schema(this.db);
    this.#begin = this.db.prepare('BEGIN');
    this.#commit = this.db.prepare('COMMIT');
    this.#checkpoints = setInterval(() => this.#checkpoint(), CHECKPOINT_MS);
    this.#checkpoints.unref();
  }

  /** This turn's read transaction is open (see {@link reading}). */
  #reading = false;
  readonly #endReadLater = (): void => this.#endRead();

  /**
   * A read statement is about to run outside the group commit: it runs in this turn's read
   * transaction, opened now if none is, and ended at the end of the turn (setImmediate), before
   * any group commit, checkpoint or close. Each statement in autocommit mode took the WAL's read
   * lock and let it go again (two fcntl calls and an fstat, ~3 µs: a third of a GET by id that
   * SQLite answers at 10,000,000 objects; bench/RESULTS.md, "Issue 41, round 15"); the reads of
   * the requests answered in one turn now share one.
   *
   * What a read sees is unchanged: this connection is the only writer of the database (one
   * process per data folder), and its writes all run in the group commit, which ends the read
   * transaction first; so a read transaction begins after the last commit and nothing is
   * committed before it ends. Inside the group commit (a write's own reads) there is a
   * transaction already: nothing to do.
   */
  reading(): void {
    if (this.#reading || this.#closed || this.db.isTransaction) return;
    this.#begin.run();
    this.#reading = true;
    setImmediate(this.#endReadLater);
  }

  #endRead(): void {
    if (!this.#reading) return;
    this.#reading = false;
    if (!this.db.isTransaction) return;
    try {
      this.#commit.run();
    } catch {
      // Not seen (a read left iterating does not stop a COMMIT: engine.test.ts); should it fail,
      // a read transaction has nothing to keep, and ROLLBACK ends it. This runs from
      // setImmediate, where a throw would end the process: a connection failing even that is
      // reported to the writes, by the group commit's BEGIN.
      try {
        this.db.exec('ROLLBACK');
      } catch {
        // See above.
      }
    }
  }

  /** A passive checkpoint when something was committed since the last one (never waits for readers). */
  #checkpoint(): void {
    this.#endRead();
    if (!this.#written || this.#closed) return;
    this.#written = false;
    try {
      this.prepare('PRAGMA wal_checkpoint(PASSIVE)').run();
    } catch {
      // A full or failing disk: the WAL keeps every commit; the next checkpoint tries again.
      this.#written = true;
    }
  }

  /** A prepared statement answering rows as arrays (no object made per row). */
  prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      statement.setReturnArrays(true);
      if (this.#statements.size >= MAX_STATEMENTS) {
        const oldest = this.#statements.keys().next().value as string;
        this.#statements.delete(oldest);
      }
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Whether writes are queued: a read waits for them (whenIdle), to see what was written before it. */
  get busy(): boolean {
    return this.#queue.length > 0;
  }

  /** Resolves once the queued writes are committed (or failed). */
  whenIdle(): Promise<void> {
    if (this.#queue.length === 0) return Promise.resolve();
    if (this.#idle === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      this.#idle = { promise, resolve };
    }
    return this.#idle.promise;
  }

  /**
   * Queues a write for the next group commit; answers what `run` answered, once committed.
   * `oneStatement`: the write changes the database with one statement only, the last it runs (the
   * path facts it saves before it only ever grow, so they may stay when the statement fails): it
   * needs no savepoint, since SQLite undoes a failed statement by itself (see #flush).
   * `gather`: the write's hooks add writes of their own to its commit (atCommit: a webhook's
   * journal row), pages that each commit writes once whatever its size, so the group commit waits
   * one more turn of the event loop for the writes of other requests to join it (bench/RESULTS.md,
   * "Issue 43, round 17").
   */
  write<T>(run: () => T, oneStatement = false, gather = false): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('the store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run, oneStatement, resolve: resolve as (value: unknown) => void, reject });
      if (gather) this.#gather = true;
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flushSoon);
      }
    });
  }

  /** The group commit, one turn later when a queued write asked to gather. */
  readonly #flushSoon = (): void => {
    if (!this.#gather) return this.#flush();
    this.#gather = false;
    setImmediate(() => this.#flush());
  };

  /**
   * Runs `run` in the transaction of the group commit under way, after its writes and just before
   * it commits: asked from inside a write (a store's write hooks), so that what it writes is
   * committed with that write or not at all. A failure of `run` fails the whole commit (none of its
   * writes is acknowledged). Outside a group commit, a write of its own. Resolves once committed.
   */
  atCommit(run: () => void): Promise<void> {
    if (!this.#flushing) return this.write(run);
    return new Promise<void>((resolve, reject) => {
      this.#atCommit.push({ run, oneStatement: false, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  #flush(): void {
    this.#endRead();
    this.#scheduled = false;
    this.#gather = false;
    const batch = this.#queue;
    if (batch.length === 0) return;
    const results: { ok: boolean; value: unknown }[] = [];
    const db = this.db;
    // Prepared once (exec would parse each statement again, per write).
    const savepoint = this.prepare('SAVEPOINT w');
    const release = this.prepare('RELEASE w');
    const atCommit = this.#atCommit;
    try {
      this.prepare('BEGIN IMMEDIATE').run();
      this.#flushing = true;
      for (const task of batch) {
        // One write alone needs no savepoint: its failure rolls back the whole transaction. Nor
        // does a write of one statement: SQLite undoes a statement that fails (a unique index
        // refusing it) and nothing else, unless the error ended the transaction (a full disk).
        const alone = batch.length === 1;
        const bare = alone || task.oneStatement;
        if (!bare) savepoint.run();
        const before = this.schema.changes;
        try {
          const value = task.run();
          if (!bare) release.run();
          results.push({ ok: true, value });
        } catch (err) {
          // SQLite rolled the whole transaction back (SQLITE_FULL, an I/O error): the writes
          // before this one are gone too, so none of the batch is acknowledged.
          if (!db.isTransaction) throw err;
          if (alone) {
            db.exec('ROLLBACK');
            db.exec('BEGIN IMMEDIATE');
          } else if (!bare) {
            this.prepare('ROLLBACK TO w').run();
            release.run();
          }
          // What the write changed of the schema or the path facts in memory went back in the database.
          if (!(bare && !alone) && this.schema.changes !== before) this.schema.reload();
          results.push({ ok: false, value: err });
        }
      }
      this.#flushing = false;
      // What the writes' hooks asked for, in the same transaction; its failure fails all of it.
      for (const task of atCommit) task.run();
      this.#commit.run();
      this.#written = true;
    } catch (err) {
      // The transaction did not commit (a full disk, a failing one): none of the batch is stored.
      this.#flushing = false;
      if (db.isTransaction) db.exec('ROLLBACK');
      this.schema.reload();
      results.length = 0;
      for (let i = 0; i < batch.length; i++) results.push({ ok: false, value: err });
      for (const task of atCommit) task.reject(err);
      atCommit.length = 0;
    } finally {
      this.#queue = [];
      this.#atCommit = [];
    }
    for (const task of atCommit) task.resolve(undefined);
    for (let i = 0; i < batch.length; i++) {
      const task = batch[i] as WriteTask;
      const result = results[i] as { ok: boolean; value: unknown };
      if (result.ok) task.resolve(result.value);
      else task.reject(result.value);
    }
    // Writes queued by the callbacks above are in a new queue, already scheduled.
    if (this.#queue.length === 0 && this.#idle !== undefined) {
      const idle = this.#idle;
      this.#idle = undefined;
      idle.resolve();
    }
  }

  /** Commits what is queued, checkpoints the WAL into the database file and closes. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.whenIdle();
    this.#endRead();
    this.#closed = true;
    clearInterval(this.#checkpoints);
    this.#statements.clear();
    try {
      this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    } catch {
      // A full (or failing) disk: the WAL stays as it is, whole, and is read at the next open.
    } finally {
      this.db.close();
    }
  }
}
