import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { DuplicateKeyError } from '../Store.js';
import { PathFacts } from './paths.js';
import { dropSearch, ensureSearch, loadSearch, SEARCH_DDL } from './search.js';
import type { SearchInfo } from './search.js';
import type { ReadPlan } from './planner.js';
import { ident, pathLiteral } from './sqlText.js';

/**
 * The schema and index manager: which table holds each collection, the declared indexes and the
 * path facts, all kept in the database itself (so they commit and roll back with the objects).
 *
 * - `svc_collections(name, tbl)`: a collection's table (`c1`, `c2`, ...). Table names are made
 *   here, never taken from a request; a rename changes the name, not the table.
 * - `svc_indexes(tbl, field, uniq, name)`: an index on a property is an expression index on
 *   `json_extract(doc, '$."field"')` (the planner writes the same literal so SQLite uses it); a
 *   unique one also holds `json_type`, so that `true` and `1` (both 1 to SQLite) are not taken for
 *   equal. Objects lacking the property are not in a unique index's way (NULL is never equal).
 * - `svc_paths(tbl, path, kinds)`: the path facts (see PathFacts); the row of path '' says the
 *   collection has more paths than are tracked.
 *
 * Each collection's table: `seq INTEGER PRIMARY KEY` (insertion order: an update keeps it), `id
 * TEXT UNIQUE`, `doc TEXT` (the object's JSON text, see codec.ts).
 */

/** What is known of one collection's table. */
export interface TableInfo {
  readonly tbl: string;
  readonly facts: PathFacts;
  /** field -> index (name, unique). */
  readonly indexes: Map<string, { name: string; unique: boolean }>;
  /** Properties with an index, for the planner. */
  readonly indexed: Set<string>;
  /** Its search table, when properties of it are searchable (search.ts). */
  search?: SearchInfo;
  /** Plans by filter (executor.ts, planOf); cleared when what the planner reads changes. */
  plans?: Map<string, ReadPlan>;
  /** The statements every request runs on the table, prepared once (see tableStatements). */
  statements?: TableStatements;
}

/** The statements of one table that the hot paths run. */
export interface TableStatements {
  insert: StatementSync;
  byId: StatementSync;
  updateBySeq: StatementSync;
  updateById: StatementSync;
}

const FORMAT = '1';

export class Schema {
  readonly #db: DatabaseSync;
  /** name -> table; a collection never written to has none. */
  #tables = new Map<string, TableInfo>();
  /**
   * Counts changes made in memory to the schema or the path facts: a write that fails after one
   * (its savepoint rolled back) has the schema read again from the database (see Engine).
   */
  changes = 0;

  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec(`
      CREATE TABLE IF NOT EXISTS svc_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
      CREATE TABLE IF NOT EXISTS svc_collections (name TEXT PRIMARY KEY, tbl TEXT NOT NULL UNIQUE) STRICT;
      CREATE TABLE IF NOT EXISTS svc_indexes (tbl TEXT NOT NULL, field TEXT NOT NULL, uniq INTEGER NOT NULL, name TEXT NOT NULL UNIQUE, PRIMARY KEY (tbl, field)) STRICT;
      CREATE TABLE IF NOT EXISTS svc_paths (tbl TEXT NOT NULL, path TEXT NOT NULL, kinds INTEGER NOT NULL, PRIMARY KEY (tbl, path)) STRICT;
      ${SEARCH_DDL}
    `);
    const format = db.prepare('SELECT value FROM svc_meta WHERE key = ?').get('format') as { value: string } | undefined;
    if (format === undefined) db.prepare('INSERT INTO svc_meta (key, value) VALUES (?, ?)').run('format', FORMAT);
    else if (format.value !== FORMAT) throw new Error(`embedded store: the database has format ${format.value}, this svc reads format ${FORMAT}`);
    this.reload();
  }

  /** Reads the schema from the database again (after a transaction that changed it was rolled back). */
  reload(): void {
    const tables = new Map<string, TableInfo>();
    const byTbl = new Map<string, TableInfo>();
    const paths = new Map<string, [string, number][]>();
    const overflow = new Set<string>();
    for (const row of this.#db.prepare('SELECT tbl, path, kinds FROM svc_paths').all() as { tbl: string; path: string; kinds: number }[]) {
      if (row.path === '') overflow.add(row.tbl);
      else (paths.get(row.tbl) ?? paths.set(row.tbl, []).get(row.tbl))?.push([row.path, row.kinds]);
    }
    for (const row of this.#db.prepare('SELECT name, tbl FROM svc_collections').all() as { name: string; tbl: string }[]) {
      const info: TableInfo = { tbl: row.tbl, facts: new PathFacts(paths.get(row.tbl) ?? [], overflow.has(row.tbl)), indexes: new Map(), indexed: new Set() };
      tables.set(row.name, info);
      byTbl.set(row.tbl, info);
    }
    for (const row of this.#db.prepare('SELECT tbl, field, uniq, name FROM svc_indexes').all() as { tbl: string; field: string; uniq: number; name: string }[]) {
      const info = byTbl.get(row.tbl);
      if (info === undefined) continue;
      info.indexes.set(row.field, { name: row.name, unique: row.uniq === 1 });
      info.indexed.add(row.field);
    }
    loadSearch(this.#db, byTbl);
    this.#tables = tables;
    this.changes++;
  }

  /** The table of a collection, or undefined when it was never written to. */
  table(name: string): TableInfo | undefined {
    return this.#tables.get(name);
  }

  /** The names of the collections that have a table. */
  names(): string[] {
    return [...this.#tables.keys()];
  }

  /** The table of a collection, made when missing. Inside a write transaction. */
  ensureTable(name: string): TableInfo {
    const known = this.#tables.get(name);
    if (known !== undefined) return known;
    const next = Number((this.#db.prepare('SELECT value FROM svc_meta WHERE key = ?').get('next_table') as { value: string } | undefined)?.value ?? '1');
    const tbl = `c${next}`;
    this.#db.prepare('INSERT OR REPLACE INTO svc_meta (key, value) VALUES (?, ?)').run('next_table', String(next + 1));
    this.#db.exec(`CREATE TABLE ${ident(tbl)} (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL) STRICT`);
    this.#db.prepare('INSERT INTO svc_collections (name, tbl) VALUES (?, ?)').run(name, tbl);
    const info: TableInfo = { tbl, facts: new PathFacts(), indexes: new Map(), indexed: new Set() };
    this.#tables.set(name, info);
    this.changes++;
    return info;
  }

  /** Writes the path facts that grew with a write (see PathFacts.add). Inside the write's transaction. */
  saveFacts(info: TableInfo, grown: Map<string, number>): void {
    this.changes++;
    const save = this.#db.prepare('INSERT INTO svc_paths (tbl, path, kinds) VALUES (?, ?, ?) ON CONFLICT (tbl, path) DO UPDATE SET kinds = excluded.kinds');
    for (const [path, kinds] of grown) save.run(info.tbl, path, kinds);
  }

  /**
   * Makes the index when missing, or anew when its uniqueness changes. Inside a write transaction;
   * a unique index refused by the values stored throws DuplicateKeyError.
   */
  ensureIndex(info: TableInfo, field: string, unique: boolean): void {
    const existing = info.indexes.get(field);
    if (existing !== undefined && existing.unique === unique) return;
    const literal = pathLiteral(field);
    this.changes++;
    if (literal === undefined) throw new TypeError(`the embedded store cannot index property ${JSON.stringify(field)}`);
    if (existing !== undefined) {
      this.#db.exec(`DROP INDEX ${ident(existing.name)}`);
      this.#db.prepare('DELETE FROM svc_indexes WHERE tbl = ? AND field = ?').run(info.tbl, field);
    }
    const next = Number((this.#db.prepare('SELECT value FROM svc_meta WHERE key = ?').get('next_index') as { value: string } | undefined)?.value ?? '1');
    this.#db.prepare('INSERT OR REPLACE INTO svc_meta (key, value) VALUES (?, ?)').run('next_index', String(next + 1));
    const name = `x${next}`;
    const columns = unique ? `json_extract(doc, ${literal}), json_type(doc, ${literal})` : `json_extract(doc, ${literal})`;
    try {
      this.#db.exec(`CREATE ${unique ? 'UNIQUE ' : ''}INDEX ${ident(name)} ON ${ident(info.tbl)} (${columns})`);
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateKeyError(field, { cause: err });
      throw err;
    }
    this.#db.prepare('INSERT INTO svc_indexes (tbl, field, uniq, name) VALUES (?, ?, ?, ?)').run(info.tbl, field, unique ? 1 : 0, name);
    info.indexes.set(field, { name, unique });
    info.indexed.add(field);
    info.plans?.clear();
  }

  /**
   * Makes the collection's search table for `fields` (see search.ts), anew when they changed.
   * Inside a write transaction.
   */
  ensureSearch(info: TableInfo, fields: readonly string[]): void {
    // Counted first: a failure halfway (a full disk) has the schema read again (see Engine).
    this.changes++;
    info.plans?.clear();
    ensureSearch(this.#db, info, fields, () => {
      const next = Number((this.#db.prepare('SELECT value FROM svc_meta WHERE key = ?').get('next_search') as { value: string } | undefined)?.value ?? '1');
      this.#db.prepare('INSERT OR REPLACE INTO svc_meta (key, value) VALUES (?, ?)').run('next_search', String(next + 1));
      return `s${next}`;
    });
  }

  /** Removes the index on a property, when there is one. Inside a write transaction. */
  dropIndex(info: TableInfo, field: string): void {
    const existing = info.indexes.get(field);
    if (existing === undefined) return;
    this.changes++;
    this.#db.exec(`DROP INDEX ${ident(existing.name)}`);
    this.#db.prepare('DELETE FROM svc_indexes WHERE tbl = ? AND field = ?').run(info.tbl, field);
    info.indexes.delete(field);
    info.indexed.delete(field);
    info.plans?.clear();
  }

  /** The property a unique violation is about (`id` for the id column). */
  violatedField(info: TableInfo, err: unknown): string {
    const message = err instanceof Error ? err.message : '';
    if (message.includes(`${info.tbl}.id`)) return 'id';
    const index = /index '([a-z0-9_]+)'/.exec(message)?.[1];
    for (const [field, spec] of info.indexes) if (spec.name === index) return field;
    return 'id';
  }

  /** Gives collection `from` the name `to`, dropping an empty `to` first. Inside a write transaction. */
  rename(from: string, to: string): void {
    const target = this.#tables.get(to);
    if (target !== undefined) this.drop(to);
    this.#db.prepare('UPDATE svc_collections SET name = ? WHERE name = ?').run(to, from);
    const info = this.#tables.get(from);
    this.#tables.delete(from);
    if (info !== undefined) this.#tables.set(to, info);
    this.changes++;
  }

  /** Removes a collection's table and what is known of it. Inside a write transaction. */
  drop(name: string): void {
    const info = this.#tables.get(name);
    if (info === undefined) return;
    dropSearch(this.#db, info);
    this.#db.exec(`DROP TABLE ${ident(info.tbl)}`);
    this.#db.prepare('DELETE FROM svc_indexes WHERE tbl = ?').run(info.tbl);
    this.#db.prepare('DELETE FROM svc_paths WHERE tbl = ?').run(info.tbl);
    this.#db.prepare('DELETE FROM svc_collections WHERE name = ?').run(name);
    this.#tables.delete(name);
    this.changes++;
  }
}

/** SQLite refused a write for a UNIQUE constraint (SQLITE_CONSTRAINT_UNIQUE, or the primary key). */
export function isUniqueViolation(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { errcode?: unknown }).errcode;
  return code === 2067 || code === 1555 || /UNIQUE constraint failed/.test(err.message);
}
