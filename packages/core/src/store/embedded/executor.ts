import type { Doc, Filter, FindOptions } from '../Store.js';
import { matchesFilter } from '../embeddedStore.js';
import { nedbModel } from '../internal/nedbModel.js';
import { decodeDoc } from './codec.js';
import type { Engine } from './engine.js';
import { MAX_RANKED, planRead } from './planner.js';
import type { RankedPlan, ReadPlan } from './planner.js';
import { rankOrder } from './rank.js';
import { matchesSearch } from '../../query/search.js';
import type { TableInfo } from './schema.js';
import { ident } from './sqlText.js';
import type { HotTexts } from './hotTexts.js';
import { plainJson } from '../../query/plainJson.js';
import { facetOf } from './keptLists.js';
import type { Kept } from './keptLists.js';

/**
 * The executor: runs a plan (planner.ts) on a collection's table. An exact plan is answered by
 * SQL alone (WHERE, ORDER BY, LIMIT/OFFSET); otherwise the rows SQL selects are tested with the
 * query language's matcher one by one (and sorted here when SQL cannot sort them), stopping at
 * the page's end when the order is SQL's.
 */

/** Matching objects in answer order: their stored texts, their sequence numbers, and the objects when they had to be read. */
export interface Rows {
  texts: string[];
  seqs: number[];
  /** `docs[i]` is decodeDoc(texts[i]) when the matcher or the sort read it (undefined otherwise). */
  docs: (Doc | undefined)[];
  /** The list kept with these rows (see KeptLists), when they are one's. */
  list?: Kept;
}

/**
 * The objects `filter` matches, ordered and paged as `options` say. With `hot`, a plan whose order
 * and page SQL gives reads only the rows' numbers, and the texts kept in `hot` (those not kept are
 * read in one more statement, and kept).
 */
export function selectRows(engine: Engine, info: TableInfo, filter: Filter, options: Omit<FindOptions, 'fields'>, hot?: HotTexts): Rows {
  const { anyOrder, key, from, to, listKey } = pageOf(filter, options, hot !== undefined);
  // Asked again while no write could change it (see KeptLists): a list polled; its texts are kept
  // from now on. Before planning: only a plan whose order and page SQL gives kept it.
  const listed = listKey === undefined || hot === undefined ? undefined : hot.list(listKey);
  if (listed !== undefined) {
    const rows = textsOfRows(engine, info, listed.seqs, hot as HotTexts, true);
    rows.list = listed;
    return rows;
  }
  engine.reading();
  const plan = planOf(info, filter, options, !anyOrder, key);
  const order = plan.sortInProcess || (anyOrder && plan.pageInSql && to === undefined) ? '' : ` ORDER BY ${plan.orderBy}`;
  const base = `SELECT seq, doc FROM ${ident(info.tbl)} WHERE ${plan.where}${order}`;
  const rows: Rows = { texts: [], seqs: [], docs: [] };
  if (plan.pageInSql) {
    const n = plan.params.length;
    const paged = from > 0 || to !== undefined;
    const args = paged ? [...plan.params, to === undefined ? -1 : to - from, from] : plan.params;
    if (hot !== undefined) {
      // A query asked once keeps the rows HotTexts.admit lets in (read twice lately).
      if (plan.ranked !== undefined) {
        const ranked = rankedRows(engine, info, plan.ranked, filter, from, to);
        if (listKey !== undefined) ranked.list = hot.keepList(listKey, ranked.seqs, facetOf(filter, info.indexed));
        return ranked;
      }
      const seqs = (engine.prepare(paged ? `SELECT seq${base.slice('SELECT seq, doc'.length)} LIMIT ?${n + 1} OFFSET ?${n + 2}` : `SELECT seq${base.slice('SELECT seq, doc'.length)}`).all(...args) as unknown as [number][]).map((row) => row[0]);
      const list = listKey === undefined ? undefined : hot.keepList(listKey, seqs, facetOf(filter, info.indexed));
      const rows = textsOfRows(engine, info, seqs, hot, false);
      if (list !== undefined) rows.list = list;
      return rows;
    }
    if (plan.ranked !== undefined) return rankedRows(engine, info, plan.ranked, filter, from, to);
    const sql = paged ? `${base} LIMIT ?${n + 1} OFFSET ?${n + 2}` : base;
    for (const row of engine.prepare(sql).all(...args) as unknown as [number, string][]) {
      rows.seqs.push(row[0]);
      rows.texts.push(row[1]);
      rows.docs.push(undefined);
    }
    return rows;
  }
  if (plan.ranked !== undefined) return rankedRows(engine, info, plan.ranked, filter, from, to);
  const statement = engine.prepare(base);
  let skipped = 0;
  const matched: { seq: number; text: string; doc: Doc }[] = [];
  for (const row of statement.iterate(...plan.params) as unknown as Iterable<[number, string]>) {
    const doc = decodeDoc(row[1]);
    if (!plan.exact && !matchesFilter(doc, filter)) continue;
    if (!plan.sortInProcess) {
      if (skipped < from) {
        skipped++;
        continue;
      }
      rows.seqs.push(row[0]);
      rows.texts.push(row[1]);
      rows.docs.push(doc);
      if (to !== undefined && rows.texts.length >= to - from) break;
      continue;
    }
    matched.push({ seq: row[0], text: row[1], doc });
  }
  if (!plan.sortInProcess) return rows;
  sortInProcess(matched, options.sort ?? {});
  for (const m of matched.slice(from, to)) {
    rows.seqs.push(m.seq);
    rows.texts.push(m.text);
    rows.docs.push(m.doc);
  }
  return rows;
}

/**
 * A ranked search's page (see RankedPlan): the matches of the whole filter newest first, as many
 * as the page needs and at least MAX_RANKED (all of them without a limit); the first MAX_RANKED
 * ordered by relevance (rankOrder), the rest left newest first.
 */
function rankedRows(engine: Engine, info: TableInfo, plan: RankedPlan, filter: Filter, from: number, to: number | undefined): Rows {
  const sql = `SELECT seq, doc FROM ${plan.fts} CROSS JOIN ${ident(info.tbl)} ON seq = ${plan.fts}.rowid WHERE ${plan.where} ORDER BY ${plan.fts}.rowid DESC`;
  const wanted = to === undefined ? undefined : Math.max(MAX_RANKED, to);
  let found: { seq: number; text: string; doc: Doc | undefined }[] = [];
  const few = plan.selective === undefined ? undefined : selectiveRows(engine, info, plan, filter);
  if (few !== undefined) found = wanted === undefined ? few : few.slice(0, wanted);
  else if (plan.exact) {
    const n = plan.params.length;
    const rows = (wanted === undefined ? engine.prepare(sql).all(...plan.params) : engine.prepare(`${sql} LIMIT ?${n + 1}`).all(...plan.params, wanted)) as unknown as [number, string][];
    for (const row of rows) found.push({ seq: row[0], text: row[1], doc: undefined });
  } else {
    for (const row of engine.prepare(sql).iterate(...plan.params) as unknown as Iterable<[number, string]>) {
      const doc = decodeDoc(row[1]);
      if (!matchesFilter(doc, filter)) continue;
      found.push({ seq: row[0], text: row[1], doc });
      if (wanted !== undefined && found.length >= wanted) break;
    }
  }
  const ranked = found.slice(0, MAX_RANKED);
  for (const f of ranked) f.doc ??= decodeDoc(f.text);
  const order = rankOrder(ranked.map((f) => f.doc as Doc), plan.search);
  const page = [...order.map((i) => ranked[i] as (typeof found)[number]), ...found.slice(MAX_RANKED)].slice(from, to);
  return { seqs: page.map((f) => f.seq), texts: page.map((f) => f.text), docs: page.map((f) => f.doc) };
}

/** A probe that selects at most this many objects is read, its objects tested with the search in the process. */
const SELECTIVE = 2000;
/** Objects of a probe counted at most: past it, the search table is walked. */
const MAX_PROBE = 20_000;

/**
 * The matches of a ranked search newest first, read through the index of the rest of the filter
 * (RankedPlan.selective) when that is the cheaper way; undefined otherwise (the search table is
 * walked). The search is tested with the in-process matcher, which means what the search table
 * means (search.ts): the same matches as the walk. Cheaper: the probe selects at most SELECTIVE
 * objects (counted from its index), or p objects with p * p <= MAX_RANKED * N / 5 (N objects in
 * the collection, at most): a walk reads about MAX_RANKED * N / p matches to find MAX_RANKED that
 * pass the probe, the probe's way reads p objects, each ~4 times dearer (a search tested in the
 * process). At 1,000,000 objects the two cost the same near p = 10,000 (bench/RESULTS.md,
 * "Issue 41: search ranked in the process").
 */
function selectiveRows(engine: Engine, info: TableInfo, plan: RankedPlan, filter: Filter): { seq: number; text: string; doc: Doc }[] | undefined {
  const s = plan.selective;
  if (s === undefined) return undefined;
  const tbl = ident(info.tbl);
  const p = (engine.prepare(`SELECT count(*) FROM (SELECT 1 FROM ${tbl} WHERE ${s.probe} LIMIT ?${s.probeParams.length + 1})`).get(...s.probeParams, MAX_PROBE + 1) as unknown as [number])[0];
  if (p > MAX_PROBE) return undefined;
  if (p > SELECTIVE) {
    const n = (engine.prepare(`SELECT max(seq) FROM ${tbl}`).get() as unknown as [number | null])[0] ?? 0;
    if (p * p > (MAX_RANKED * n) / 5) return undefined;
  }
  const found: { seq: number; text: string; doc: Doc }[] = [];
  for (const row of engine.prepare(`SELECT seq, doc FROM ${tbl} WHERE ${s.restWhere}`).all(...s.restParams) as unknown as [number, string][]) {
    const doc = decodeDoc(row[1]);
    if (matchesSearch(doc, plan.search) && (plan.exact || matchesFilter(doc, filter))) found.push({ seq: row[0], text: row[1], doc });
  }
  return found.sort((a, b) => b.seq - a.seq);
}

/**
 * A read's plan key and page, and with `kept` the key its list is kept by in HotTexts (undefined:
 * none is kept for a key this long): one place for selectRows and keptListOf, so both name the
 * same list.
 */
function pageOf(filter: Filter, options: Omit<FindOptions, 'fields'>, kept: boolean): { anyOrder: boolean; key: string; from: number; to: number | undefined; listKey: string | undefined } {
  const anyOrder = options.anyOrder === true && options.sort === undefined;
  const key = planKey(filter, options, !anyOrder);
  const from = options.skip ?? 0;
  const to = options.limit ? from + options.limit : undefined;
  return { anyOrder, key, from, to, listKey: !kept || key.length > MAX_KEY ? undefined : `${key}|${from}|${to ?? ''}|${anyOrder ? 1 : 0}` };
}

/** The list `hot` keeps for what selectRows(filter, options) answers (the same Kept its rows come with), if any. */
export function keptListOf(filter: Filter, options: Omit<FindOptions, 'fields'>, hot: HotTexts): Kept | undefined {
  const { listKey } = pageOf(filter, options, true);
  return listKey === undefined ? undefined : hot.list(listKey);
}

/** Rows by their numbers, their texts from `hot` or read in one statement (see selectRows), and kept in `hot` when `keep` (else as hot.admit says). */
function textsOfRows(engine: Engine, info: TableInfo, seqs: number[], hot: HotTexts, keep: boolean): Rows {
  const texts: string[] = [];
  let missing: number[] | undefined;
  for (const seq of seqs) {
    const text = hot.bySeq(seq);
    if (text === undefined) (missing ??= []).push(seq);
    texts.push(text as string);
  }
  if (missing !== undefined) {
    engine.reading();
    const read = new Map<number, string>();
    for (const [seq, id, doc] of engine.prepare(`SELECT seq, id, doc FROM ${ident(info.tbl)} WHERE seq IN (SELECT value FROM json_each(?1))`).all(JSON.stringify(missing)) as unknown as [number, string, string][]) {
      read.set(seq, doc);
      if (keep || hot.admit(seq)) hot.set(seq, id, doc, true);
    }
    for (let i = 0; i < seqs.length; i++) if (texts[i] === undefined) texts[i] = read.get(seqs[i] as number) as string;
  }
  return { texts, seqs, docs: new Array<undefined>(seqs.length) };
}

/** Plans kept per table at most. */
const MAX_PLANS = 256;
/** A filter whose key is longer (a long `$in`) is planned each time. */
const MAX_KEY = 2048;

/**
 * planRead's plan, kept per table by the exact filter and sort (a query asked again, a list polled,
 * plans once). Dropped when what the planner reads changes: the path facts grow (TableInfo.plans
 * is cleared by the write that grew them), an index or the search table is made (Schema), the
 * schema is read again (a new TableInfo).
 */
export function planOf(info: TableInfo, filter: Filter, options: Omit<FindOptions, 'fields'>, ranked: boolean, key = planKey(filter, options, ranked)): ReadPlan {
  if (key.length > MAX_KEY) return planRead(filter, options, info, ranked);
  const plans = (info.plans ??= new Map());
  let plan = plans.get(key);
  if (plan === undefined) {
    plan = planRead(filter, options, info, ranked);
    if (plans.size >= MAX_PLANS) plans.delete(plans.keys().next().value as string);
    plans.set(key, plan);
  }
  return plan;
}

/** The exact key of a plan: the filter (values told apart, see exactValues), the sort, whether ranked. */
export function planKey(filter: Filter, options: Omit<FindOptions, 'fields'>, ranked: boolean): string {
  const key = [filter, options.sort ?? 0, ranked];
  // The replacer is a call per value (most of a short list's planning): taken only when a value needs it.
  return JSON.stringify(key, plainJson(key, 0) ? undefined : exactValues);
}

/** A replacer telling apart what JSON would confuse (dates and strings, RegExps, undefined, NaN and null). */
export function exactValues(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  if (raw instanceof Date) return { $d: raw.getTime() };
  if (raw instanceof RegExp) return { $r: raw.source, f: raw.flags };
  if (raw === undefined) return { $u: 1 };
  if (typeof raw === 'number' && !Number.isFinite(raw)) return { $n: String(raw) };
  return value;
}

/** How many objects `filter` matches. */
export function countRows(engine: Engine, info: TableInfo, filter: Filter): number {
  engine.reading();
  const plan: ReadPlan = planOf(info, filter, {}, false);
  if (plan.exact) {
    const row = engine.prepare(`SELECT count(*) FROM ${ident(info.tbl)} WHERE ${plan.where}`).get(...plan.params) as unknown as [number];
    return row[0];
  }
  let n = 0;
  for (const row of engine.prepare(`SELECT doc FROM ${ident(info.tbl)} WHERE ${plan.where}`).iterate(...plan.params) as unknown as Iterable<[string]>) {
    if (matchesFilter(decodeDoc(row[0]), filter)) n++;
  }
  return n;
}

/**
 * Sorts in place with the query language's order across kinds (nedb's compareThings, as the old
 * store sorted); ties keep insertion order.
 */
function sortInProcess(matched: { seq: number; doc: Doc }[], sort: Record<string, 1 | -1>): void {
  const keys = Object.entries(sort).map(([field, direction]) => ({ field, direction: Number(direction) < 0 ? -1 : 1 }));
  const rows = matched.map((m) => ({ m, values: keys.map((k) => nedbModel.getDotValue(m.doc, k.field)) }));
  rows.sort((a, b) => {
    for (let i = 0; i < keys.length; i++) {
      const c = nedbModel.compareThings(a.values[i], b.values[i]);
      if (c !== 0) return c * (keys[i] as { direction: number }).direction;
    }
    return a.m.seq - b.m.seq;
  });
  for (let i = 0; i < rows.length; i++) matched[i] = (rows[i] as { m: { seq: number; doc: Doc } }).m as (typeof matched)[number];
}
