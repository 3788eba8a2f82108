/**
 * Spliced texts kept for reuse (`$expand` from stored texts, expandTexts.ts). A spliced text is a
 * pure function of the text it was made from and of its edits (where each value is replaced and by
 * what text, what is appended): the same text with the same edits is the same answer, for any
 * caller, because the edits' texts were read for the caller before the memo is asked. So a list
 * expanded again (the same objects, related objects unchanged) reuses each object's spliced text
 * instead of splicing it again; a changed object or related object has a new text (the store's
 * kept text of an updated object is a new string, and a text the caller may not see is `null` in
 * the edits), which is a miss. Compared by value (`===` on strings), so nothing but the inputs'
 * contents decides a hit.
 *
 * Bounded by the characters it holds: two generations, the younger filled up to a budget, then
 * made the older one (the older one let go); a hit in the older one is moved to the younger.
 */

/** (start, end, text) triples of a text's replaced values, in the order they came. */
export type Replaced = readonly (number | string)[] | undefined;
/** Properties appended to a text. */
export type Added = readonly string[] | undefined;

/**
 * A kept splice, as {@link SplicedTexts.known} answers it. `relation` is set when the splice
 * replaced at most the one value of that forward relation (expandTexts.ts, expandKnown), with
 * `id` the id its replacement was read for, or null when nothing is read for it: the object has
 * no value there (nothing replaced), or one that is no id (replaced by null).
 */
export interface KnownSplice {
  readonly relation: string | undefined;
  readonly id: string | null;
  readonly replacement: string;
  readonly out: string;
}

interface Spliced {
  /**
   * The first replaced value's start, end and text (-1, -1, '': nothing replaced), as fields: a
   * hit reads them with the entry itself. Most splices replace one value, and a list of them is
   * two more objects to load, mostly cache misses for a list's hundred entries.
   */
  start: number;
  end: number;
  replacement: string;
  /** All the triples when there are more than one (then compared as a list), else undefined. */
  several: Replaced;
  added: Added;
  /** See KnownSplice. */
  relation: string | undefined;
  id: string | null;
  out: string;
  /** The characters this entry holds (its key, edits' texts and answer). */
  size: number;
}

/** Characters the younger generation holds before it becomes the older one (two generations: at most twice this, ~2 bytes each). */
const GENERATION_CHARS = 4_000_000;

export class SplicedTexts {
  private young = new Map<string, Spliced>();
  private old = new Map<string, Spliced>();
  private youngChars = 0;
  private readonly budget: number;

  constructor(budget = GENERATION_CHARS) {
    this.budget = budget;
  }

  /** `text` spliced with these edits, if it was kept (nothing of the edits is kept: the caller may reuse their lists). */
  get(text: string, replaced: Replaced, added: Added): string | undefined {
    if (replaced === undefined) return this.take(text, -1, -1, '', undefined, added);
    if (replaced.length === 3) return this.take(text, replaced[0] as number, replaced[1] as number, replaced[2] as string, undefined, added);
    return this.take(text, replaced[0] as number, replaced[1] as number, replaced[2] as string, replaced, added);
  }

  /**
   * {@link get} of a text with one value replaced, `[start, end, replacement]`, without making that
   * list; with `relation`, only a splice kept for that relation and id (see KnownSplice).
   */
  getOne(text: string, start: number, end: number, replacement: string, added: Added, relation?: string, id: string | null = null): string | undefined {
    return this.take(text, start, end, replacement, undefined, added, relation, id);
  }

  /** The kept splice of `text`, whatever its edits (the caller checks them: see KnownSplice). */
  known(text: string): KnownSplice | undefined {
    const kept = this.young.get(text);
    if (kept !== undefined) return kept;
    const older = this.old.get(text);
    if (older === undefined) return undefined;
    this.old.delete(text);
    this.put(text, older);
    return older;
  }

  /** Keeps `out` as `text` spliced with these edits (an entry larger than the budget is not kept); `relation` and `id`: see KnownSplice. */
  set(text: string, replaced: Replaced, added: Added, out: string, relation?: string, id: string | null = null): void {
    let size = text.length + out.length;
    for (const e of replaced ?? []) if (typeof e === 'string') size += e.length;
    for (const a of added ?? []) size += a.length;
    if (size > this.budget) return;
    this.old.delete(text);
    const one = replaced !== undefined && replaced.length >= 3;
    this.put(text, {
      start: one ? (replaced[0] as number) : -1,
      end: one ? (replaced[1] as number) : -1,
      replacement: one ? (replaced[2] as string) : '',
      several: replaced !== undefined && replaced.length > 3 ? replaced : undefined,
      added,
      relation,
      id,
      out,
      size,
    });
  }

  /** The characters held now (both generations). */
  get chars(): number {
    let old = 0;
    for (const entry of this.old.values()) old += entry.size;
    return this.youngChars + old;
  }

  /** The kept answer for these edits (`several`: all the triples, when more than one), a hit in the older generation moved to the younger. */
  private take(text: string, start: number, end: number, replacement: string, several: Replaced, added: Added, relation?: string, id: string | null = null): string | undefined {
    const kept = this.young.get(text);
    if (kept !== undefined) return matches(kept, start, end, replacement, several, added, relation, id) ? kept.out : undefined;
    const older = this.old.get(text);
    if (older === undefined || !matches(older, start, end, replacement, several, added, relation, id)) return undefined;
    this.old.delete(text);
    this.put(text, older);
    return older.out;
  }

  private put(text: string, entry: Spliced): void {
    const replacing = this.young.get(text);
    if (replacing !== undefined) this.youngChars -= replacing.size;
    if (this.youngChars + entry.size > this.budget) {
      this.old = this.young;
      this.young = new Map();
      this.youngChars = 0;
    }
    this.young.set(text, entry);
    this.youngChars += entry.size;
  }
}

function matches(entry: Spliced, start: number, end: number, replacement: string, several: Replaced, added: Added, relation: string | undefined, id: string | null): boolean {
  if (entry.start !== start || entry.end !== end || entry.replacement !== replacement || !sameList(entry.added, added)) return false;
  if (relation !== undefined && (entry.relation !== relation || entry.id !== id)) return false;
  return several === undefined ? entry.several === undefined : sameList(entry.several, several);
}

function sameList<T>(a: readonly T[] | undefined, b: readonly T[] | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
