import type { Doc } from '../Store.js';
import { charBytes, KeptLists } from './keptLists.js';
import type { Facet, Kept } from './keptLists.js';
/**
 * The stored texts of objects read lately, per collection, by their row (`seq`) and by id: GET by
 * id, and the pages of lists whose order SQL gives, are answered without reading the objects'
 * texts out of SQLite (a list reads only the rows' numbers from an index). At most MAX_BYTES of
 * heap per collection (16 MiB), and 1 MiB of lists, plus 64 KiB of seen rows: past it the oldest
 * entries go first.
 *
 * The bound is of heap bytes, estimated per entry by bytesOf (its strings' characters, one or two
 * bytes each as V8 keeps them, plus what the entry costs besides: its object, its slots in the two
 * maps and the queue, the strings' headers; measured, see ENTRY_BYTES) and held by the test
 * (hotTexts.test.ts: V8's heap after a full collection). Counting characters only held ~6x the
 * bound (24.8 MB for "4 MiB" of 77-character texts).
 *
 * Which texts are kept: all of a list's texts when the same query is asked again (its rows were
 * kept: see keepList); other rows a list or a read by id (GET by id, an update's read) reads when
 * admit says so (read twice lately, and as long as such texts are read again before they are let
 * go). Keeping every text a list read made range queries with bounds at random over 1,000,000
 * objects churn the kept texts for nothing (each promoted to V8's old generation, then let go),
 * and keeping none made those at 100,000 objects, whose pages fit in the bound, 2-3x dearer
 * (bench/RESULTS.md). Keeping every text a GET by id read did the same to GETs at random over
 * 10,000,000 objects (bench/RESULTS.md, "Issue 41, round 14").
 *
 * Invalidation, stated: an entry is only ever the text of a committed row. It is made by a read
 * (reads run when no write is queued, so what they see is committed); a write that may change or
 * remove a row drops its entry, or the whole collection's, when the write runs in its group
 * commit, before it is committed (a write that then fails leaves no entry either: the next read
 * reads the database again). So an update and a remove by id (`{id}`, or an id with a rule ANDed
 * in) drop their object's entry, any other remove and a rename of the collection drop them all;
 * an insert makes a new row, which has no entry.
 *
 * The rows each query answered (`list`) are kept until a write could change its answer
 * (KeptLists: a write of an object that matches its facet, or any write for a list without one;
 * a remove by a filter, a rename and an index made drop them all), when the write runs: a list
 * polled between such writes is answered from them, texts included.
 *
 * The oldest entry is found in a queue of the entries in the order they were kept (an entry
 * dropped or replaced meanwhile is skipped there, and counted in the bound until it is passed or
 * the queue is cut), not as the first key of the map: a Map whose first keys were deleted steps
 * over their holes to find its first key again, which cost 10 µs and more per text let go once
 * 40,000 texts were kept, growing until the map was rehashed (bench: a range query with random
 * bounds at 100,000 objects went from 0.7 to 2.4 ms of CPU).
 */
export class HotTexts {
  /** Heap bytes of the entries at most (bytesOf each, and DEAD_BYTES per dropped one still queued). */
  static readonly MAX_BYTES = 16 * 1024 * 1024;
  /**
   * An entry's heap besides its strings' characters and headers (charBytes): the Entry object, its
   * slots in `#bySeq` and `#byId` (an ordered hash map's entry and bucket share, with spare
   * capacity), its queue slot. Measured (hotTexts.test.ts, V8 13.6): ~350 bytes; counted with a
   * margin, so that the heap held stays under the bound.
   */
  static readonly ENTRY_BYTES = 400;
  /** A dropped entry still in the queue: its emptied object and slot. */
  static readonly DEAD_BYTES = 96;
  readonly #bySeq = new Map<number, Entry>();
  /** The entries in the order they were kept, from `#head` on (see above). */
  #queue: (Entry | undefined)[] = [];
  #head = 0;
  /** The entries by id (one lookup for a GET by id: the entry, not its row's number). */
  readonly #byId = new Map<string, Entry>();
  #bytes = 0;
  readonly #maxBytes: number;
  /**
   * Rows read per generation of seen rows (see admit): a fourth of the rows the bound
   * keeps (~500 bytes each), 8,192 at 16 MiB. Measured against a window of all of them: the same
   * CPU for ranges at 100,000 objects, RSS 270-283 against 330-334 MB at 1,000,000 (bench/RESULTS.md).
   */
  readonly #window: number;

  /** `maxBytes`: the bound (MAX_BYTES; another in tests). */
  constructor(maxBytes = HotTexts.MAX_BYTES) {
    this.#maxBytes = maxBytes;
    this.#window = Math.max(1024, Math.floor(maxBytes / 2048));
  }

  /** Dropped entries still in the queue. */
  #dead = 0;
  /** Rows read lately (see admit): 2 * 2^SEEN_LOG2 bits, 64 KiB. */
  #seen = new Uint32Array(2 ** SEEN_LOG2 / 32);
  #older = new Uint32Array(2 ** SEEN_LOG2 / 32);
  #seenCount = 0;
  /** One in `#skip` of the rows admit would keep are kept (1 to MAX_SKIP; see #heard). */
  #skip = 1;
  #tick = 0;
  /** Entries kept by admit let go (the oldest first) since the last decision, and those of them read meanwhile. */
  #admittedGone = 0;
  #admittedRead = 0;
  /** The rows a query answered (by its exact plan key and page), until a write could change them. */
  readonly #lists = new KeptLists();
  /** Another number after each write (see {@link generation}). */
  #generation = nextGeneration();

  /** The heap an entry of this text is counted for (see MAX_BYTES). */
  static bytesOf(id: string, text: string): number {
    return HotTexts.ENTRY_BYTES + charBytes(id) + charBytes(text);
  }

  /**
   * Whether a row read (by a list, or by its id) is to be kept: it is kept the second time it is
   * read within the last `#window` to 2 * `#window` rows read (two generations of bits
   * by a hash of the row). An entry is worth keeping only if read again before the oldest-first
   * bound lets it go, about as many kept rows later; rows read once (range queries with bounds at
   * random over a collection much larger than the bound) pass through without churning the kept
   * ones. A false "seen" (hash collisions, a few %) keeps a text once too early, nothing worse.
   */
  admit(seq: number): boolean {
    const h = Math.imul(seq, 0x9e3779b1) >>> (32 - SEEN_LOG2);
    const word = h >>> 5;
    const bit = 1 << (h & 31);
    // Seen within the window: kept, or one in `#skip` of them when the rows kept this way were
    // seldom read again before they were let go (see #heard).
    if (((this.#seen[word] as number) & bit) !== 0 || ((this.#older[word] as number) & bit) !== 0) return this.#skip === 1 || ++this.#tick % this.#skip === 0;
    this.#seen[word] = (this.#seen[word] as number) | bit;
    if (++this.#seenCount >= this.#window) {
      const older = this.#older;
      this.#older = this.#seen;
      this.#seen = older.fill(0);
      this.#seenCount = 0;
    }
    return false;
  }

  /** Heap bytes counted now (entries; lists apart). */
  get bytes(): number {
    return this.#bytes;
  }

  /** The rows, in order, that the query `key` answered, while no write could have changed them. */
  list(key: string): Kept | undefined {
    return this.#lists.list(key);
  }

  /** Keeps the rows the query `key` answered; `facet`: its filter's (see KeptLists). Answers the list kept, if it is. */
  keepList(key: string, seqs: number[], facet?: Facet): Kept | undefined {
    return this.#lists.keep(key, seqs, facet);
  }

  /**
   * A number that is another one after every write of the collection (written, clear), never one
   * this or another collection had before in the process: an answer made of its texts may be kept
   * while it is the same (KeptList answers of `$expand` that read this collection).
   */
  get generation(): number {
    return this.#generation;
  }

  /**
   * A write of the collection: `docs`, the objects it writes as they were before it and are after
   * it (undefined where there is none), drop the lists they may change; without them, every list.
   */
  written(docs?: readonly (Doc | undefined)[]): void {
    this.#generation = nextGeneration();
    if (docs === undefined) this.#lists.clear();
    else this.#lists.written(docs);
  }

  /** The text of the object with this id, when kept. */
  byId(id: string): string | undefined {
    return this.#read(this.#byId.get(id));
  }

  /** The text of the row `seq`, when kept. */
  bySeq(seq: number): string | undefined {
    return this.#read(this.#bySeq.get(seq));
  }

  #read(entry: Entry | undefined): string | undefined {
    if (entry === undefined) return undefined;
    entry.flags |= READ;
    return entry.text;
  }

  /** Keeps the row's text; `admitted`: because admit said so, counted in what decides admit's share. */
  set(seq: number, id: string, text: string, admitted = false): void {
    const bytes = HotTexts.bytesOf(id, text);
    if (bytes > this.#maxBytes / 64) return;
    this.#drop(seq);
    const entry: Entry = { seq, id, text, bytes, flags: admitted ? ADMITTED : 0, pick: undefined, picked: undefined, pickedBytes: 0 };
    this.#bySeq.set(seq, entry);
    this.#byId.set(id, entry);
    this.#queue.push(entry);
    this.#bytes += bytes;
    this.#trim();
    // Every entry kept is in the queue once, past the head; entries dropped or replaced stay there
    // (emptied, counted as DEAD_BYTES) until passed: the queue is cut when the dropped ones are a
    // fourth of the kept ones, or the passed part (slots emptied) is most of it.
    if (this.#dead > 1024 && this.#dead * 4 > this.#bySeq.size) {
      this.#queue = this.#queue.slice(this.#head).filter((e) => e !== undefined && this.#bySeq.get(e.seq) === e);
      this.#head = 0;
      this.#bytes -= this.#dead * HotTexts.DEAD_BYTES;
      this.#dead = 0;
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
    if (known !== undefined) this.#drop(known.seq);
  }

  clear(): void {
    this.#bySeq.clear();
    this.#byId.clear();
    this.#queue = [];
    this.#head = 0;
    this.#bytes = 0;
    this.#dead = 0;
    this.written();
  }

  /** Drops the oldest entries while over the bound. */
  #trim(): void {
    while (this.#bytes > this.#maxBytes && this.#head < this.#queue.length) {
      const oldest = this.#queue[this.#head] as Entry;
      // The passed slot emptied: the queue holds no entry it has passed.
      this.#queue[this.#head++] = undefined;
      if (this.#bySeq.get(oldest.seq) === oldest) {
        if ((oldest.flags & ADMITTED) !== 0) this.#heard((oldest.flags & READ) !== 0);
        this.#drop(oldest.seq);
      }
      this.#dead--;
      this.#bytes -= HotTexts.DEAD_BYTES;
    }
  }

  /**
   * An entry kept by admit let go, oldest first: whether it was read meanwhile. Per
   * FEEDBACK_ROWS of them: when fewer than a fourth were read, keeping them cost more than it
   * gave (each kept text is promoted to V8's old generation, then let go: the churn that grew the
   * server at 1,000,000 objects), and admit keeps half as many from then on (down to one in
   * MAX_SKIP); when half or more were, twice as many (up to all).
   */
  #heard(read: boolean): void {
    this.#admittedGone++;
    if (read) this.#admittedRead++;
    if (this.#admittedGone < FEEDBACK_ROWS) return;
    if (this.#admittedRead * 4 < this.#admittedGone) this.#skip = Math.min(MAX_SKIP, this.#skip * 2);
    else if (this.#admittedRead * 2 >= this.#admittedGone) this.#skip = Math.max(1, this.#skip / 2);
    this.#admittedGone = 0;
    this.#admittedRead = 0;
  }

  /** Lets go of the row's entry: its strings now, its emptied object when the queue passes it or is cut. */
  #drop(seq: number): void {
    const entry = this.#bySeq.get(seq);
    if (entry === undefined) return;
    this.#bySeq.delete(seq);
    if (this.#byId.get(entry.id) === entry) this.#byId.delete(entry.id);
    this.#bytes -= entry.bytes + entry.pickedBytes - HotTexts.DEAD_BYTES;
    this.#dead++;
    entry.id = '';
    entry.text = '';
    entry.pick = undefined;
    entry.picked = undefined;
  }
}

const ADMITTED = 1;
const READ = 2;
/** Admitted rows let go per decision of admit's share, and the fewest kept (one in MAX_SKIP). */
const FEEDBACK_ROWS = 1024;
const MAX_SKIP = 64;
/** Bits of the seen rows' hash (see admit). */
const SEEN_LOG2 = 18;



function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

interface Entry {
  readonly seq: number;
  /** Emptied when the entry is dropped (it may stay in the queue a while). */
  id: string;
  text: string;
  /** bytesOf(id, text), as counted when kept. */
  readonly bytes: number;
  /** ADMITTED (kept because admit said so), READ (read since kept). */
  flags: number;
  /** The names of the facts kept with the text, the facts (see keepPicked), and their size. */
  pick: readonly string[] | undefined;
  picked: readonly unknown[] | undefined;
  pickedBytes: number;
}

/** The process's generations (HotTexts.generation): one counter, so that no two collections share a number. */
let generations = 0;
function nextGeneration(): number {
  return ++generations;
}
