import { describe, expect, it } from 'vitest';
import { planRead } from '../../../src/store/embedded/planner.js';
import { PathFacts, NUMBER, STRING, BOOL, ARRAY, OBJECT, NULL } from '../../../src/store/embedded/paths.js';
import type { Filter, FindOptions } from '../../../src/store/Store.js';

// The planner without a database: what SQL a filter becomes, what is bound, and whether the
// executor must test the objects itself (exact: false).
const facts = new PathFacts([
  ['n', NUMBER],
  ['title', STRING],
  ['done', BOOL],
  ['mixed', NUMBER | BOOL | STRING],
  ['tags', ARRAY],
  ['address', OBJECT],
  ['address.city', STRING],
  ['nick', NULL | STRING],
]);
const ctx = { facts, indexed: new Set(['n']) };
const plan = (filter: Filter, options: Omit<FindOptions, 'fields'> = {}) => planRead(filter, options, ctx);

describe('planner', () => {
  it.each<[string, Filter, string, unknown[], boolean]>([
    ['everything', {}, '1', [], true],
    ['id equality', { id: 'a1' }, 'id = ?1', ['a1'], true],
    ['a number id matches nothing', { id: 5 }, '0', [], true],
    ['indexed property: the index literal, value bound', { n: 5 }, `json_extract(doc, '$."n"') = ?1`, [5], true],
    ['unindexed property: the path bound too', { title: 'x' }, 'json_extract(doc, ?1) = ?2', ['$."title"', 'x'], true],
    ['a boolean where numbers were never stored needs no type guard', { done: true }, 'json_extract(doc, ?1) = 1', ['$."done"'], true],
    ['a number where booleans were stored is guarded by its JSON type', { mixed: 1 }, "json_extract(doc, ?1) = ?2 AND json_type(doc, ?1) IN ('integer', 'real')", ['$."mixed"', 1], true],
    ['a range on mixed kinds compares only numbers', { mixed: { $gt: 1 } }, "json_extract(doc, ?1) > ?2 AND json_type(doc, ?1) IN ('integer', 'real')", ['$."mixed"', 1], true],
    ['null is missing too', { nick: null }, 'json_extract(doc, ?1) IS NULL', ['$."nick"'], true],
    ['a string in an array property: a superset, then tested', { tags: 'x' }, "EXISTS (SELECT 1 FROM json_each(doc, ?1) WHERE value = ?2 AND type = 'text')", ['$."tags"', 'x'], false],
    ['$ne on an array property cannot be negated in SQL', { tags: { $ne: 'x' } }, '1', [], false],
    ['$ne elsewhere is NOT of a two-valued condition (missing matches)', { title: { $ne: 'x' } }, 'NOT COALESCE((json_extract(doc, ?1) = ?2), 0)', ['$."title"', 'x'], true],
    ['$in of strings', { title: { $in: ['a', 'b'] } }, 'json_extract(doc, ?1) IN (?2, ?3)', ['$."title"', 'a', 'b'], true],
    ['$in of many ids is one bound JSON array', { id: { $in: Array.from({ length: 20 }, (_, i) => `i${i}`) } }, 'id IN (SELECT value FROM json_each(?1))', [JSON.stringify(Array.from({ length: 20 }, (_, i) => `i${i}`))], true],
    ['an empty $in matches nothing', { title: { $in: [] } }, '0', [], true],
    ['dotted path through objects only', { 'address.city': 'Oslo' }, 'json_extract(doc, ?1) = ?2', ['$."address"."city"', 'Oslo'], true],
    ['dotted path through an array is left to the matcher', { 'tags.k': 'x' }, '1', [], false],
    ['$regex is left to the matcher', { title: { $regex: /x/ } }, '1', [], false],
    ['$exists', { nick: { $exists: true } }, 'json_type(doc, ?1) IS NOT NULL', ['$."nick"'], true],
    ['$size', { tags: { $size: 2 } }, "(json_type(doc, ?1) = 'array' AND json_array_length(doc, ?1) = ?2)", ['$."tags"', 2], true],
    ['$or of exact branches', { $or: [{ n: 1 }, { title: 'x' }] }, `(json_extract(doc, '$."n"') = ?1) OR (json_extract(doc, ?2) = ?3)`, [1, '$."title"', 'x'], true],
    ['$or with a branch that selects anything', { $or: [{ n: 1 }, { title: { $regex: /x/ } }] }, '1', [], false],
    ['$and keeps the exact part as a superset', { n: { $gte: 3 }, title: { $regex: /x/ } }, `json_extract(doc, '$."n"') >= ?1`, [3], false],
    ['$nor', { $nor: [{ n: 1 }] }, `NOT COALESCE((json_extract(doc, '$."n"') = ?1), 0)`, [1], true],
    ['a date compares its milliseconds', { at: { $gt: new Date(5) } }, 'json_extract(doc, ?1) > ?2', ['$."at"."$$date"', 5], true],
    ['a name SQLite cannot quote is left to the matcher', { 'we"ird': 1 }, '1', [], false],
    ['a value never goes into the SQL text', { title: "x' OR 1=1 --" }, 'json_extract(doc, ?1) = ?2', ['$."title"', "x' OR 1=1 --"], true],
  ])('%s', (_title, filter, where, params, exact) => {
    const p = plan(filter);
    expect(p.where).toBe(where);
    expect(p.params).toEqual(params);
    expect(p.exact).toBe(exact);
  });

  it('sorts in SQL when a property holds one kind, in the process when kinds mix or arrays', () => {
    expect(plan({}, { sort: { n: -1 } })).toMatchObject({ orderBy: `json_extract(doc, '$."n"') DESC, seq`, sortInProcess: false, pageInSql: true });
    expect(plan({}, { sort: { mixed: 1 } })).toMatchObject({ orderBy: 'seq', sortInProcess: true, pageInSql: false });
    expect(plan({}, { sort: { tags: 1 } })).toMatchObject({ sortInProcess: true });
    expect(plan({}, { sort: { id: 1, title: -1 } })).toMatchObject({ orderBy: 'id ASC, json_extract(doc, ?1) DESC, seq', params: ['$."title"'] });
    expect(plan({ title: { $regex: /x/ } }, { sort: { n: 1 } })).toMatchObject({ sortInProcess: false, pageInSql: false, exact: false });
  });

  it('knows nothing of paths past its limits: they are any kind', () => {
    const deep = new PathFacts([['a', OBJECT], ['a.b', OBJECT], ['a.b.c', OBJECT], ['a.b.c.d', OBJECT]]);
    // e may hold an array (not tracked): the equality is a superset, tested in the process.
    expect(planRead({ 'a.b.c.d.e': 1 }, {}, { facts: deep, indexed: new Set() }).exact).toBe(false);
    expect(planRead({ 'a.b.c.d.e': 1 }, {}, { facts: deep, indexed: new Set() }).where).toContain('json_each');
    const over = new PathFacts([], true);
    expect(planRead({ x: 1 }, {}, { facts: over, indexed: new Set() }).exact).toBe(false);
  });

  it('refuses what the query language refuses', () => {
    expect(() => plan({ $where: 'x' })).toThrow(/unsupported query operator/);
    expect(() => plan({ n: { $foo: 1 } })).toThrow(/unsupported query operator/);
    expect(() => plan({ n: { $gt: 1, x: 2 } })).toThrow(/cannot mix/);
    expect(() => plan({ n: { $in: 1 } })).toThrow(/need an array/);
    expect(() => plan({ n: { $options: 'i' } })).toThrow(/\$options without \$regex/);
  });

  it('plans a ranked search as one walk of the search table, newest first, with the rest of the filter: no rank from SQLite', () => {
    const searching = { ...ctx, search: { fts: 's1', fields: ['title'] } };
    const search = { words: ['kiwi', 'plum'], fields: ['title'] };
    const p = planRead({ $search: search, done: false, n: { $gt: 3 } }, { limit: 20 }, searching, true);
    expect(p.ranked).toEqual({
      fts: '"s1"',
      // The search and the rest of the filter together: the newest matches of the whole filter are ranked.
      where: `"s1" MATCH ?1 AND ((json_extract(doc, ?2) = 0) AND (json_extract(doc, '$."n"') > ?3))`,
      params: ['"kiwi" AND "plum"', '$."done"', 3],
      exact: true,
      search,
      // `n` is indexed: its condition is the probe (counted through its index); the rest alone reads the few objects.
      selective: {
        probe: `json_extract(doc, '$."n"') > ?1`,
        probeParams: [3],
        restWhere: `(json_extract(doc, ?1) = 0) AND (json_extract(doc, '$."n"') > ?2)`,
        restParams: ['$."done"', 3],
      },
    });
    // No indexed condition (or only inexact ones): no probe; ids are indexed.
    expect(planRead({ $search: search, done: false }, {}, searching, true).ranked?.selective).toBeUndefined();
    expect(planRead({ $search: search, n: { $regex: /1/ } }, {}, searching, true).ranked?.selective).toBeUndefined();
    expect(planRead({ $and: [{ $search: search }, { $and: [{ id: 'a' }, { done: true }] }] }, {}, searching, true).ranked?.selective?.probe).toBe('id = ?1');
    // FTS5's rank (bm25 counts every object holding each word) is never asked for.
    expect([p.where, p.orderBy, p.ranked?.where].join(' ')).not.toMatch(/\brank\b|bm25/);
    // In a top-level $and: taken out of it; alone: the match only.
    expect(planRead({ $and: [{ n: 1 }, { $search: search }] }, {}, searching, true).ranked?.where).toBe(`"s1" MATCH ?1 AND (json_extract(doc, '$."n"') = ?2)`);
    expect(planRead({ $search: search }, {}, searching, true).ranked?.where).toBe('"s1" MATCH ?1');
    // The rest not exact: ranked too, its objects tested in the process.
    expect(planRead({ $search: search, title: { $regex: /x/ } }, {}, searching, true).ranked).toMatchObject({ where: '"s1" MATCH ?1', exact: false });
    // Not ranked: a sort, a count, no word, a field the search table does not hold.
    expect(planRead({ $search: search }, { sort: { n: 1 } }, searching, true).ranked).toBeUndefined();
    expect(planRead({ $search: search }, {}, searching, false).ranked).toBeUndefined();
    expect(planRead({ $search: { words: [], fields: ['title'] } }, {}, searching, true).ranked).toBeUndefined();
    expect(planRead({ $search: { words: ['kiwi'], fields: ['body'] } }, {}, searching, true).ranked).toBeUndefined();
  });
});
