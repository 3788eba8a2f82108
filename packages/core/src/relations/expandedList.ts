import { jsonList } from '../jsonList.js';

/**
 * The JSON list of a collection's last `$expand` answer from stored texts, kept with the texts it
 * was joined from: the same list expanded again (the same objects, related objects unchanged,
 * each spliced text found in the splice memo) compares its texts with the kept ones and answers
 * the kept string, instead of copying ~40 KB into a new one. The join is a pure function of the
 * texts: equal texts (compared by value, `===`) make the same answer for any caller, because
 * every text was read and spliced for this caller before (expandTexts.ts). One list is kept per
 * collection, so what it holds is bounded by one answer; another list is joined as before.
 */
export class ExpandedList {
  #texts: readonly string[] = [];
  #json = '';

  /** `jsonList(texts)`; `texts` is the caller's own list, which jsonList may change (its first and last text). */
  join(texts: string[]): string {
    if (this.#json !== '' && sameTexts(this.#texts, texts)) return this.#json;
    // Kept before jsonList puts the brackets onto the ends.
    const kept = texts.slice();
    const json = jsonList(texts);
    this.#texts = kept;
    this.#json = json;
    return json;
  }
}

function sameTexts(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
