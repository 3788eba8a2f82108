import type { Filter } from '../store/Store.js';

/** A query without its `$` commands other than the logical ones (what a count filters by). */
export function withoutCommands(query: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(query)) {
    if (key.startsWith('$') && key !== '$or' && key !== '$and' && key !== '$nor') continue;
    out[key] = query[key];
  }
  return out;
}

/** Both filters (either may be empty). */
export function andFilters(a: Filter, b: Filter): Filter {
  if (Object.keys(b).length === 0) return a;
  if (Object.keys(a).length === 0) return b;
  return { $and: [a, b] };
}
