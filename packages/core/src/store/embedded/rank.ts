import { wordsOf } from '../../query/search.js';
import type { SearchFilter } from '../../query/search.js';

/**
 * How the engine orders the matches of a `$search` that has no `$sort` (see docs/search.md):
 * BM25 (FTS5's constants, k1 1.2 and b 0.75) over the searched properties' words, computed here
 * for the ranked matches only, and without BM25's inverse document frequency.
 *
 * Why not FTS5's own bm25(): it counts, for each word of the query, every object holding it (its
 * inverse document frequency), so a search of two common words over 1,000,000 objects cost 10-18
 * ms of CPU however few were ranked (bench/RESULTS.md, "Search: ranking without bm25"). And those
 * counts take in every object, the ones the caller may not list too: how a caller's own objects
 * were ordered told how often a word appears in objects hidden from them. Here a score reads only
 * the ranked objects: each query word counts by how often it is in the object (saturating, k1),
 * against the object's length relative to the ranked ones' mean (b); every query word weighs the
 * same. Every ranked object holds every query word (a match), so the score tells apart repeats
 * and lengths, which is what the inverse document frequency weighed too.
 */

const K1 = 1.2;
const B = 0.75;

/** The words of the searched properties of an object, as the search table holds them (a string's, an array's strings'). */
function searchedWords(doc: Record<string, unknown>, fields: readonly string[]): string[] {
  const words: string[] = [];
  for (const field of fields) {
    const value = Object.hasOwn(doc, field) ? doc[field] : undefined;
    if (typeof value === 'string') words.push(...wordsOf(value));
    else if (Array.isArray(value)) for (const item of value) if (typeof item === 'string') words.push(...wordsOf(item));
  }
  return words;
}

/**
 * The order of `docs` (matches of `search`, newest first) by relevance: their indices, the most
 * relevant first; equal scores keep the given order (the newer first).
 */
export function rankOrder(docs: readonly Record<string, unknown>[], search: SearchFilter): number[] {
  const query = [...new Set(search.words)];
  const counts: number[][] = [];
  const lengths: number[] = [];
  let total = 0;
  for (const doc of docs) {
    const words = searchedWords(doc, search.fields);
    const tf = query.map(() => 0);
    for (const word of words) {
      const at = query.indexOf(word);
      if (at >= 0) tf[at] = (tf[at] as number) + 1;
    }
    counts.push(tf);
    lengths.push(words.length);
    total += words.length;
  }
  const mean = docs.length === 0 || total === 0 ? 1 : total / docs.length;
  const scores = counts.map((tf, i) => {
    const norm = K1 * (1 - B + (B * (lengths[i] as number)) / mean);
    let score = 0;
    for (const n of tf) score += (n * (K1 + 1)) / (n + norm);
    return score;
  });
  return docs.map((_, i) => i).sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b);
}
