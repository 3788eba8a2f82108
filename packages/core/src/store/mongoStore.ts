import { redactUrl } from '../redactUrl.js';
import type { BSONRegExp, Collection, Document } from 'mongodb';
import { isMongoServerError, loadMongo, mongo } from './mongoDriver.js';
import { SvcError } from '../errors.js';
import { AggregateScanError, AggregateTimeoutError, DuplicateKeyError, assertCollectionName, isCollectionName } from './Store.js';
import { compareRows } from './internal/compareRows.js';
import { groupRows } from './internal/groupRows.js';
import type { AggregateRow, AggregateSpec, Doc, Filter, FindOptions, IndexSpec, ManyOps, Revised, Store, StoreCollection, UpdateOps, WriteCondition } from './Store.js';
import { renameId } from './internal/renameId.js';
import { projector } from './internal/projector.js';
import { ensureTextIndex, hasSearch, searchMatches } from './mongoSearch.js';

/** Options of {@link createMongoStore}. */
export interface MongoStoreOptions {
  /** A `mongodb://` or `mongodb+srv://` connection string. */
  url: string;
  /** Database used when the URL names none; default `svc`. */
  dbName?: string;
  /**
   * How long an operation may take, in ms, including finding a server (default 5000): beyond it
   * the request answers 503, also while the database is down or frozen. Queries carry it to the
   * server as maxTimeMS.
   */
  timeoutMs?: number;
  /**
   * A write's time limit in the database (maxTimeMS on updates, inserts and removes), ms; default:
   * `timeoutMs` on an update of one object, none on the others. The client still waits `timeoutMs`
   * for its answer. MongoDB stops a write at its
   * limit; FerretDB v1 ignores it on updates (an updateMany of 3,000 objects ran 58 s under a
   * maxTimeMS of 20).
   */
  writeTimeoutMs?: number;
  /** Connections to the database at most (the driver's maxPoolSize; default the driver's, 100). */
  maxConnections?: number;
  /** How long a call may wait for a connection (all in use) before it fails unsent with a 503, ms (the driver's waitQueueTimeoutMS; default no limit). */
  queueTimeoutMs?: number;
}

/** Errors of the driver that mean the database cannot be reached or did not answer in time. */
const OUTAGE_ERRORS = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoOperationTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
  'MongoWaitQueueTimeoutError',
]);
/** Server codes of the same: MaxTimeMSExpired, ExceededTimeLimit, shutdown, stepdown, not primary. */
const OUTAGE_CODES = new Set([50, 262, 91, 11600, 11602, 189, 10107, 13435, 13436]);

/**
 * FerretDB on SQLite, busy with another connection's write past its wait: "database is locked
 * (5) (SQLITE_BUSY)". The same call may succeed a moment later: a 503 to retry, not a 500 (an
 * updateMany may have changed some objects before it: FerretDB v1 writes each in a transaction of
 * its own).
 */
const BUSY_MESSAGE = /\bSQLITE_BUSY\b/;
/** FerretDB v1 past a write's maxTimeMS (findAndModify): an internal error, not MaxTimeMSExpired. */
const DEADLINE_MESSAGE = /\bcontext deadline exceeded\b/;

/** A driver error of an outage becomes a 503 the client can retry; anything else passes through. */
function outage(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  if (isMongoServerError(err) && BUSY_MESSAGE.test(err.message)) return new SvcError('UNAVAILABLE', 'the database is busy', { status: 503, cause: err, headers: { 'retry-after': '5' } });
  if (isMongoServerError(err) && DEADLINE_MESSAGE.test(err.message)) return new SvcError('UNAVAILABLE', 'the database did not answer in time', { status: 503, cause: err, headers: { 'retry-after': '5' } });
  if (!OUTAGE_ERRORS.has(err.name) && !(isMongoServerError(err) && typeof code === 'number' && OUTAGE_CODES.has(code))) return err;
  const timedOut = code === 50 || code === 262 || /time/i.test(err.name);
  return new SvcError('UNAVAILABLE', timedOut ? 'the database did not answer in time' : 'the database is unavailable', { status: 503, cause: err, headers: { 'retry-after': '5' } });
}

/**
 * Runs a store operation, turning outage errors into 503s, and answers 503 itself once the
 * operation took longer than the time limit (and a little more): the driver's own limit does not
 * cover every wait (a frozen server keeps a pooled connection open and silent). A write cut off
 * this way was not acknowledged; it may still be applied when the server wakes up.
 */
function guarded<T>(timeoutMs: number, operation: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SvcError('UNAVAILABLE', 'the database did not answer in time', { status: 503, headers: { 'retry-after': '5' } })), timeoutMs + 250);
  });
  const run = operation().catch((err: unknown) => {
    throw outage(err);
  });
  return Promise.race([run, late]).finally(() => clearTimeout(timer));
}

type Raw = { _id: string } & Document;

/** A readiness ping waits this long at most: a slow database is as good as a dead one to a balancer. */
const PING_TIMEOUT_MS = 1000;

const NAMESPACE_NOT_FOUND = 26;
/** Unauthorized, CommandNotFound, NamespaceExists, CommandNotSupported, NotImplemented (FerretDB). */
const RENAME_REFUSED = new Set([13, 59, 48, 115, 238]);

/**
 * Connects to MongoDB (one client for the store's lifetime; `close()` closes it). Objects are
 * stored with their `id` as `_id`. The database is the one named in the URL path, else
 * `options.dbName`, else `svc`.
 */
export async function createMongoStore(options: MongoStoreOptions): Promise<Store> {
  // The embedded store drops undefined properties (JSON); without this the driver stores null.
  const timeoutMS = options.timeoutMs ?? 5000;
  // The time limit goes with each read as maxTimeMS (MongoCollection): the driver ignores its own `timeoutMS`.
  const { MongoClient } = await loadMongo();
  const client = new MongoClient(options.url, {
    ignoreUndefined: true,
    serverSelectionTimeoutMS: timeoutMS,
    ...(options.maxConnections !== undefined ? { maxPoolSize: options.maxConnections } : {}),
    ...(options.queueTimeoutMs !== undefined ? { waitQueueTimeoutMS: options.queueTimeoutMs } : {}),
  });
  try {
    await client.connect();
  } catch (err) {
    await client.close();
    throw new Error(`cannot reach MongoDB at ${redactUrl(options.url)} within ${timeoutMS} ms (${(err as Error).message})`, { cause: err });
  }
  const db = client.db(databaseName(options.url) ?? options.dbName ?? 'svc');
  const collections = new Map<string, MongoCollection>();
  return {
    kind: 'mongodb',
    collection(name: string): StoreCollection {
      let collection = collections.get(name);
      if (!collection) {
        assertCollectionName(name);
        collection = new MongoCollection(name, db.collection<Raw>(name), timeoutMS, options.writeTimeoutMs);
        collections.set(name, collection);
      }
      return collection;
    },
    async renameCollection(from: string, to: string): Promise<boolean> {
      assertCollectionName(from);
      assertCollectionName(to);
      return guarded(timeoutMS, async () => {
        if ((await db.collection(to).countDocuments({}, { limit: 1 })) > 0) return false;
        // FerretDB (v1.24) does not implement renameCollection's dropTarget: an empty target (its
        // indexes made before any object) is dropped first.
        await db.collection(to).drop().catch((err: unknown) => {
          if (!(isMongoServerError(err) && err.code === NAMESPACE_NOT_FOUND)) throw err;
        });
        try {
          // One step on MongoDB (and a metadata change on FerretDB): the objects are under one name or the other.
          await db.renameCollection(from, to);
          return true;
        } catch (err) {
          if (isMongoServerError(err) && err.code === NAMESPACE_NOT_FOUND) return true; // nothing to rename
          // Not allowed, not implemented or raced by a write to `to`: the caller moves the objects.
          if (isMongoServerError(err) && typeof err.code === 'number' && RENAME_REFUSED.has(err.code)) return false;
          throw err;
        }
      });
    },
    listCollections(): Promise<string[]> {
      return guarded(timeoutMS, async () => {
        const infos = await db.listCollections({}, { nameOnly: true }).toArray();
        return infos.map((info) => info.name).filter(isCollectionName).sort();
      });
    },
    async ping(): Promise<void> {
      await guarded(PING_TIMEOUT_MS, () => db.command({ ping: 1 }));
    },
    close: () => client.close(),
  };
}

/** The database named by a connection string's path; WHATWG URL cannot parse multi-host ones. */
function databaseName(url: string): string | undefined {
  const path = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]*)/.exec(url)?.[1];
  return path ? decodeURIComponent(path) : undefined;
}

class MongoCollection implements StoreCollection {
  readonly name: string;
  readonly #coll: Collection<Raw>;

  readonly #timeoutMs: number;
  /** Writes' maxTimeMS (MongoStoreOptions.writeTimeoutMs). */
  readonly #writeMs: number | undefined;
  /** Whether the server made the text index (ensureSearch): `$text` finds the candidates of a `$search`. */
  #text = true;

  constructor(name: string, coll: Collection<Raw>, timeoutMs: number, writeMs: number | undefined) {
    this.name = name;
    this.#coll = coll;
    this.#timeoutMs = timeoutMs;
    this.#writeMs = writeMs;
  }

  /** A write's options: its time limit in the database, when the store has one for writes. */
  #writeLimit(): { maxTimeMS?: number } {
    return this.#writeMs === undefined ? {} : { maxTimeMS: this.#writeMs };
  }

  find(filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    return guarded(this.#timeoutMs, () => (hasSearch(filter) ? this.#search(filter, options) : this.#find(filter, options)));
  }

  /** `$search` (mongoSearch.ts): candidates by `$text` where the server has it, tested by svc's matcher. */
  #search(filter: Filter, options: FindOptions): Promise<Doc[]> {
    return searchMatches(this.#coll as unknown as Collection<Document>, filter, options, { text: this.#text, timeoutMs: this.#timeoutMs, toMongoFilter, toDoc, project: projector });
  }

  ensureSearch(fields: string[]): Promise<void> {
    return guarded(this.#timeoutMs, async () => {
      this.#text = await ensureTextIndex(this.#coll as unknown as Collection<Document>, fields);
    });
  }

  findOne(filter: Filter, options: Pick<FindOptions, 'fields'> = {}): Promise<Doc | null> {
    if (hasSearch(filter)) return guarded(this.#timeoutMs, async () => (await this.#search(filter, { ...options, limit: 1 }))[0] ?? null);
    return guarded(this.#timeoutMs, () => this.#findOne(filter, options));
  }

  count(filter: Filter): Promise<number> {
    if (hasSearch(filter)) return guarded(this.#timeoutMs, async () => (await this.#search(filter, { fields: { id: 1 } })).length);
    return guarded(this.#timeoutMs, () => this.#coll.countDocuments(toMongoFilter(filter), { maxTimeMS: this.#timeoutMs }));
  }

  insert(doc: Doc): Promise<Doc> {
    return guarded(this.#timeoutMs, () => this.#insert(doc));
  }

  insertMany(docs: Doc[]): Promise<void> {
    return guarded(this.#timeoutMs, async () => {
      try {
        await this.#coll.insertMany(
          docs.map(({ id, ...rest }) => ({ _id: id, ...rest, [REV]: 1 })),
          { ordered: true, ...this.#writeLimit() },
        );
      } catch (err) {
        throw await this.#translate(err);
      }
    });
  }

  update(filter: Filter, ops: UpdateOps, condition?: WriteCondition): Promise<Doc | null> {
    if (hasSearch(filter)) {
      return guarded(this.#timeoutMs, async () => {
        const first = (await this.#search(filter, { limit: 1, fields: { id: 1 } }))[0];
        return first === undefined ? null : this.#update({ id: first.id }, ops, condition);
      });
    }
    return guarded(this.#timeoutMs, () => this.#update(filter, ops, condition));
  }

  remove(filter: Filter, condition?: WriteCondition): Promise<number> {
    return guarded(this.#timeoutMs, async () => {
      if (!hasSearch(filter)) return (await this.#coll.deleteMany(revisedFilter(filter, condition), this.#writeLimit())).deletedCount;
      const ids = (await this.#search(filter, { fields: { id: 1 } })).map((doc) => doc.id);
      const revised = condition === undefined ? {} : revisedFilter({ id: filter.id }, condition);
      return (await this.#coll.deleteMany({ ...revised, _id: { $in: ids } }, this.#writeLimit())).deletedCount;
    });
  }

  findRevised(id: string): Promise<Revised | null> {
    return guarded(this.#timeoutMs, async () => {
      const raw = await this.#coll.findOne({ _id: id }, { maxTimeMS: this.#timeoutMs });
      if (raw === null) return null;
      const revision = raw[REV];
      return { doc: toDoc(raw), revision: typeof revision === 'number' ? revision : 0 };
    });
  }

  /** One updateMany: each object changes atomically and its revision advances (MongoDB; FerretDB v1's updates are not atomic at all). */
  updateMany(filter: Filter, ops: ManyOps): Promise<number> {
    return guarded(this.#timeoutMs, async () => {
      const update: Document = {};
      if (ops.$set && Object.keys(ops.$set).length > 0) update.$set = ops.$set;
      if (ops.$unset && Object.keys(ops.$unset).length > 0) update.$unset = ops.$unset;
      if (ops.$rename && Object.keys(ops.$rename).length > 0) update.$rename = ops.$rename;
      const names = [...Object.keys(ops.$set ?? {}), ...Object.keys(ops.$unset ?? {}), ...Object.entries(ops.$rename ?? {}).flat()];
      if (names.includes('id') || names.includes('_id') || names.includes(REV)) throw new TypeError('updateMany cannot change an object\'s id or revision');
      if (Object.keys(update).length === 0) return this.#coll.countDocuments(toMongoFilter(filter), { maxTimeMS: this.#timeoutMs });
      // Each object changed is a write, as update's: its revision moves (a conditional write based
      // on the object before the migration then fails instead of undoing the migration's change).
      update.$inc = { [REV]: 1 };
      try {
        return (await this.#coll.updateMany(toMongoFilter(filter), update, this.#writeLimit())).matchedCount;
      } catch (err) {
        throw await this.#translate(err);
      }
    });
  }

  ensureIndex(spec: IndexSpec): Promise<void> {
    return guarded(this.#timeoutMs, () => this.#ensureIndex(spec));
  }

  dropIndex(field: string): Promise<void> {
    return guarded(this.#timeoutMs, async () => {
      if (field === 'id') return;
      const existing = (await this.#indexes()).find((index) => index.field === field);
      if (!existing) return;
      try {
        await this.#coll.dropIndex(existing.name);
      } catch (err) {
        // Dropped meanwhile (another process): what was asked holds.
        if (isMongoServerError(err) && (err.code === 27 || err.code === NAMESPACE_NOT_FOUND)) return;
        throw err;
      }
    });
  }

  /** The aggregation pipeline: $match, $group, $limit; the groups are sorted by the caller. */
  aggregate(filter: Filter, spec: AggregateSpec): Promise<AggregateRow[]> {
    if (hasSearch(filter)) return guarded(spec.timeoutMs, async () => groupRows(await this.#search(filter, {}), spec, { started: Date.now(), idKey: 'id' }));
    return guarded(spec.timeoutMs, async () => {
      try {
        // Counted in the server first: a pipeline over too many objects is refused before it runs.
        const scanned = await this.#coll.countDocuments(toMongoFilter(filter), { maxTimeMS: spec.timeoutMs });
        if (scanned > spec.maxScanned) throw new AggregateScanError(scanned);
        const raw = await this.#coll.aggregate(aggregatePipeline(filter, spec), { maxTimeMS: spec.timeoutMs }).toArray();
        return raw.map((r) => aggregateRow(r, spec)).sort(compareRows);
      } catch (err) {
        if (isMongoServerError(err) && err.code === MAX_TIME_EXPIRED) throw new AggregateTimeoutError({ cause: err });
        // FerretDB v1 has no $avg/$min/$max accumulators: the measured properties are read and grouped here.
        if (isMongoServerError(err) && err.code === NOT_IMPLEMENTED) return this.#aggregateByReading(filter, spec);
        throw err;
      }
    });
  }

  async #aggregateByReading(filter: Filter, spec: AggregateSpec): Promise<AggregateRow[]> {
    const started = Date.now();
    const fields: Record<string, 1> = { id: 1 };
    for (const name of [...spec.group, ...spec.sum, ...spec.avg, ...spec.min, ...spec.max]) fields[name] = 1;
    return groupRows(await this.#find(filter, { fields }), spec, { started, idKey: 'id' });
  }

  async #find(filter: Filter, options: FindOptions): Promise<Doc[]> {
    let cursor = this.#coll.find(toMongoFilter(filter)).maxTimeMS(this.#timeoutMs);
    if (options.fields) cursor = cursor.project(renameId(options.fields));
    if (options.sort) cursor = cursor.sort(renameId(options.sort));
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    return (await cursor.toArray()).map(toDoc);
  }

  async #findOne(filter: Filter, options: Pick<FindOptions, 'fields'>): Promise<Doc | null> {
    const projection = options.fields ? renameId(options.fields) : undefined;
    const raw = await this.#coll.findOne(toMongoFilter(filter), projection ? { projection, maxTimeMS: this.#timeoutMs } : { maxTimeMS: this.#timeoutMs });
    return raw ? toDoc(raw) : null;
  }

  async #insert(doc: Doc): Promise<Doc> {
    const { id, ...rest } = doc;
    try {
      await this.#coll.insertOne({ _id: id, ...rest, [REV]: 1 }, this.#writeLimit());
    } catch (err) {
      throw await this.#translate(err, { _id: id, ...rest });
    }
    return { ...doc };
  }

  async #update(filter: Filter, ops: UpdateOps, condition: WriteCondition | undefined): Promise<Doc | null> {
    const update = toMongoUpdate(ops);
    if (!update) return condition === undefined ? this.#findOne(filter, {}) : toDocOrNull(await this.#coll.findOne(revisedFilter(filter, condition), { maxTimeMS: this.#timeoutMs }));
    // The revision moves with the change, in the same findOneAndUpdate: atomic on MongoDB (and
    // the condition with it); FerretDB v1 applies an update as a read then a write, not atomically.
    update.$inc = { ...(update.$inc as Document | undefined), [REV]: 1 };
    try {
      const raw = await this.#coll.findOneAndUpdate(revisedFilter(filter, condition), update, { returnDocument: 'after', maxTimeMS: this.#writeMs ?? this.#timeoutMs });
      return raw ? toDoc(raw) : null;
    } catch (err) {
      throw await this.#translate(err);
    }
  }

  async #ensureIndex(spec: IndexSpec): Promise<void> {
    if (spec.field === 'id') return; // _id is always uniquely indexed
    const unique = spec.unique ?? false;
    // Compared up front rather than on MongoDB's conflict error: FerretDB answers ok and keeps the old index.
    const existing = (await this.#indexes()).find((index) => index.field === spec.field);
    if (existing?.unique === unique) return;
    try {
      if (existing) await this.#coll.dropIndex(existing.name);
      await this.#coll.createIndex({ [spec.field]: 1 }, unique ? { unique, sparse: true } : {});
    } catch (err) {
      throw await this.#translate(err);
    }
  }

  /** The single-property indexes of the collection (none while it does not exist). */
  async #indexes(): Promise<{ name: string; field: string; unique: boolean }[]> {
    try {
      const indexes = await this.#coll.listIndexes().toArray();
      return indexes.flatMap((index) => {
        const fields = Object.keys(index.key as object);
        return fields.length === 1 && typeof index.name === 'string' && fields[0] !== undefined
          ? [{ name: index.name, field: fields[0], unique: index.unique === true }]
          : [];
      });
    } catch (err) {
      if (isMongoServerError(err) && err.code === NAMESPACE_NOT_FOUND) return [];
      throw err;
    }
  }

  /**
   * E11000 becomes a {@link DuplicateKeyError} naming the property; anything else passes through.
   * MongoDB names the index in keyPattern; FerretDB v1 reports a failed insert without any index
   * and a failed update as an internal SQLite error naming it, so both are recognised, and for
   * the former the property is found by looking for another object holding the written value.
   */
  async #translate(err: unknown, written?: Raw): Promise<unknown> {
    if (!isMongoServerError(err)) return err;
    const sqliteIndex = /UNIQUE constraint failed: index '([^']+)'/.exec(err.message)?.[1];
    if (err.code !== 11000 && !sqliteIndex) return err;
    const pattern: unknown = err.keyPattern ?? err.keyValue;
    let field = typeof pattern === 'object' && pattern !== null ? Object.keys(pattern)[0] : undefined;
    field ??= /index: (.+?)_-?1 dup key/.exec(err.message)?.[1];
    if (field === undefined && sqliteIndex) {
      // FerretDB names the SQLite index `<table>_<index name>`.
      const indexes = (await this.#indexes()).filter((index) => sqliteIndex.endsWith(`_${index.name}`));
      field = indexes.sort((a, b) => b.name.length - a.name.length)[0]?.field;
    }
    if (field === undefined && written) field = await this.#holderOf(written);
    return new DuplicateKeyError(field === undefined || field === '_id' ? 'id' : field, { cause: err });
  }

  async #holderOf(written: Raw): Promise<string | undefined> {
    if ((await this.#coll.countDocuments({ _id: written._id }, { limit: 1 })) > 0) return '_id';
    for (const { field, unique } of await this.#indexes()) {
      if (!unique || field === '_id') continue;
      const clash = { [field]: written[field] ?? null, _id: { $ne: written._id } };
      if ((await this.#coll.countDocuments(clash, { limit: 1 })) > 0) return field;
    }
    return undefined;
  }
}

/**
 * Each object's revision (see Revised), stored beside its properties and never answered (toDoc
 * leaves it out); a name no Deployd app used, reserved like the embedded store's `__svcSeq`.
 */
export const REV = '__svcRev';

function toDoc(raw: Document): Doc {
  const out: Record<string, unknown> = { id: raw._id };
  for (const key in raw) if (key !== '_id' && key !== REV) out[key] = raw[key];
  return out as Doc;
}

function toDocOrNull(raw: Document | null): Doc | null {
  return raw === null ? null : toDoc(raw);
}

/** The filter of a write, with its revision condition (0: an object stored before revisions, without one). */
function revisedFilter(filter: Filter, condition: WriteCondition | undefined): Document {
  const mongo = toMongoFilter(filter);
  if (condition === undefined) return mongo;
  if (typeof filter.id !== 'string') throw new TypeError('a write with a revision condition must name one id');
  return { ...mongo, [REV]: condition.revision === 0 ? null : condition.revision };
}

function toMongoUpdate(ops: UpdateOps): Document | undefined {
  const update: Document = {};
  if (ops.$set && Object.keys(ops.$set).length > 0) update.$set = renameId(ops.$set);
  if (ops.$unset && Object.keys(ops.$unset).length > 0) update.$unset = renameId(ops.$unset);
  if (ops.$inc && Object.keys(ops.$inc).length > 0) update.$inc = renameId(ops.$inc);
  if (ops.$push && Object.keys(ops.$push).length > 0) {
    update.$push = Object.fromEntries(Object.entries(ops.$push).map(([f, values]) => [f, { $each: values }]));
  }
  if (ops.$addToSet && Object.keys(ops.$addToSet).length > 0) {
    update.$addToSet = Object.fromEntries(Object.entries(ops.$addToSet).map(([f, values]) => [f, { $each: values }]));
  }
  if (ops.$pull && Object.keys(ops.$pull).length > 0) {
    // $pullAll removes elements equal to any value, like $pull with $in, and FerretDB v1 supports it.
    update.$pullAll = ops.$pull;
  }
  return Object.keys(update).length > 0 ? update : undefined;
}

/**
 * `id` becomes `_id` (also inside $and/$or/$nor), and RegExp values become BSON regular
 * expressions carrying exactly their flags and any `$options` (the driver would encode a `g`
 * flag as `s`, and MongoDB refuses flags given both in the pattern and in `$options`).
 */
const MAX_TIME_EXPIRED = 50;
const NOT_IMPLEMENTED = 238;

/** A stored property as an aggregation expression. */
const fieldPath = (name: string): string => (name === 'id' ? '$_id' : `$${name}`);

function aggregatePipeline(filter: Filter, spec: AggregateSpec): Document[] {
  const id: Document = {};
  spec.group.forEach((name, i) => (id[`g${i}`] = fieldPath(name)));
  const group: Document = { _id: id };
  if (spec.count) group.count = { $sum: 1 };
  spec.sum.forEach((name, i) => (group[`sum${i}`] = { $sum: fieldPath(name) }));
  spec.avg.forEach((name, i) => (group[`avg${i}`] = { $avg: fieldPath(name) }));
  spec.min.forEach((name, i) => (group[`min${i}`] = { $min: fieldPath(name) }));
  spec.max.forEach((name, i) => (group[`max${i}`] = { $max: fieldPath(name) }));
  return [{ $match: toMongoFilter(filter) }, { $group: group }, { $limit: spec.limit }];
}

function aggregateRow(raw: Document, spec: AggregateSpec): AggregateRow {
  const id = (raw._id ?? {}) as Document;
  const row: AggregateRow = { group: Object.fromEntries(spec.group.map((name, i) => [name, id[`g${i}`] ?? null])) };
  if (spec.count) row.count = Number(raw.count ?? 0);
  const measures = (kind: 'sum' | 'avg' | 'min' | 'max', names: string[]): Record<string, never> =>
    Object.fromEntries(names.map((name, i) => [name, raw[`${kind}${i}`] ?? (kind === 'sum' ? 0 : null)])) as Record<string, never>;
  if (spec.sum.length > 0) row.sum = measures('sum', spec.sum);
  if (spec.avg.length > 0) row.avg = measures('avg', spec.avg);
  if (spec.min.length > 0) row.min = measures('min', spec.min);
  if (spec.max.length > 0) row.max = measures('max', spec.max);
  return row;
}

function toMongoFilter(filter: Filter): Document {
  const out: Document = {};
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value)) throw new Error(`${key} needs an array of filters`);
      out[key] = value.map((f: Filter) => toMongoFilter(f));
    } else {
      out[key === 'id' ? '_id' : key] = toMongoValue(value);
    }
  }
  return out;
}

function toMongoValue(value: unknown): unknown {
  if (value instanceof RegExp) return bsonRegex(value, undefined);
  if (Array.isArray(value)) return value.map(toMongoValue);
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (key === '$options' && '$regex' in value) continue;
    out[key] = key === '$regex' ? bsonRegex(v, (value as Record<string, unknown>).$options) : toMongoValue(v);
  }
  return out;
}

function bsonRegex(pattern: unknown, options: unknown): BSONRegExp {
  const source = pattern instanceof RegExp ? pattern.source : String(pattern);
  const flags = (pattern instanceof RegExp ? pattern.flags : '') + (typeof options === 'string' ? options : '');
  return new (mongo().BSONRegExp)(source, [...new Set(flags)].filter((f) => 'imsx'.includes(f)).join(''));
}
