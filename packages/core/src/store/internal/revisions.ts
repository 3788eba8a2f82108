import { randomBytes } from 'node:crypto';
import type { Filter } from '../Store.js';

/** Slots of a store's revision table: 64 Ki numbers (512 KiB), whatever the number of objects. */
const SLOTS = 1 << 16;

/**
 * The revisions of an embedded store's objects, kept in memory: one process owns an embedded data
 * folder, so every write passes here. A revision is compared only within one request (read,
 * scripts, then the write on condition that nothing wrote the object in between), never across a
 * restart.
 *
 * Bounded: an object's revision is the slot its collection and id hash to, and each write sets
 * that slot to the next value of one counter. Values never come back (the counter only grows), so
 * a reader never takes another write's state for its own: the write that moved an object moved its
 * slot past every value handed out before. Two objects that share a slot are written as one: a
 * write to the other while a request holds a revision makes that request's conditional write lose
 * (a 409 to retry, as when the object itself was written), never win wrongly. With 64 Ki slots
 * that needs a second write to the same 1/65,536th of the objects within one request's time. (It
 * was a map per collection of every id written since the start: 83 MB after 1,000,000 inserts.)
 */
export class RevisionTable {
  readonly #slots = new Float64Array(SLOTS);
  #last = 0;
  /**
   * Random per table: which ids share a slot cannot be worked out from outside (revisions are
   * never shown), so a client cannot pick ids that keep another object's conditional writes losing.
   */
  readonly #seed = randomBytes(4).readUInt32LE(0);

  /** The revisions of one collection's objects. */
  of(collection: string): Revisions {
    return new Revisions(this, hashOf(collection, 0x811c9dc5 ^ this.#seed));
  }

  /** @internal */
  get(slot: number): number {
    return this.#slots[slot] as number;
  }

  /** @internal */
  advance(slot: number): void {
    this.#last += 1;
    this.#slots[slot] = this.#last;
  }
}

/** One collection's view of its store's RevisionTable. */
export class Revisions {
  readonly #table: RevisionTable;
  readonly #seed: number;

  constructor(table: RevisionTable, seed: number) {
    this.#table = table;
    this.#seed = seed;
  }

  of(id: string): number {
    return this.#table.get(this.#slot(id));
  }

  /** An insert or an update of the object. */
  advanced(id: string): void {
    this.#table.advance(this.#slot(id));
  }

  #slot(id: string): number {
    const h = hashOf(id, Math.imul(this.#seed ^ 0xff, 0x01000193));
    return (h ^ (h >>> 16)) & (SLOTS - 1);
  }
}

/** FNV-1a over the text's UTF-16 code units, from `seed`. */
function hashOf(text: string, seed: number): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}

/** The one id a conditional write names; a TypeError when the filter names none. */
export function conditionId(filter: Filter): string {
  const id = filter.id;
  if (typeof id !== 'string') throw new TypeError('a write with a revision condition must name one id');
  return id;
}
