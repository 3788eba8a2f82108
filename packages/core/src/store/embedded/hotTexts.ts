/**
 * The stored texts of objects read lately, per collection, by their row (`seq`) and by id: GET by
 * id, and the pages of lists whose order SQL gives, are answered without reading the objects'
 * texts out of SQLite (a list reads only the rows' numbers from an index). At most MAX_BYTES of
 * text: past it the oldest entries go first.
 *
 * Invalidation, stated: an entry is only ever the text of a committed row. It is made by a read
 * (reads run when no write is queued, so what they see is committed); a write that may change or
 * remove a row drops its entry, or the whole collection's, when the write runs in its group
 * commit, before it is committed (a write that then fails leaves no entry either: the next read
 * reads the database again). So an update drops its object's entry, a remove (any filter) and a
 * rename of the collection drop them all; an insert makes a new row, which has no entry.
 *
 * The rows each query answered (`list`) are kept until any write of the collection (an insert,
 * an update, a remove, a rename, an index made: `written`), when the write runs: a list polled
 * between writes is answered from them, texts included.
 *
 * The oldest entry is found in a queue of the entries in the order they were kept (an entry
 * dropped or replaced meanwhile is skipped there), not as the first key of the map: a Map whose
 * first keys were deleted steps over their holes to find its first key again, which cost 10 µs
 * and more per text let go once 40,000 texts were kept, growing until the map was rehashed
 * (bench: a range query with random bounds at 100,000 objects went from 0.7 to 2.4 ms of CPU).
 */
export class HotTexts {
  static readonly MAX_BYTES = 4 * 1024 * 1024;
  /** Lists kept at most, and rows in them in all. */
  static readonly MAX_LISTS = 256;
  static readonly MAX_LISTED = 100_000;
  readonly #bySeq = new Map<number, Entry>();
  /** The entries in the order they were kept, from `#head` on (see above). */
  #queue: Entry[] = [];
  #head = 0;
  readonly #byId = new Map<string, number>();
  #bytes = 0;
  /** The rows a query answered (by its exact plan key and page), until the next write of the collection. */
  readonly #lists = new Map<string, number[]>();
  #listed = 0;

  /** The rows, in order, that the query `key` answered since the collection was last written to. */
  list(key: string): number[] | undefined {
    return this.#lists.get(key);
  }

  keepList(key: string, seqs: number[]): void {
    if (seqs.length > HotTexts.MAX_LISTED / 16) return;
    if (this.#lists.size >= HotTexts.MAX_LISTS || this.#listed + seqs.length > HotTexts.MAX_LISTED) this.written();
    this.#lists.set(key, seqs);
    this.#listed += seqs.length;
  }

  /** A write of the collection (any): the lists may answer otherwise now. */
  written(): void {
    this.#lists.clear();
    this.#listed = 0;
  }

  /** The text of the object with this id, when kept. */
  byId(id: string): string | undefined {
    const seq = this.#byId.get(id);
    return seq === undefined ? undefined : this.#bySeq.get(seq)?.text;
  }

  /** The text of the row `seq`, when kept. */
  bySeq(seq: number): string | undefined {
    return this.#bySeq.get(seq)?.text;
  }

  set(seq: number, id: string, text: string): void {
    if (text.length > HotTexts.MAX_BYTES / 64) return;
    this.#drop(seq);
    const entry: Entry = { seq, id, text, pick: undefined, picked: undefined, pickedBytes: 0 };
    this.#bySeq.set(seq, entry);
    this.#byId.set(id, seq);
    this.#queue.push(entry);
    this.#bytes += text.length + id.length;
    this.#trim();
    // Every entry kept is in the queue once, past the head; entries dropped or replaced stay there
    // until passed: the queue is cut when the passed part, or the dropped ones, are most of it.
    const waiting = this.#queue.length - this.#head;
    if (waiting > 2 * this.#bySeq.size + 1024) {
      this.#queue = this.#queue.slice(this.#head).filter((e) => this.#bySeq.get(e.seq) === e);
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * What textsOf found for the names `pick` in the row's text, when kept with the text (see
   * keepPicked): a list read again and again with the same names (On Get over a list reads the
   * script's properties) then skips searching every text.
   */
  picked(seq: number, text: string, pick: readonly string[]): readonly unknown[] | undefined {
    const entry = this.#bySeq.get(seq);
    if (entry?.picked === undefined || entry.text !== text) return undefined;
    return entry.pick === pick || sameNames(entry.pick as readonly string[], pick) ? entry.picked : undefined;
  }

  /**
   * Keeps textsOf's facts for `pick` with the row's text (replacing those of other names), counted
   * in the bound as `bytes`; none when the row is not kept. They are facts of the text alone, which
   * never changes for an entry (a write drops the entry), so they need no invalidation of their own.
   */
  keepPicked(seq: number, text: string, pick: readonly string[], picked: readonly unknown[], bytes: number): void {
    const entry = this.#bySeq.get(seq);
    if (entry === undefined || entry.text !== text) return;
    this.#bytes += bytes - entry.pickedBytes;
    entry.pick = pick;
    entry.picked = picked;
    entry.pickedBytes = bytes;
    this.#trim();
  }

  /** Drops the entry of an object (an update), by its row or its id. */
  delete(seq: number | undefined, id: string): void {
    if (seq !== undefined) this.#drop(seq);
    const known = this.#byId.get(id);
    if (known !== undefined) this.#drop(known);
  }

  clear(): void {
    this.#bySeq.clear();
    this.#byId.clear();
    this.#queue = [];
    this.#head = 0;
    this.#bytes = 0;
    this.written();
  }

  /** Drops the oldest entries while over the bound. */
  #trim(): void {
    while (this.#bytes > HotTexts.MAX_BYTES) {
      const oldest = this.#queue[this.#head++] as Entry;
      if (this.#bySeq.get(oldest.seq) === oldest) this.#drop(oldest.seq);
    }
  }

  #drop(seq: number): void {
    const entry = this.#bySeq.get(seq);
    if (entry === undefined) return;
    this.#bySeq.delete(seq);
    if (this.#byId.get(entry.id) === seq) this.#byId.delete(entry.id);
    this.#bytes -= entry.text.length + entry.id.length + entry.pickedBytes;
  }
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

interface Entry {
  readonly seq: number;
  readonly id: string;
  readonly text: string;
  /** The names of the facts kept with the text, the facts (see keepPicked), and their size. */
  pick: readonly string[] | undefined;
  picked: readonly unknown[] | undefined;
  pickedBytes: number;
}
