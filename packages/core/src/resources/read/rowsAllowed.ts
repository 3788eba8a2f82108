import { ruleAllows } from '../../access/compileRule.js';
import type { Filter, StoredTexts } from '../../store/Store.js';

/**
 * The related read of `$expand` by ids, at once, for a caller whose list rule limits it (an owner
 * rule, `{"owner": "@me.id"}`): the store reads the ids' texts with the values of the properties
 * the rule's filter tests, and the rows the filter refuses are dropped. The same rows as the store
 * query `{id: {$in: ids}}` ANDed with the filter, without compiling or scanning one.
 */

/** The top-level properties a filter tests (`a.b` tests `a`), or undefined when it tests anything else. */
export function filterKeys(filter: Filter): string[] | undefined {
  const keys: string[] = [];
  const walk = (f: Filter): boolean => {
    for (const key of Object.keys(f)) {
      if (key === '$and' || key === '$or' || key === '$nor') {
        const list = f[key];
        if (!Array.isArray(list) || !list.every((item) => typeof item === 'object' && item !== null && walk(item as Filter))) return false;
      } else if (key.startsWith('$')) {
        return false;
      } else {
        const head = key.split('.')[0] as string;
        if (!keys.includes(head)) keys.push(head);
      }
    }
    return true;
  };
  return walk(filter) ? keys : undefined;
}

/**
 * The names to read: the caller's `pick`, then each of `keys` it lacks (the same list for the same
 * names, from `lists`: the store keeps what it picked last per list, told by identity).
 */
export function pickWith(pick: readonly string[], keys: readonly string[], lists: Map<string, readonly string[]>): readonly string[] {
  const extra = keys.filter((key) => !pick.includes(key));
  if (extra.length === 0) return pick;
  const all = [...pick, ...extra];
  const name = JSON.stringify(all);
  const kept = lists.get(name);
  if (kept !== undefined) return kept;
  // Bounded: a collection meets few sets of names (its relations' and its rule's).
  if (lists.size >= 64) lists.clear();
  lists.set(name, all);
  return all;
}

/**
 * `found` (read with the names `all`: the caller's `pick` first, then what the filter tests
 * beyond it) without the rows `filter` refuses, its values and spans for `pick` alone, and
 * `listedRows` renumbered. `keys`: the names the filter tests (filterKeys), all in `all`.
 */
export function keepAllowed(found: StoredTexts, all: readonly string[], pickLength: number, filter: Filter, keys: readonly string[]): StoredTexts {
  const width = all.length;
  const tested = keys.map((key) => all.indexOf(key));
  const texts: string[] = [];
  const values: unknown[] = [];
  const spans: number[] = [];
  const newRow: number[] = new Array<number>(found.texts.length);
  for (let row = 0; row < found.texts.length; row++) {
    // The object as far as the filter looks at it: the values of the names it tests.
    const object: Record<string, unknown> = {};
    for (const k of tested) {
      const value = found.values[row * width + k];
      if (value !== undefined) object[all[k] as string] = value;
    }
    if (!ruleAllows(filter, object)) {
      newRow[row] = -1;
      continue;
    }
    newRow[row] = texts.length;
    texts.push(found.texts[row] as string);
    for (let k = 0; k < pickLength; k++) {
      values.push(found.values[row * width + k]);
      spans.push(found.spans[(row * width + k) * 2] as number, found.spans[(row * width + k) * 2 + 1] as number);
    }
  }
  const out: StoredTexts = { texts, values, spans };
  if (found.listedRows !== undefined) out.listedRows = found.listedRows.map((row) => (row < 0 ? -1 : (newRow[row] as number)));
  return out;
}
