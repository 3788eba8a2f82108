/**
 * Full-text search (`$search`): what a word is, and what a match is, the same in every store.
 *
 * The text of a query and of a searchable property is cut into words: runs of letters and digits
 * (Unicode), lowercased, accents removed (NFKD, combining marks dropped): "Crème Brûlée's" is
 * `creme`, `brulee`, `s`. An object matches when every word of the query is a word of one of its
 * searchable properties (a string, or an array's strings). That is what SQLite's FTS5 `unicode61`
 * tokenizer with `remove_diacritics 2` does (the embedded engine) and what the in-process matcher
 * below does (live queries, the rows an inexact plan tests).
 */

/** The store filter of a `$search`: every word must be a word of one of `fields`. */
export interface SearchFilter {
  words: string[];
  fields: string[];
}

/** Words of a query at most (more is refused: the cost of a search grows with its words). */
export const MAX_SEARCH_WORDS = 8;
/** Characters of a query at most. */
export const MAX_SEARCH_LENGTH = 256;
/** Characters of one word at most. */
export const MAX_WORD_LENGTH = 64;

const NOT_WORD = /[^\p{L}\p{N}]+/u;
const MARKS = /\p{M}/gu;
/** A character past ASCII (a surrogate too: no `u` flag). Without one, NFKD and the marks change nothing, and a letter or digit is [a-z0-9] once lowercased. */
const NOT_ASCII = /[\u0080-\uffff]/;
const NOT_ASCII_WORD = /[^a-z0-9]+/;

/** The words of a text, in order, repeated ones included. */
export function wordsOf(text: string): string[] {
  const out: string[] = [];
  // The ASCII case costs about a third less (a search ranks hundreds of texts: store/embedded/rank.ts).
  const parts = !NOT_ASCII.test(text) ? text.toLowerCase().split(NOT_ASCII_WORD) : text.normalize('NFKD').replace(MARKS, '').toLowerCase().split(NOT_WORD);
  for (const part of parts) if (part !== '') out.push(part);
  return out;
}

/** The distinct words of a query. */
export function searchWords(text: string): string[] {
  return [...new Set(wordsOf(text))];
}

/** Whether `value` (a searchable property's value) holds every word of `words`. */
function wordsIn(value: unknown, into: Set<string>): void {
  if (typeof value === 'string') for (const word of wordsOf(value)) into.add(word);
  else if (Array.isArray(value)) for (const item of value) if (typeof item === 'string') for (const word of wordsOf(item)) into.add(word);
}

/** Whether an object matches a search (every word in one of the fields). */
export function matchesSearch(doc: Record<string, unknown>, search: SearchFilter): boolean {
  if (search.words.length === 0) return false;
  const words = new Set<string>();
  for (const field of search.fields) if (Object.hasOwn(doc, field)) wordsIn(doc[field], words);
  return search.words.every((word) => words.has(word));
}

/** Whether a filter value is a SearchFilter (as compileQuery makes them). */
export function isSearchFilter(value: unknown): value is SearchFilter {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<SearchFilter>;
  return Array.isArray(v.words) && v.words.every((w) => typeof w === 'string') && Array.isArray(v.fields) && v.fields.every((f) => typeof f === 'string');
}
