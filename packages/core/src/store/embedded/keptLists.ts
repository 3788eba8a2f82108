import type { Doc, Filter, KeptList } from '../Store.js';

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
 *
 * Each list may hold one answer made of its rows (KeptList.keep: a `$expand` answer), dropped with
 * the list. Answers count apart, at most MAX_ANSWER_BYTES (two bytes a character, each at most a
 * sixteenth of it): when full, every answer is let go and the lists stay.
 */
export class KeptLists {
  static readonly MAX_LISTS = 4096;
  static readonly MAX_BYTES = 2 * 1024 * 1024;
  static readonly MAX_ANSWER_BYTES = 16 * 1024 * 1024;
  /** Facet paths at most (each write looks at each); a list of another path is kept without a facet. */
  static readonly MAX_PATHS = 16;
  readonly #lists = new Map<string, Kept>();
  #answerBytes = 0;
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

  /** The bytes answers are counted for now. */
  get answerBytes(): number {
    return this.#answerBytes;
  }

  /** The rows the query `key` answered, while no write could have changed them. */
  get(key: string): number[] | undefined {
    return this.#lists.get(key)?.seqs;
  }

  /** The list of the query `key` (its rows and its answer), while no write could have changed it. */
  list(key: string): Kept | undefined {
    return this.#lists.get(key);
  }

  /** Keeps the rows; answers the list kept (undefined when it is not: too large, or the query's list is kept already). */
  keep(key: string, seqs: number[], facet: Facet | undefined): Kept | undefined {
    const bytes = KeptLists.bytesOf(key, seqs);
    if (bytes > KeptLists.MAX_BYTES / 16 || this.#lists.has(key)) return undefined;
    if (this.#lists.size >= KeptLists.MAX_LISTS || this.#bytes + bytes > KeptLists.MAX_BYTES) this.clear();
    // Each write looks at every facet path: a client naming many properties makes plain lists.
    const facetKept = facet !== undefined && (this.#byFacet.has(facet.path) || this.#byFacet.size < KeptLists.MAX_PATHS) ? facet : undefined;
    const kept = new Kept(this, key, seqs, facetKept, bytes);
    this.#lists.set(key, kept);
    this.#bytes += bytes;
    if (facetKept === undefined) {
      this.#plain.add(key);
      return kept;
    }
    let byValue = this.#byFacet.get(facetKept.path);
    if (byValue === undefined) this.#byFacet.set(facetKept.path, (byValue = new Map()));
    let keys = byValue.get(facetKept.value);
    if (keys === undefined) byValue.set(facetKept.value, (keys = new Set()));
    keys.add(key);
    return kept;
  }

  /** Kept.keep: the answer kept with `kept` while it is the list kept for its query (made of rows a write has not dropped since). */
  keepAnswer(kept: Kept, key: string, text: string): void {
    if (this.#lists.get(kept.key) !== kept) return;
    const bytes = 64 + 2 * (key.length + text.length);
    if (bytes > KeptLists.MAX_ANSWER_BYTES / 16) return;
    this.#dropAnswer(kept);
    if (this.#answerBytes + bytes > KeptLists.MAX_ANSWER_BYTES) this.#dropAnswers();
    kept.answered = { key, text, bytes };
    this.#answerBytes += bytes;
  }

  #dropAnswer(kept: Kept): void {
    if (kept.answered === undefined) return;
    this.#answerBytes -= kept.answered.bytes;
    kept.answered = undefined;
  }

  #dropAnswers(): void {
    for (const kept of this.#lists.values()) kept.answered = undefined;
    this.#answerBytes = 0;
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
    this.#dropAnswers();
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
    this.#dropAnswer(kept);
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

/** A list kept: its query's key, its rows, its facet, and the answer kept with it. */
export class Kept implements KeptList {
  answered: { readonly key: string; readonly text: string; readonly bytes: number } | undefined;

  readonly lists: KeptLists;
  readonly key: string;
  readonly seqs: number[];
  readonly facet: Facet | undefined;
  readonly bytes: number;

  constructor(lists: KeptLists, key: string, seqs: number[], facet: Facet | undefined, bytes: number) {
    this.lists = lists;
    this.key = key;
    this.seqs = seqs;
    this.facet = facet;
    this.bytes = bytes;
  }

  /** The answer kept under `key` (a list dropped has none: KeptLists drops its answer with it). */
  answer(key: string): string | undefined {
    const answered = this.answered;
    return answered !== undefined && answered.key === key ? answered.text : undefined;
  }

  keep(key: string, text: string): void {
    this.lists.keepAnswer(this, key, text);
  }
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
