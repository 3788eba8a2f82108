import type { Collection, Document } from 'mongodb';
import { isMongoServerError } from './mongoDriver.js';
import { SvcError } from '../errors.js';
import { isSearchFilter, matchesSearch } from '../query/search.js';
import type { SearchFilter } from '../query/search.js';
import type { Doc, Filter, FindOptions } from './Store.js';

/**
 * `$search` on MongoDB: a text index over the searchable properties (`svc_search`, language
 * "none": no stemming, no stop words), `$text` to find the candidates (any of the words) and rank
 * them (textScore), then svc's own matcher (query/search.ts: every word a word of one of the
 * properties) on each, so that MongoDB answers what the embedded stores answer. At most
 * MAX_CANDIDATES candidates are read, the best ranked first (the sort asked, else the score).
 * A server without text indexes (FerretDB) reads the candidates by the rest of the filter.
 */

/** Candidates read at most for one `$search`. */
export const MAX_CANDIDATES = 10_000;
const TEXT_INDEX = 'svc_search';

/** Makes the text index for `fields` (none when empty); answers whether the server has text search. */
export async function ensureTextIndex(coll: Collection<Document>, fields: readonly string[]): Promise<boolean> {
  const wanted = [...new Set(fields)].sort();
  let existing: Document | undefined;
  try {
    existing = (await coll.listIndexes().toArray()).find((index) => index.name === TEXT_INDEX);
  } catch (err) {
    if (!(isMongoServerError(err) && err.code === 26)) throw err;
  }
  const weights = existing?.weights as Record<string, unknown> | undefined;
  const same = weights !== undefined && Object.keys(weights).sort().join('\u0000') === wanted.join('\u0000');
  if (same) return true;
  if (existing !== undefined) await coll.dropIndex(TEXT_INDEX);
  if (wanted.length === 0) return true;
  try {
    await coll.createIndex(Object.fromEntries(wanted.map((f) => [f, 'text'])), { name: TEXT_INDEX, default_language: 'none' });
    return true;
  } catch (err) {
    // FerretDB v1 has no text indexes (it answers IndexNotFound or NotImplemented).
    if (isMongoServerError(err) && (err.code === 27 || err.code === 238 || err.code === 115)) return false;
    throw err;
  }
}

/**
 * The filter's `$search` that every match must satisfy (at its top, or in a top-level `$and`),
 * taken out of it. A `$search` anywhere else (in `$or`, `$nor`) is refused: `$text` cannot be
 * there.
 */
export function takeSearch(filter: Filter): { search: SearchFilter | undefined; rest: Filter } {
  let search: SearchFilter | undefined;
  const take = (f: Filter, required: boolean): Filter => {
    const out: Filter = {};
    for (const [key, value] of Object.entries(f)) {
      if (key === '$search') {
        if (!required || search !== undefined || !isSearchFilter(value)) throw new SvcError('INVALID_QUERY', '$search on MongoDB must be at the top of the query (not inside $or or $nor, and once)');
        search = value;
      } else if (key === '$and' && Array.isArray(value)) out.$and = (value as Filter[]).map((part) => take(part, required));
      else if ((key === '$or' || key === '$nor') && Array.isArray(value)) out[key] = (value as Filter[]).map((part) => take(part, false));
      else out[key] = value;
    }
    return out;
  };
  const rest = take(filter, true);
  return { search, rest };
}

/** Whether a filter holds a `$search` anywhere. */
export function hasSearch(filter: Filter): boolean {
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$search') return true;
    if ((key === '$and' || key === '$or' || key === '$nor') && Array.isArray(value) && (value as Filter[]).some((f) => typeof f === 'object' && f !== null && hasSearch(f))) return true;
  }
  return false;
}

/** The objects of a find with `$search`, each tested by svc's matcher, then paged and projected. */
export async function searchMatches(
  coll: Collection<Document>,
  filter: Filter,
  options: FindOptions,
  ctx: { text: boolean; timeoutMs: number; toMongoFilter(filter: Filter): Document; toDoc(raw: Document): Doc; project(fields: FindOptions['fields']): (doc: Doc) => Doc },
): Promise<Doc[]> {
  const { search, rest } = takeSearch(filter);
  if (search === undefined) throw new Error('searchMatches needs a $search');
  if (search.words.length === 0) return [];
  const query = ctx.toMongoFilter(rest);
  if (ctx.text) query.$text = { $search: search.words.join(' ') };
  let cursor = coll.find(query).maxTimeMS(ctx.timeoutMs);
  if (ctx.text) cursor = cursor.project({ svc_score: { $meta: 'textScore' } });
  if (options.sort) cursor = cursor.sort(Object.fromEntries(Object.entries(options.sort).map(([k, v]) => [k === 'id' ? '_id' : k, v])));
  else if (ctx.text) cursor = cursor.sort({ svc_score: { $meta: 'textScore' } });
  const out: Doc[] = [];
  const from = options.skip ?? 0;
  const to = options.limit ? from + options.limit : Infinity;
  let matched = 0;
  for (const raw of await cursor.limit(MAX_CANDIDATES).toArray()) {
    delete raw.svc_score;
    const doc = ctx.toDoc(raw);
    if (!matchesSearch(doc, search)) continue;
    if (matched++ < from) continue;
    out.push(doc);
    if (matched >= to) break;
  }
  return out.map(ctx.project(options.fields));
}
