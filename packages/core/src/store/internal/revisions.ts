import type { Filter } from '../Store.js';

/**
 * The revision of each object of an embedded collection, kept in memory: one process owns an
 * embedded data folder, so every write passes here. An object no write touched since the start is
 * at 0. A removed object's count is kept, and an insert of its id again advances it: a revision
 * never comes back to a value a reader may still hold (bounded by the ids written since the start).
 */
export class Revisions {
  readonly #of = new Map<string, number>();

  of(id: string): number {
    return this.#of.get(id) ?? 0;
  }

  /** An insert or an update of the object. */
  advanced(id: string): void {
    this.#of.set(id, (this.#of.get(id) ?? 0) + 1);
  }
}

/** The one id a conditional write names; a TypeError when the filter names none. */
export function conditionId(filter: Filter): string {
  const id = filter.id;
  if (typeof id !== 'string') throw new TypeError('a write with a revision condition must name one id');
  return id;
}
