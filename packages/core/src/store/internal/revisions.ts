import type { Filter } from '../Store.js';

/** Slots of the revision table: 64 Ki numbers (512 KiB), whatever the number of objects. */
const SLOTS = 1 << 16;

/**
 * The revision of each object of an embedded collection, kept in memory: one process owns an
 * embedded data folder, so every write passes here. A revision is compared only within one request
 * (read, scripts, then the write on condition that nothing wrote the object in between), never
 * across a restart.
 *
 * Bounded: an object's revision is the slot its id hashes to, and each write sets that slot to the
 * next value of one counter. Values never come back (the counter only grows), so a reader never
 * takes another write's state for its own: the write that moved an object moved its slot past
 * every value handed out before. Two ids that share a slot are written as one: a write to the
 * other while a request holds a revision makes that request's conditional write lose (a 409 to
 * retry, as when the object itself was written), never win wrongly. With 64 Ki slots that needs
 * a second write to the same 1/65,536th of the ids within one request's time. (It was a map of
 * every id written since the start, which grew without limit on a busy server.)
 */
export class Revisions {
  readonly #slots = new Float64Array(SLOTS);
  #last = 0;

  of(id: string): number {
    return this.#slots[slotOf(id)] as number;
  }

  /** An insert or an update of the object. */
  advanced(id: string): void {
    this.#last += 1;
    this.#slots[slotOf(id)] = this.#last;
  }
}

/** FNV-1a over the id's UTF-16 code units, folded into the table. */
function slotOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return (h ^ (h >>> 16)) & (SLOTS - 1);
}

/** The one id a conditional write names; a TypeError when the filter names none. */
export function conditionId(filter: Filter): string {
  const id = filter.id;
  if (typeof id !== 'string') throw new TypeError('a write with a revision condition must name one id');
  return id;
}
