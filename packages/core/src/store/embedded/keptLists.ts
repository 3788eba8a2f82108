import type { Doc, Filter } from '../Store.js';

/**
 * A property the whole filter holds equal to one value (`{owner: "u1", done: false}`: owner, "u1",
 * as every read rule `{"owner": "@me.id"}` gives): only an object whose property is that value,
 * or an array holding it, can match the filter (the query language's equality).
 */
export interface Facet {
  readonly path: string;
  readonly value: string | number | boolean;
}

/**
 * The rows each query answered (by its exact plan key and page: see selectRows), kept until a
 * write could change the answer. A write can change a query's answer only by an object that
 * matches the query before or after it; so a list with a facet is dropped only by a write of an
 * object whose facet property is (or holds) the facet's value before or after it, and a list
 * without one by any write. A logged-in user's own lists outlive the other users' writes: with
 * every list dropped at any write of the collection, the realistic workload's lists (each user
 * their own, a write in five requests) were answered from here 0.3% of the time.
 *
 * At most MAX_LISTS lists and MAX_BYTES of heap (keys and rows, estimated as HotTexts estimates
 * texts); when either is full, all of them are let go at once (no order to keep). At most
 * MAX_PATHS facet paths, so that a write's cost stays bounded whatever properties clients filter on.
 */
export class KeptLists {
  static readonly MAX_LISTS = 4096;
  static readonly MAX_BYTES = 2 * 1024 * 1024;
  /** Facet paths at most (each write looks at each); a list of another path is kept without a facet. */
  static readonly MAX_PATHS = 16;
  readonly #lists = new Map<string, Kept>();
  /** The keys of the lists with a facet, by its path and value. */
  readonly #byFacet = new Map<string, Map<string | number | boolean, Set<string>>>();
  /** The keys of the lists without one. */
  readonly #plain = new Set<string>();
  #bytes = 0;

  /** The heap a kept list is counted for: its key, its rows (8 bytes each), its map entries, array and set slots. */
  static bytesOf(key: string, seqs: readonly number[]): number {
    return 192 + charBytes(key) + 8 * seqs.length;
  }

  get size(): number {
    return this.#lists.size;
  }

  /** The rows the query `key` answered, while no write could have changed them. */
  get(key: string): number[] | undefined {
    return this.#lists.get(key)?.seqs;
  }

  keep(key: string, seqs: number[], facet: Facet | undefined): void {
    const bytes = KeptLists.bytesOf(key, seqs);
    if (bytes > KeptLists.MAX_BYTES / 16 || this.#lists.has(key)) return;
    if (this.#lists.size >= KeptLists.MAX_LISTS || this.#bytes + bytes > KeptLists.MAX_BYTES) this.clear();
    this.#lists.set(key, { seqs, facet, bytes });
    this.#bytes += bytes;
    if (facet === undefined) {
      this.#plain.add(key);
      return;
    }
    let byValue = this.#byFacet.get(facet.path);
    if (byValue === undefined) {
      // Each write looks at every facet path: a client naming many properties makes plain lists.
      if (this.#byFacet.size >= KeptLists.MAX_PATHS) {
        this.#lists.set(key, { seqs, facet: undefined, bytes });
        this.#plain.add(key);
        return;
      }
      this.#byFacet.set(facet.path, (byValue = new Map()));
    }
    let keys = byValue.get(facet.value);
    if (keys === undefined) byValue.set(facet.value, (keys = new Set()));
    keys.add(key);
  }

  /**
   * A write of these objects (each as it was before the write, and as it is after it; undefined
   * where there is none): drops every list whose answer it may change.
   */
  written(docs: readonly (Doc | undefined)[]): void {
    for (const key of this.#plain) this.#drop(key);
    for (const [path, byValue] of this.#byFacet) {
      for (const doc of docs) {
        if (doc === undefined) continue;
        const values = equalValues(doc[path]);
        if (values === undefined) {
          for (const keys of [...byValue.values()]) for (const key of [...keys]) this.#drop(key);
          break;
        }
        for (const value of values) {
          const keys = byValue.get(value as string | number | boolean);
          if (keys !== undefined) for (const key of [...keys]) this.#drop(key);
        }
      }
    }
  }

  clear(): void {
    this.#lists.clear();
    this.#byFacet.clear();
    this.#plain.clear();
    this.#bytes = 0;
  }

  #drop(key: string): void {
    const kept = this.#lists.get(key);
    if (kept === undefined) return;
    this.#lists.delete(key);
    this.#bytes -= kept.bytes;
    if (kept.facet === undefined) {
      this.#plain.delete(key);
      return;
    }
    const byValue = this.#byFacet.get(kept.facet.path);
    const keys = byValue?.get(kept.facet.value);
    keys?.delete(key);
    if (keys?.size === 0) byValue?.delete(kept.facet.value);
    if (byValue?.size === 0) this.#byFacet.delete(kept.facet.path);
  }
}

interface Kept {
  readonly seqs: number[];
  readonly facet: Facet | undefined;
  readonly bytes: number;
}

/**
 * The facet of a filter: a top-level property (or one of a top-level `$and`'s parts) equal to a
 * string, a finite number or a boolean; an indexed one first (it tells lists apart best: an
 * owner's). Undefined when there is none: such a list is dropped by any write.
 */
export function facetOf(filter: Filter, indexed: ReadonlySet<string>): Facet | undefined {
  let first: Facet | undefined;
  for (const facet of equalities(filter)) {
    if (indexed.has(facet.path)) return facet;
    first ??= facet;
  }
  return first;
}

function* equalities(filter: Filter): Generator<Facet> {
  for (const path in filter) {
    const value = filter[path];
    if (path === '$and' && Array.isArray(value)) {
      for (const part of value as unknown[]) if (typeof part === 'object' && part !== null && !Array.isArray(part)) yield* equalities(part as Filter);
    } else if (!path.startsWith('$') && !path.includes('.') && isFacetValue(value)) {
      yield { path, value };
    }
  }
}

function isFacetValue(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

/**
 * The facet values an object's property can equal: itself, or an array's elements (the query
 * language's equality matches an array holding the value); none for a missing or null value;
 * undefined (any value: every list of that facet goes) for anything else (an object, a Date, an
 * array holding one).
 */
function equalValues(value: unknown): readonly unknown[] | undefined {
  if (value === undefined || value === null) return NONE;
  if (isFacetValue(value)) return [value];
  if (typeof value === 'number') return NONE;
  if (!Array.isArray(value)) return undefined;
  for (const element of value) if (!(element === null || isFacetValue(element) || (typeof element === 'number' && !Number.isFinite(element)))) return undefined;
  return value;
}

const NONE: readonly unknown[] = [];

/** Matches a character past Latin-1: V8 then keeps the whole string at two bytes a character. */
const WIDE = /[\u0100-\uffff]/;

/** The heap of a string's characters and header, as V8 keeps a flat string (HotTexts counts texts with it too). */
export function charBytes(s: string): number {
  return 24 + (WIDE.test(s) ? 2 : 1) * s.length;
}
