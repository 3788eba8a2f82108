/** A stored object. Every object has a string `id`; adapters map it to their own key. */
export type Doc = { id: string } & Record<string, unknown>;

/**
 * A MongoDB-shaped filter over objects, naming the identifier `id`. Values are already coerced
 * and validated (core/query); `$regex` values are RegExp objects. `$search` (anywhere a property
 * may be) is a full-text search, `{words, fields}` (query/search.ts's SearchFilter): every word a
 * word of one of the fields; a find with one and no sort answers the most relevant first, where
 * the store can rank (the embedded engine, MongoDB's text index).
 */
export type Filter = Record<string, unknown>;

/** Sort, projection and paging of a find. */
export interface FindOptions {
  /** property -> 1 (include) or 0 (exclude); `id` is included unless excluded by name. */
  fields?: Record<string, 0 | 1>;
  /** property -> 1 ascending, -1 descending, applied in key order. */
  sort?: Record<string, 1 | -1>;
  limit?: number;
  skip?: number;
  /**
   * The caller needs no order (it looks each object up by id): without a sort, a store may answer
   * the matches in any order instead of insertion order. The same objects either way.
   */
  anyOrder?: boolean;
}

/**
 * Changes applied atomically to one stored object. Dotted paths are not used: keys are top-level
 * property names.
 */
export interface UpdateOps {
  $set?: Record<string, unknown>;
  $unset?: Record<string, true>;
  $inc?: Record<string, number>;
  /** property -> values appended in order. */
  $push?: Record<string, unknown[]>;
  /** property -> every element equal to one of these values is removed. */
  $pull?: Record<string, unknown[]>;
  /** property -> each value is appended unless the array already holds an equal one. */
  $addToSet?: Record<string, unknown[]>;
}

/**
 * What {@link StoreCollection.updateMany} applies to each matching object: top-level property names
 * only, as in {@link UpdateOps}; `$rename` moves a property's value to another name (an object
 * holding both has the second overwritten; one without the first is left alone).
 */
export interface ManyOps {
  $set?: Record<string, unknown>;
  $unset?: Record<string, true>;
  $rename?: Record<string, string>;
}

/**
 * A condition on a write to one object ({@link StoreCollection.update}, {@link StoreCollection.remove}):
 * it applies only while the object's revision is `revision` (compare-and-set).
 */
export interface WriteCondition {
  revision: number;
}

/** An object and its revision ({@link StoreCollection.findRevised}). */
export interface Revised {
  doc: Doc;
  /**
   * A count of the writes the object has seen: an insert and each update that matched it advance
   * it; it never comes back to an earlier value while the store is open. 0 for an object the store
   * holds no count for (MongoDB: stored before revisions existed). The embedded engines keep the
   * count in memory (one process owns their data folder), so it restarts from 0 at each start; it
   * never leaves the server (ETags are made from what a
   * caller sees, see docs/offline.md), so only its moves while a request runs matter.
   */
  revision: number;
}

/** An index on one property. */
export interface IndexSpec {
  field: string;
  unique?: boolean;
}

/**
 * {@link StoreCollection.findTexts}'s answer: `texts[i]` is `JSON.stringify(find(...)[i])`;
 * `values[i * pick.length + k]` the value of its k-th picked property (a copy; undefined when it
 * has none), and `spans[(i * pick.length + k) * 2]` and the next number the start and end in
 * `texts[i]` of that value: -1, -1 when the text does not name the property, -2, -2 when the
 * store cannot tell (and for `id`).
 */
export interface StoredTexts {
  texts: string[];
  values: unknown[];
  spans: ArrayLike<number>;
  /**
   * For a read of `{id: {$in: list}}` (no skip or limit): for each id of the list, in its order,
   * the index in `texts` of that object (-1: none answered), so that a join needs no lookup by id.
   * Optional: a store may leave it out.
   */
  listedRows?: number[];
  /**
   * The rows as a list the store keeps (see {@link KeptList}), when it answered them from one or
   * kept them now. Optional: a store may leave it out.
   */
  list?: KeptList;
}

/**
 * A list's rows kept by the store while no write could change them, with one answer made of them
 * kept beside (a `$expand` answer: CollectionReads.splicedList). The answer is kept and found
 * only while these very rows are the ones kept: a write that drops them drops it.
 */
export interface KeptList {
  /** The text kept with {@link keep} under `key`, while these rows are still the ones kept. */
  answer(key: string): string | undefined;
  /** Keeps `text` under `key` (instead of any other) while these rows are kept; nothing when they are no longer, or the store's bound says no. */
  keep(key: string, text: string): void;
}

/**
 * Told of a write from inside it, by a store that has {@link StoreCollection.insertAtCommit}: once
 * the object is written, synchronously, in the write's transaction. What it asks of
 * `insertAtCommit` is committed with the object, or not at all. It must not throw, nor wait.
 */
export interface WriteHooks {
  /**
   * The object as stored after the write and, for an update, as it was just before it; `chars`:
   * the length of their stored texts together (what writing them again costs, about).
   */
  stored(object: Doc, before: Doc | undefined, chars: number): void;
}

/**
 * Told of a remove from inside it, as {@link WriteHooks} are of an insert or an update: once the
 * objects are removed, synchronously, in the remove's transaction, with the ids of those removed
 * (none: nothing matched). It must not throw, nor wait.
 */
export interface RemoveHooks {
  removed(ids: readonly string[]): void;
}

/** One named collection of objects in a store. */
export interface StoreCollection {
  readonly name: string;
  find(filter: Filter, options?: FindOptions): Promise<Doc[]>;
  findOne(filter: Filter, options?: Pick<FindOptions, 'fields'>): Promise<Doc | null>;
  /**
   * Optional: the JSON text of `find(filter, options)` (no projection), for a store that keeps
   * each object's serialisation, so that a list is answered without copying or stringifying.
   */
  findJson?(filter: Filter, options?: Omit<FindOptions, 'fields'>): Promise<string>;
  /**
   * Optional: what `find(filter, options)` answers (no projection), each object beside its JSON
   * text (`texts[i]` is `JSON.stringify(docs[i])`), so that a list whose objects a script changes
   * a little can be answered by patching the texts (On Get) instead of serialising every object.
   */
  findWithJson?(filter: Filter, options?: Omit<FindOptions, 'fields'>): Promise<{ docs: Doc[]; texts: string[] }>;
  /**
   * Optional: each object of `find(filter, options)` (no projection) as its JSON text, beside the
   * values of the properties `pick` names (`id`: the id; a missing property: undefined), for
   * answers made of stored texts with other texts spliced in (`$expand`).
   */
  findTexts?(filter: Filter, options: Omit<FindOptions, 'fields'>, pick: readonly string[]): Promise<StoredTexts>;
  /**
   * Optional: what `findTexts({id: {$in: ids}}, {anyOrder: true}, pick)` answers, with its
   * `listedRows`, when the store can tell at once (nothing being written that it would have to
   * wait for); undefined when it cannot. `$expand`'s related read by id, without compiling a
   * filter of the ids.
   */
  findTextsOfIdsNow?(ids: readonly string[], pick: readonly string[]): StoredTexts | undefined;
  /**
   * Optional, with findTexts' `list`: the list the store keeps for `find(filter, options)` (the
   * same object findTexts answers as `list` while these rows are kept), undefined when it keeps
   * none. Waits for the writes under way, as the reads do.
   */
  keptList?(filter: Filter, options: Omit<FindOptions, 'fields'>): Promise<KeptList | undefined>;
  /**
   * Optional: a number that is another one after every write of the collection (and after
   * anything else that may change what its reads answer), never one it or another collection
   * had before in this process; undefined when the store cannot tell at once. An answer made of
   * its objects may be kept while it is the same (see KeptList).
   */
  generationNow?(): number | undefined;
  /**
   * Optional: the JSON text of the object with this id (what `findOne({id})` answers, serialised),
   * or null, for a store that keeps each object's serialisation.
   */
  findOneJson?(id: string): Promise<string | null>;
  /**
   * Optional: what `findOneJson(id)` would answer, when the store can tell at once (nothing being
   * written that it would have to wait for); undefined when it cannot.
   */
  findOneJsonNow?(id: string): string | null | undefined;
  /**
   * Optional: the object with this id (a copy, as findOne answers it) and its JSON text, or null,
   * when the store can tell at once (see findOneJsonNow); undefined when it cannot. GET by id with
   * On Get runs the script on the object and answers the text patched (see findWithJson).
   */
  findOneWithJsonNow?(id: string): { doc: Doc; text: string } | null | undefined;
  /** The object with this id (a copy, as findOne answers it) and its revision, or null. */
  findRevised(id: string): Promise<Revised | null>;
  /** Counts matching objects without loading them. */
  count(filter: Filter): Promise<number>;
  /**
   * Inserts a new object; rejects with {@link DuplicateKeyError} when a unique index refuses it.
   * `hooks` are told of it inside the write by a store with `insertAtCommit`; others ignore them.
   */
  insert(doc: Doc, hooks?: WriteHooks): Promise<Doc>;
  /**
   * Optional, with `hooks` of insert and update: inserts the object `make` answers in the
   * transaction of the group commit under way, just before it commits, so that it is committed
   * with that commit's writes or not at all (a webhook's event with the write it tells of). Called
   * outside a write's hooks, it is an insert of its own. Resolves once committed; a failure of the
   * insert fails the whole commit. The object is to hold what a store answers (JSON values and
   * dates: no undefined, no other class), as objects read from a store do.
   */
  insertAtCommit?(make: () => Doc): Promise<void>;
  /**
   * Optional: inserts objects in order in one round trip, for a store where one insert at a time
   * is slow (a network database); stops at the first one refused (the ones before it stay).
   */
  insertMany?(docs: Doc[]): Promise<void>;
  /**
   * Applies `ops` atomically to the first object matching `filter` and answers it as it is after
   * the update, or null when nothing matched. Rejects with {@link DuplicateKeyError} on a unique
   * index violation. Every update that matched advances the object's revision by one. With
   * `condition`, the filter must name one `id` and the update applies only while the object's
   * revision is `condition.revision` (else null, nothing changed), atomically where the store
   * can (the embedded engines, MongoDB; not FerretDB v1, whose updates are not atomic).
   */
  update(filter: Filter, ops: UpdateOps, condition?: WriteCondition, hooks?: WriteHooks): Promise<Doc | null>;
  /**
   * Removes every matching object; answers how many. With `condition` (the filter naming one
   * `id`), only while the object's revision is `condition.revision` (else 0). `hooks` are told of
   * it inside the write by a store with `insertAtCommit`; others ignore them.
   */
  remove(filter: Filter, condition?: WriteCondition, hooks?: RemoveHooks): Promise<number>;
  /**
   * Optional: applies `ops` to every matching object in one call (each object changed atomically;
   * the set as a whole is not; each one's revision advances), answering how many matched, for a store where one update at a
   * time is slow (a network database). Migrations use it; without it they update one object at a
   * time.
   */
  updateMany?(filter: Filter, ops: ManyOps): Promise<number>;
  /** Creates the index when missing (idempotent). */
  ensureIndex(spec: IndexSpec): Promise<void>;
  /**
   * Optional: makes the full-text index of `$search` over these properties (all of the
   * collection's searchable ones; another set replaces it, none removes it). Without it (the old
   * embedded store), `$search` is tested object by object.
   */
  ensureSearch?(fields: string[]): Promise<void>;
  /**
   * Optional: removes the index on the property, when there is one (idempotent). Migrations call
   * it when a property loses `index` or `unique`; a store without it keeps the index.
   */
  dropIndex?(field: string): Promise<void>;
  /**
   * Optional: groups the matching objects and measures each group in the store (MongoDB's
   * aggregation pipeline). Without it, aggregates read the matching objects' measured properties.
   */
  aggregate?(filter: Filter, spec: AggregateSpec): Promise<AggregateRow[]>;
}

/** A grouping asked of a store: properties to group by (up to 3) and what to measure per group. */
export interface AggregateSpec {
  group: string[];
  count: boolean;
  sum: string[];
  avg: string[];
  min: string[];
  max: string[];
  /** Answer at most this many groups (the caller asks one more than it allows, to tell). */
  limit: number;
  /** How long the store may take, in ms. */
  timeoutMs: number;
  /** More matching objects than this: {@link AggregateScanError}, before any is grouped. */
  maxScanned: number;
}

/** One group: the grouped properties' values (null when missing) and the measures asked for. */
export interface AggregateRow {
  group: Record<string, unknown>;
  count?: number;
  sum?: Record<string, number>;
  avg?: Record<string, number | null>;
  min?: Record<string, unknown>;
  max?: Record<string, unknown>;
}

/** An aggregate would read more objects than its limit. */
export class AggregateScanError extends Error {
  readonly scanned: number;
  constructor(scanned: number) {
    super(`the aggregate would read ${scanned} objects`);
    this.name = 'AggregateScanError';
    this.scanned = scanned;
  }
}

/** A store-side aggregate ran longer than its time limit. */
export class AggregateTimeoutError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('aggregate took too long', options);
    this.name = 'AggregateTimeoutError';
  }
}

/** A document store: the embedded one or MongoDB. */
export interface Store {
  readonly kind: string;
  /** The collection called `name` (see {@link assertCollectionName}); created on first write. */
  collection(name: string): StoreCollection;
  /**
   * Optional: gives collection `from` the name `to` in one step, when `to` holds no object (an
   * empty `to` is dropped first). Answers false, having changed nothing, when `to` holds objects or
   * the store cannot; the caller then moves the objects itself. Nothing may write to `to` meanwhile.
   */
  renameCollection?(from: string, to: string): Promise<boolean>;
  /**
   * Optional: the names of the collections the store holds (any that was ever written to, empty or
   * not), sorted; names that are not collection names (MongoDB's `system.*`) are left out.
   */
  listCollections?(): Promise<string[]>;
  /**
   * Optional: resolves when the store can serve requests, rejects when it cannot (closed, or the
   * database does not answer). Cheap: readiness checks call it (at most once a second).
   */
  ping?(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Collection names are resource paths: segments of `[A-Za-z0-9_-]`, joined by `/` (`a/b`).
 * Adapters check them because the embedded store turns them into file names.
 */
const COLLECTION_NAME = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/;

/** Whether `name` is a valid collection name (resource path segments). */
export function isCollectionName(name: string): boolean {
  return COLLECTION_NAME.test(name);
}

/** Throws a TypeError unless `name` is a valid collection name (resource path segments). */
export function assertCollectionName(name: string): void {
  if (!COLLECTION_NAME.test(name)) throw new TypeError(`invalid collection name ${JSON.stringify(name)}`);
}

/** A unique index refused a write. `field` names the property. */
export class DuplicateKeyError extends Error {
  readonly field: string;
  constructor(field: string, options?: { cause?: unknown }) {
    super(`duplicate value for unique property ${field}`, options);
    this.name = 'DuplicateKeyError';
    this.field = field;
  }
}
