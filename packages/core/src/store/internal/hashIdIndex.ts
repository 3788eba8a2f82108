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
  readonly #byKey = new Map<string | number, unknown[]>();

  constructor(unique: boolean) {
    this.#unique = unique;
  }

  insert(key: unknown, value: unknown): void {
    const k = keyOf(key);
    const data = this.#byKey.get(k);
    if (data === undefined) {
      this.#byKey.set(k, [value]);
      return;
    }
    if (this.#unique) {
      // The same error the tree throws: callers tell a unique violation by errorType.
      throw Object.assign(new Error(`Can't insert key ${JSON.stringify(key)}, it violates the unique constraint`), { key, errorType: 'uniqueViolated' });
    }
    data.push(value);
  }

  /**
   * As the tree does: a key holding several values loses every value equal to `value` (a new
   * array: what search answered before is not changed); a key holding one value, or deleted
   * without a value, goes.
   */
  delete(key: unknown, value?: unknown): void {
    if (!isKey(key)) return;
    const data = this.#byKey.get(key);
    if (data === undefined) return;
    if (data.length > 1 && value !== undefined) this.#byKey.set(key, data.filter((d) => d !== value));
    else this.#byKey.delete(key);
  }

  search(key: unknown): unknown[] {
    return (isKey(key) ? this.#byKey.get(key) : undefined) ?? [];
  }

  /** The (first) value of a key, without an array: what a unique index holds for it. */
  first(key: unknown): unknown {
    return isKey(key) ? this.#byKey.get(key)?.[0] : undefined;
  }

  betweenBounds(query: Bounds): unknown[] {
    const keys = [...this.#byKey.keys()].filter((k) => within(k, query)).sort(model.compareThings);
    return keys.flatMap((k) => this.#byKey.get(k) ?? []);
  }

  executeOnEveryNode(fn: (node: { key: unknown; data: unknown[] }) => void): void {
    for (const [key, data] of this.#byKey) fn({ key, data });
  }

  /** Every value, in no particular order (nedb's getAll spreads each key's array into a push: 6 ms at 100,000). */
  values(): unknown[] {
    const out: unknown[] = [];
    for (const data of this.#byKey.values()) {
      if (data.length === 1) out.push(data[0]);
      else for (const value of data) out.push(value);
    }
    return out;
  }

  getNumberOfKeys(): number {
    return this.#byKey.size;
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
