import type { DatabaseSync } from 'node:sqlite';
import { wordsOf } from '../../query/search.js';
import type { SearchFilter } from '../../query/search.js';
import type { TableInfo } from './schema.js';
import { ident, pathLiteral } from './sqlText.js';

/**
 * Full-text search of the engine: one FTS5 table per collection that has searchable properties
 * (`s1`, `s2`: names made here), a column per property (`f0`, `f1`, ...), its rowid the object's
 * `seq`. Triggers on the collection's table keep it in the same transaction as every write (an
 * insert, an update, a remove, a conversion or import alike), so it never disagrees with the
 * objects. What it holds of a property is its words as svc cuts them (`svc_words`, the same
 * function as the in-process matcher, query/search.ts), so SQL and the process mean the same by a
 * word. Contentless (`content=''`): the
 * texts are not stored twice, only the index (`contentless_delete=1` lets a row be removed). The
 * `ascii` tokenizer splits only at the spaces svc_words puts (every other character of a word is a
 * letter or a digit, kept as it is), so FTS5's idea of a word is exactly svc's.
 *
 * `svc_search(tbl, fts, fields)` says which table searches which collection, and its properties.
 */

/** What is known of a collection's search table. */
export interface SearchInfo {
  fts: string;
  fields: string[];
}

export const SEARCH_DDL = 'CREATE TABLE IF NOT EXISTS svc_search (tbl TEXT PRIMARY KEY, fts TEXT NOT NULL UNIQUE, fields TEXT NOT NULL) STRICT;';

/**
 * `svc_words(json)`: the words of a property's value given as JSON text (`doc -> '$.p'`): a
 * string's, an array's strings'; NULL for anything else. Registered on every connection that
 * writes (the triggers call it).
 */
export function registerWords(db: DatabaseSync): void {
  db.function('svc_words', { deterministic: true, varargs: false }, (json: unknown) => {
    if (typeof json !== 'string') return null;
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      return null;
    }
    if (typeof value === 'string') return wordsOf(value).join(' ');
    if (!Array.isArray(value)) return null;
    const words: string[] = [];
    for (const item of value) if (typeof item === 'string') words.push(...wordsOf(item));
    return words.join(' ');
  });
}

/** Reads which collections search which properties. */
export function loadSearch(db: DatabaseSync, byTbl: Map<string, TableInfo>): void {
  for (const row of db.prepare('SELECT tbl, fts, fields FROM svc_search').all() as { tbl: string; fts: string; fields: string }[]) {
    const info = byTbl.get(row.tbl);
    if (info !== undefined) info.search = { fts: row.fts, fields: JSON.parse(row.fields) as string[] };
  }
}

/**
 * Makes the collection's search table for `fields` (sorted), anew when they changed, filling it
 * from the objects stored; none when `fields` is empty. Inside a write transaction. Answers
 * whether it changed anything.
 */
export function ensureSearch(db: DatabaseSync, info: TableInfo, fields: readonly string[], nextName: () => string): boolean {
  const wanted = [...new Set(fields)].sort();
  const known = info.search;
  if (known !== undefined && known.fields.length === wanted.length && known.fields.every((f, i) => f === wanted[i])) return false;
  if (known !== undefined) dropSearch(db, info);
  if (wanted.length === 0) return true;
  const literals = wanted.map((field) => {
    const literal = pathLiteral(field);
    if (literal === undefined) throw new TypeError(`the embedded store cannot search property ${JSON.stringify(field)}`);
    return literal;
  });
  const fts = nextName();
  const tbl = ident(info.tbl);
  const columns = wanted.map((_, i) => `f${i}`).join(', ');
  const values = (row: string): string => literals.map((l) => `svc_words(${row}.doc -> ${l})`).join(', ');
  db.exec(`CREATE VIRTUAL TABLE ${ident(fts)} USING fts5(${columns}, content='', contentless_delete=1, tokenize='ascii')`);
  db.exec(`CREATE TRIGGER ${ident(`${fts}_i`)} AFTER INSERT ON ${tbl} BEGIN INSERT INTO ${ident(fts)} (rowid, ${columns}) VALUES (new.seq, ${values('new')}); END`);
  db.exec(`CREATE TRIGGER ${ident(`${fts}_d`)} AFTER DELETE ON ${tbl} BEGIN DELETE FROM ${ident(fts)} WHERE rowid = old.seq; END`);
  db.exec(
    `CREATE TRIGGER ${ident(`${fts}_u`)} AFTER UPDATE OF doc ON ${tbl} BEGIN DELETE FROM ${ident(fts)} WHERE rowid = old.seq; INSERT INTO ${ident(fts)} (rowid, ${columns}) VALUES (new.seq, ${values('new')}); END`,
  );
  db.exec(`INSERT INTO ${ident(fts)} (rowid, ${columns}) SELECT seq, ${values(tbl)} FROM ${tbl}`);
  db.prepare('INSERT INTO svc_search (tbl, fts, fields) VALUES (?, ?, ?)').run(info.tbl, fts, JSON.stringify(wanted));
  info.search = { fts, fields: wanted };
  return true;
}

/** Removes a collection's search table and its triggers. Inside a write transaction. */
export function dropSearch(db: DatabaseSync, info: TableInfo): void {
  const known = info.search;
  if (known === undefined) return;
  for (const suffix of ['_i', '_d', '_u']) db.exec(`DROP TRIGGER IF EXISTS ${ident(`${known.fts}${suffix}`)}`);
  db.exec(`DROP TABLE IF EXISTS ${ident(known.fts)}`);
  db.prepare('DELETE FROM svc_search WHERE tbl = ?').run(info.tbl);
  delete info.search;
}

/**
 * The FTS5 query of a search: each word a quoted string (words are letters and digits only, so
 * nothing of FTS5's own syntax gets in), all of them required, in the columns of `fields` only;
 * undefined when a field has no column (it is not searchable here: the process tests it).
 */
export function matchQuery(search: SearchFilter, known: SearchInfo): string | undefined {
  const columns: string[] = [];
  for (const field of search.fields) {
    const at = known.fields.indexOf(field);
    if (at < 0) return undefined;
    columns.push(`f${at}`);
  }
  const words = search.words.map((word) => `"${word.replaceAll('"', '""')}"`).join(' AND ');
  return columns.length === known.fields.length ? words : `{${columns.join(' ')}} : (${words})`;
}
