import { nedbModel as model } from './nedbModel.js';

type Bounds = { $lt?: unknown; $lte?: unknown; $gt?: unknown; $gte?: unknown };

/**
 * The part of nedb's AVL tree (@seald-io/binary-search-tree) that nedb's Index calls, kept in a
 * Map. Ids are only ever looked up by value, so a hash answers in O(1) what the tree answered in
 * O(log n) string comparisons, and an insert does not rebalance a tree. Range queries on the id
 * (rare) scan and sort, in the tree's key order. Keys are strings or numbers; nothing else is an
 * id in svc, and anything else is refused rather than silently compared by reference.
 */
export class HashTree {
  readonly #unique: boolean;
  /**
   * Each key's first value, as it is (not in an array of one): an id lookup then reads the value
   * straight from the map's entry, not through an array and its elements, two more objects that
   * are mostly cache misses in a server busy with other work.
   */
  readonly #first = new Map<string | number, unknown>();
  /** Values after the first, of keys holding several (never in a unique index). */
  readonly #more = new Map<string | number, unknown[]>();
  /**
   * Keys that held several values and lost them all to deletes by value: the tree keeps such a
   * node, empty, until the key is deleted or given a value (never in a unique index).
   */
  readonly #emptied = new Set<string | number>();

  constructor(unique: boolean) {
    this.#unique = unique;
  }

  insert(key: unknown, value: unknown): void {
    const k = keyOf(key);
    if (!this.#first.has(k)) {
      this.#emptied.delete(k);
      this.#first.set(k, value);
      return;
    }
    if (this.#unique) {
      // The same error the tree throws: callers tell a unique violation by errorType.
      throw Object.assign(new Error(`Can't insert key ${JSON.stringify(key)}, it violates the unique constraint`), { key, errorType: 'uniqueViolated' });
    }
    const more = this.#more.get(k);
    if (more === undefined) this.#more.set(k, [value]);
    else more.push(value);
  }

  /**
   * As the tree does: a key holding several values loses every value equal to `value`; a key
   * holding one value, or deleted without a value, goes.
   */
  delete(key: unknown, value?: unknown): void {
    if (!isKey(key)) return;
    // An emptied node holds fewer than two values: the tree deletes it, value or not.
    if (this.#emptied.delete(key) || !this.#first.has(key)) return;
    const more = this.#more.get(key);
    if (more === undefined || value === undefined) {
      this.#first.delete(key);
      this.#more.delete(key);
      return;
    }
    const kept = [this.#first.get(key), ...more].filter((d) => d !== value);
    this.#more.delete(key);
    if (kept.length === 0) {
      this.#first.delete(key);
      this.#emptied.add(key);
      return;
    }
    this.#first.set(key, kept[0]);
    if (kept.length > 1) this.#more.set(key, kept.slice(1));
  }

  /** The values of a key (a new array: what a caller does with it changes nothing here). */
  search(key: unknown): unknown[] {
    if (!isKey(key) || !this.#first.has(key)) return [];
    const more = this.#more.get(key);
    return more === undefined ? [this.#first.get(key)] : [this.#first.get(key), ...more];
  }

  /** The (first) value of a key, without an array: what a unique index holds for it. */
  first(key: unknown): unknown {
    return isKey(key) ? this.#first.get(key) : undefined;
  }

  betweenBounds(query: Bounds): unknown[] {
    const keys = [...this.#first.keys()].filter((k) => within(k, query)).sort(model.compareThings);
    return keys.flatMap((k) => this.search(k));
  }

  executeOnEveryNode(fn: (node: { key: unknown; data: unknown[] }) => void): void {
    for (const key of this.#first.keys()) fn({ key, data: this.search(key) });
  }

  /** Every value, in no particular order (nedb's getAll spreads each key's array into a push: 6 ms at 100,000). */
  values(): unknown[] {
    const out = [...this.#first.values()];
    for (const more of this.#more.values()) for (const value of more) out.push(value);
    return out;
  }

  getNumberOfKeys(): number {
    return this.#first.size + this.#emptied.size;
  }
}

function isKey(key: unknown): key is string | number {
  return typeof key === 'string' || typeof key === 'number';
}

function keyOf(key: unknown): string | number {
  if (!isKey(key)) throw new TypeError(`an object id must be a string, not ${key === null ? 'null' : typeof key}`);
  return key;
}

function within(key: unknown, q: Bounds): boolean {
  const c = (bound: unknown) => model.compareThings(key, bound);
  if ('$gt' in q && !(c(q.$gt) > 0)) return false;
  if ('$gte' in q && !(c(q.$gte) >= 0)) return false;
  if ('$lt' in q && !(c(q.$lt) < 0)) return false;
  if ('$lte' in q && !(c(q.$lte) <= 0)) return false;
  return true;
}

/** nedb's Index, as far as this module touches it. */
interface NedbIndex {
  unique: boolean;
  tree: unknown;
  insert(docs: unknown): void;
  reset(newData?: unknown): void;
}

/**
 * Puts the `_id` index of a nedb datastore on a HashTree, now and whenever nedb resets it (on
 * load and compaction). The Index around it (array keys, rollback of a failed batch) is nedb's.
 */
export function hashIdIndex(db: object): void {
  const indexes = Reflect.get(db, 'indexes') as Record<string, NedbIndex | undefined> | undefined;
  const index = indexes?._id;
  if (!index || typeof index.reset !== 'function' || typeof index.insert !== 'function') throw new Error('nedb without the expected _id index');
  index.tree = new HashTree(index.unique);
  index.reset = function reset(newData?: unknown): void {
    this.tree = new HashTree(this.unique);
    if (newData) this.insert(newData);
  };
}
