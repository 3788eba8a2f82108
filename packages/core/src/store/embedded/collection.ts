import type { StatementSync } from 'node:sqlite';
import { AggregateScanError, DuplicateKeyError } from '../Store.js';
import type { AggregateRow, AggregateSpec, Doc, Filter, FindOptions, IndexSpec, KeptList, RemoveHooks, Revised, StoreCollection, StoredTexts, UpdateOps, WriteCondition, WriteHooks } from '../Store.js';
import { conditionId } from '../internal/revisions.js';
import type { Revisions } from '../internal/revisions.js';
import { groupRows } from '../internal/groupRows.js';
import type { DiskState } from '../internal/diskError.js';
import { jsonList } from '../../jsonList.js';
import { projector } from '../internal/projector.js';
import { matchesFilter } from '../embeddedStore.js';
import { aggregateInSql } from './aggregateSql.js';
import { answerText, decodeDoc, encodeDoc } from './codec.js';
import type { Engine } from './engine.js';
import { countRows, keptListOf, planOf, selectRows } from './executor.js';
import { isUniqueViolation } from './schema.js';
import type { TableInfo, TableStatements } from './schema.js';
import { ident } from './sqlText.js';
import type { SqlValue } from './sqlText.js';
import { textsOf } from './texts.js';
import { applyUpdate, isEmptyUpdate } from './updateOps.js';
import { HotTexts } from './hotTexts.js';
import { sqliteDiskError } from './diskErrors.js';

/**
 * One collection of the embedded engine: reads run at once on the connection (after the writes
 * queued before them are committed), writes go through the engine's group commit.
 */
export class EngineCollection implements StoreCollection {
  readonly name: string;
  readonly #engine: Engine;
  readonly #disk: DiskState;
  /** Texts read by id lately (see HotTexts for when they are dropped). */
  readonly #hot = new HotTexts();
  /** Kept in memory (see Revised): every write of this collection runs in this process. */
  readonly #revisions: Revisions;

  constructor(name: string, engine: Engine, disk: DiskState) {
    this.name = name;
    this.#engine = engine;
    this.#disk = disk;
    this.#revisions = engine.revisions.of(name);
  }

  /** The table, once the writes queued before this read are committed. */
  async #table(): Promise<TableInfo | undefined> {
    if (this.#engine.busy) await this.#engine.whenIdle();
    return this.#engine.schema.table(this.name);
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    const info = await this.#table();
    if (info === undefined) return [];
    const rows = selectRows(this.#engine, info, filter, options, this.#hot);
    const project = projector(options.fields);
    return rows.texts.map((text, i) => project(rows.docs[i] ?? decodeDoc(text)));
  }

  async findOne(filter: Filter, options: Pick<FindOptions, 'fields'> = {}): Promise<Doc | null> {
    const info = await this.#table();
    if (info === undefined) return null;
    // By id alone (a session, the logged-in user, a write's own object): the id lookup and the kept
    // texts, as findOneJson reads, instead of a plan and a statement for each distinct id.
    const id = idAlone(filter);
    if (id !== undefined) {
      const text = this.#textOf(id);
      return text === null ? null : projector(options.fields)(decodeDoc(text));
    }
    // By id and more (a read or write rule ANDed in: `{id, owner}`): the one object the id names,
    // tested by the query language's matcher, instead of a plan per id (see oneNamed).
    const named = idNamed(filter);
    if (named !== undefined) {
      const doc = oneNamed(this.#textOf(named), filter);
      return doc === null ? null : projector(options.fields)(doc);
    }
    const rows = selectRows(this.#engine, info, filter, { limit: 1 });
    const text = rows.texts[0];
    return text === undefined ? null : projector(options.fields)(rows.docs[0] ?? decodeDoc(text));
  }

  async findJson(filter: Filter, options: Omit<FindOptions, 'fields'> = {}): Promise<string> {
    const info = await this.#table();
    if (info === undefined) return '[]';
    return jsonList(selectRows(this.#engine, info, filter, options, this.#hot).texts.map(answerText));
  }

  async findWithJson(filter: Filter, options: Omit<FindOptions, 'fields'> = {}): Promise<{ docs: Doc[]; texts: string[] }> {
    const info = await this.#table();
    if (info === undefined) return { docs: [], texts: [] };
    const rows = selectRows(this.#engine, info, filter, options, this.#hot);
    return { docs: rows.texts.map((text, i) => rows.docs[i] ?? decodeDoc(text)), texts: rows.texts.map(answerText) };
  }

  async findTexts(filter: Filter, options: Omit<FindOptions, 'fields'>, pick: readonly string[]): Promise<StoredTexts> {
    const info = await this.#table();
    if (info === undefined) return { texts: [], values: [], spans: [] };
    const ids = options.sort === undefined && options.anyOrder === true && !options.skip && !options.limit ? idList(filter) : undefined;
    if (ids !== undefined) return this.#textsOfIds(info, ids, pick);
    const rows = selectRows(this.#engine, info, filter, options, this.#hot);
    const texts = textsOf(rows.texts, rows.docs, pick, { hot: this.#hot, seqs: rows.seqs });
    if (rows.list !== undefined) texts.list = rows.list;
    return texts;
  }

  async keptList(filter: Filter, options: Omit<FindOptions, 'fields'>): Promise<KeptList | undefined> {
    return (await this.#table()) === undefined ? undefined : keptListOf(filter, options, this.#hot);
  }

  generationNow(): number | undefined {
    return this.#engine.busy ? undefined : this.#hot.generation;
  }

  findTextsOfIdsNow(ids: readonly string[], pick: readonly string[]): StoredTexts | undefined {
    if (this.#engine.busy) return undefined;
    const info = this.#engine.schema.table(this.name);
    if (info === undefined) return { texts: [], values: [], spans: [], listedRows: ids.map(() => -1) };
    return this.#textsOfIds(info, ids, pick);
  }

  /**
   * `{id: {$in: ids}}` in any order, with where each listed id's object is (listedRows). At most
   * IDS_LOOKED_UP distinct ids (a page's related objects for `$expand`: one id per object of the
   * page, repeats included) are looked up one by one, most from the kept texts; more are read in
   * one statement from the table (bench/RESULTS.md, "Issue 39, round 10").
   */
  #textsOfIds(info: TableInfo, ids: readonly string[], pick: readonly string[]): StoredTexts {
    // One pass: each id's place found or looked up once (a repeat costs one map read).
    const stored: string[] = [];
    const listedRows = new Array<number>(ids.length);
    const rowOf = new Map<string, number>();
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as string;
      let row = rowOf.get(id);
      if (row === undefined) {
        if (rowOf.size >= IDS_LOOKED_UP) return this.#textsOfManyIds(info, ids, pick);
        const text = this.#textOf(id);
        row = text === null ? -1 : stored.push(text) - 1;
        rowOf.set(id, row);
      }
      listedRows[i] = row;
    }
    const texts = textsOf(stored, [], pick);
    texts.listedRows = listedRows;
    return texts;
  }

  /** #textsOfIds past IDS_LOOKED_UP distinct ids: one statement for all of them. */
  #textsOfManyIds(info: TableInfo, ids: readonly string[], pick: readonly string[]): StoredTexts {
    const stored: string[] = [];
    const rowOf = this.#rowsOfIds(info, ids, stored);
    const texts = textsOf(stored, [], pick);
    texts.listedRows = ids.map((id) => rowOf.get(id) ?? -1);
    return texts;
  }

  /** The objects of `ids` read in one statement: their texts pushed on `stored`, and each found id's place there. */
  #rowsOfIds(info: TableInfo, ids: readonly string[], stored: string[]): Map<string, number> {
    this.#engine.reading();
    const rows = this.#engine.prepare(`SELECT id, doc FROM ${ident(info.tbl)} WHERE id IN (SELECT value FROM json_each(?1))`).all(JSON.stringify(ids)) as unknown as [string, string][];
    const rowOf = new Map<string, number>();
    for (const [id, doc] of rows) rowOf.set(id, stored.push(doc) - 1);
    return rowOf;
  }

  async findOneJson(id: string): Promise<string | null> {
    return (await this.#table()) === undefined ? null : (this.findOneJsonNow(id) ?? null);
  }

  findOneJsonNow(id: string): string | null | undefined {
    if (this.#engine.busy) return undefined;
    const text = this.#textOf(id);
    return text === null ? null : answerText(text);
  }

  findOneWithJsonNow(id: string): { doc: Doc; text: string } | null | undefined {
    if (this.#engine.busy) return undefined;
    const text = this.#textOf(id);
    return text === null ? null : { doc: decodeDoc(text), text: answerText(text) };
  }

  #textOf(id: string): string | null {
    const hot = this.#hot.byId(id);
    if (hot !== undefined) return hot;
    const info = this.#engine.schema.table(this.name);
    if (info === undefined) return null;
    this.#engine.reading();
    const row = tableStatements(this.#engine, info).byId.get(id) as unknown as [number, string] | undefined;
    if (row === undefined) return null;
    // Kept the second time it is read lately (admit), as a list's rows are: a text read once (GETs
    // at random over many more objects than the bound holds) passes through without churning the
    // kept ones.
    if (this.#hot.admit(row[0])) this.#hot.set(row[0], id, row[1], true);
    return row[1];
  }

  /** Drops what is kept of the collection's texts (a rename of the collection; see HotTexts). */
  forgetTexts(): void {
    this.#hot.clear();
  }

  async findRevised(id: string): Promise<Revised | null> {
    if ((await this.#table()) === undefined) return null;
    const text = this.#textOf(id);
    // Read and revision together: nothing is written between the two (no await).
    return text === null ? null : { doc: decodeDoc(text), revision: this.#revisions.of(id) };
  }

  async count(filter: Filter): Promise<number> {
    const info = await this.#table();
    return info === undefined ? 0 : countRows(this.#engine, info, filter);
  }

  async insert(doc: Doc, hooks?: WriteHooks): Promise<Doc> {
    if (typeof doc.id !== 'string') throw new TypeError('an object needs a string id');
    const text = encodeDoc(doc);
    const stored = decodeDoc(text);
    await this.#write(() => {
      this.#insertRow(doc.id as string, text, stored);
      // Last: nothing after it can fail the write once the hooks asked for their writes.
      hooks?.stored(stored, undefined, text.length);
    }, true, hooks !== undefined);
    return stored;
  }

  /** Inserts one encoded object (inside a write of the group commit). */
  #insertRow(id: string, text: string, stored: Doc): void {
    const info = this.#engine.schema.ensureTable(this.name);
    this.#hot.written([stored]);
    this.#learn(info, stored);
    try {
      tableStatements(this.#engine, info).insert.run(id, text);
    } catch (err) {
      throw this.#translate(info, err);
    }
    this.#revisions.advanced(id);
  }

  async insertAtCommit(make: () => Doc): Promise<void> {
    try {
      await this.#engine.atCommit(() => {
        const doc = make();
        if (typeof doc.id !== 'string') throw new TypeError('an object needs a string id');
        // Learnt from as it is, not from a decode of its text (no one reads it back here): the
        // contract asks for what a decode gives (JSON values and dates), as stored objects are.
        this.#insertRow(doc.id, encodeDoc(doc), doc);
      });
      this.#disk.wrote();
    } catch (err) {
      throw this.#disk.refused(sqliteDiskError(err), this.#engine.file);
    }
  }

  /**
   * Inserts in order in one write of the group commit (an import's batch: one transaction for all
   * of them); stops at the first one refused, whose error it answers, the ones before it stored.
   */
  async insertMany(docs: Doc[]): Promise<void> {
    const rows: { id: string; text: string; stored: Doc }[] = [];
    let refused: unknown;
    for (const doc of docs) {
      try {
        if (typeof doc.id !== 'string') throw new TypeError('an object needs a string id');
        const text = encodeDoc(doc);
        rows.push({ id: doc.id, text, stored: decodeDoc(text) });
      } catch (err) {
        refused = err;
        break;
      }
    }
    if (rows.length > 0) {
      const failed = await this.#write(() => {
        const info = this.#engine.schema.ensureTable(this.name);
        this.#hot.written(rows.map((row) => row.stored));
        const insert = tableStatements(this.#engine, info).insert;
        for (const row of rows) {
          this.#learn(info, row.stored);
          try {
            // A refused row is undone by SQLite alone (the statement); the ones before it stay.
            insert.run(row.id, row.text);
          } catch (err) {
            return { err: this.#translate(info, err) };
          }
          this.#revisions.advanced(row.id);
        }
        return undefined;
      });
      if (failed !== undefined) throw failed.err;
    }
    if (refused !== undefined) throw refused;
  }

  async update(filter: Filter, ops: UpdateOps, condition?: WriteCondition, hooks?: WriteHooks): Promise<Doc | null> {
    const only = condition === undefined ? undefined : conditionId(filter);
    if (isEmptyUpdate(ops)) return only !== undefined && this.#revisions.of(only) !== condition?.revision ? null : this.findOne(filter);
    return this.#write(() => {
      const info = this.#engine.schema.table(this.name);
      if (info === undefined) return null;
      // Compared inside the group commit's run: no other write of this process comes in between.
      if (only !== undefined && this.#revisions.of(only) !== condition?.revision) return null;
      const statements = tableStatements(this.#engine, info);
      // By id (PUT /<c>/<id>), alone or with a rule ANDed in: the row found and changed through the
      // id's index, no plan made (the rest of the filter tested by the matcher: oneNamed).
      const id = idNamed(filter);
      const found = id === undefined ? selectRows(this.#engine, info, filter, { limit: 1 }) : undefined;
      const text = found === undefined ? (statements.byId.get(id as string) as unknown as [number, string] | undefined)?.[1] : found.texts[0];
      if (text === undefined) return null;
      const before = found === undefined ? oneNamed(text, filter) : (found.docs[0] ?? decodeDoc(text));
      if (before === null) return null;
      const after = applyUpdate(before, ops);
      this.#hot.delete(found?.seqs[0], after.id);
      const next = encodeDoc(after);
      const stored = decodeDoc(next);
      this.#hot.written([before, stored]);
      this.#learn(info, stored);
      try {
        if (found === undefined) statements.updateById.run(next, id as string);
        else statements.updateBySeq.run(next, found.seqs[0] as number);
      } catch (err) {
        throw this.#translate(info, err);
      }
      this.#revisions.advanced(stored.id);
      hooks?.stored(stored, before, text.length + next.length);
      return stored;
    }, true, hooks !== undefined);
  }

  async remove(filter: Filter, condition?: WriteCondition, hooks?: RemoveHooks): Promise<number> {
    const only = condition === undefined ? undefined : conditionId(filter);
    return this.#write(() => {
      const removed = this.#removeRows(filter, only, condition, hooks !== undefined);
      // Last: nothing after it can fail the remove once the hooks asked for their writes.
      hooks?.removed(removed.ids ?? []);
      return removed.count;
    }, true, hooks !== undefined);
  }

  /** The remove's rows (inside its write): how many went and, when `named`, their ids. */
  #removeRows(filter: Filter, only: string | undefined, condition: WriteCondition | undefined, named: boolean): { count: number; ids?: string[] } {
    const none = { count: 0, ids: [] };
    const info = this.#engine.schema.table(this.name);
    if (info === undefined) return none;
    if (only !== undefined && this.#revisions.of(only) !== condition?.revision) return none;
    // One object by its id (DELETE /<c>/<id>, a rule ANDed in): its entry dropped, the other kept texts stay.
    const id = idNamed(filter);
    if (id !== undefined) {
      const row = tableStatements(this.#engine, info).byId.get(id) as unknown as [number, string] | undefined;
      const doc = oneNamed(row?.[1], filter);
      if (row === undefined || doc === null) return none;
      this.#hot.delete(row[0], id);
      this.#hot.written([doc]);
      const count = Number(this.#engine.prepare(`DELETE FROM ${ident(info.tbl)} WHERE seq = ?1`).run(row[0]).changes);
      return { count, ids: count > 0 ? [id] : [] };
    }
    this.#hot.clear();
    const plan = planOf(info, filter, {}, false);
    let sql: string;
    let params: SqlValue[];
    if (plan.exact) {
      sql = `DELETE FROM ${ident(info.tbl)} WHERE ${plan.where}`;
      params = plan.params;
    } else {
      const seqs = selectRows(this.#engine, info, filter, { anyOrder: true }).seqs;
      if (seqs.length === 0) return none;
      sql = `DELETE FROM ${ident(info.tbl)} WHERE seq IN (SELECT value FROM json_each(?1))`;
      params = [JSON.stringify(seqs)];
    }
    if (!named) return { count: Number(this.#engine.prepare(sql).run(...params).changes) };
    // The ids of the rows this statement removed, not of those read before it.
    const ids = (this.#engine.prepare(`${sql} RETURNING id`).all(...params) as unknown as [string][]).map((r) => r[0]);
    return { count: ids.length, ids };
  }

  async ensureIndex(spec: IndexSpec): Promise<void> {
    if (spec.field === 'id') return;
    await this.#write(() => {
      this.#hot.written();
      this.#engine.schema.ensureIndex(this.#engine.schema.ensureTable(this.name), spec.field, spec.unique ?? false);
    });
  }

  async ensureSearch(fields: string[]): Promise<void> {
    if (fields.length === 0 && this.#engine.schema.table(this.name)?.search === undefined) return;
    await this.#write(() => {
      this.#hot.written();
      this.#engine.schema.ensureSearch(this.#engine.schema.ensureTable(this.name), fields);
    });
  }

  async dropIndex(field: string): Promise<void> {
    if (field === 'id' || this.#engine.schema.table(this.name)?.indexes.has(field) !== true) return;
    await this.#write(() => {
      const info = this.#engine.schema.table(this.name);
      this.#hot.written();
      if (info !== undefined) this.#engine.schema.dropIndex(info, field);
    });
  }

  /**
   * Groups what the filter matches in SQL where it can (aggregateSql.ts), else in the process
   * (SQL narrows the objects through the indexes); the matches are counted first, so that too
   * many fail before any is read.
   */
  async aggregate(filter: Filter, spec: AggregateSpec): Promise<AggregateRow[]> {
    const started = Date.now();
    const info = await this.#table();
    if (info === undefined) return groupRows([], spec, { started, idKey: 'id' });
    const scanned = countRows(this.#engine, info, filter);
    if (scanned > spec.maxScanned) throw new AggregateScanError(scanned);
    const grouped = aggregateInSql(this.#engine, info, filter, spec);
    if (grouped !== undefined) return grouped;
    const rows = selectRows(this.#engine, info, filter, { anyOrder: true });
    const docs = rows.texts.map((text, i) => rows.docs[i] ?? decodeDoc(text));
    return groupRows(docs, spec, { started, idKey: 'id' });
  }

  /** The path facts learn what an object about to be written holds (saved in the same transaction). */
  #learn(info: TableInfo, doc: Doc): void {
    const grown = info.facts.add(doc);
    if (grown === undefined) return;
    this.#engine.schema.saveFacts(info, grown);
    // The plans were made on what the facts said before (an exact one may not be any more).
    info.plans?.clear();
  }

  #translate(info: TableInfo, err: unknown): unknown {
    if (isUniqueViolation(err)) return new DuplicateKeyError(this.#engine.schema.violatedField(info, err), { cause: err });
    return err;
  }

  /** A write through the group commit; a disk that refuses it answers the client's SvcError (507/503). */
  async #write<T>(run: () => T, oneStatement = false, gather = false): Promise<T> {
    try {
      const value = await this.#engine.write(run, oneStatement, gather);
      this.#disk.wrote();
      return value;
    } catch (err) {
      throw this.#disk.refused(sqliteDiskError(err), this.#engine.file);
    }
  }
}

/** The table's hot statements, prepared at first use (kept with the table's info: a schema reload makes new ones). */
function tableStatements(engine: Engine, info: TableInfo): TableStatements {
  return (info.statements ??= {
    insert: engine.db.prepare(`INSERT INTO ${ident(info.tbl)} (id, doc) VALUES (?1, ?2)`),
    byId: arrays(engine.db.prepare(`SELECT seq, doc FROM ${ident(info.tbl)} WHERE id = ?1`)),
    updateBySeq: engine.db.prepare(`UPDATE ${ident(info.tbl)} SET doc = ?1 WHERE seq = ?2`),
    updateById: engine.db.prepare(`UPDATE ${ident(info.tbl)} SET doc = ?1 WHERE id = ?2`),
  });
}

function arrays(statement: StatementSync): StatementSync {
  statement.setReturnArrays(true);
  return statement;
}

/** `{id: {$in: [<string>, ...]}}` and nothing else: the ids, as listed. */
function idList(filter: Filter): string[] | undefined {
  const keys = Object.keys(filter);
  if (keys.length !== 1 || keys[0] !== 'id') return undefined;
  const condition = filter.id;
  if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) return undefined;
  const ops = Object.keys(condition);
  const list = (condition as Record<string, unknown>).$in;
  if (ops.length !== 1 || !Array.isArray(list) || !list.every((id) => typeof id === 'string')) return undefined;
  return list as string[];
}

/** Up to this many distinct ids, #textsOfIds looks each up by id; more are read in one statement. */
const IDS_LOOKED_UP = 64;

/**
 * The id a filter names by equality among other conditions: `{id: <string>, ...}`, or such a part
 * of a top-level `$and` (a rule ANDed in); undefined when it names none, or holds a `$search` at
 * those places (the search table's, not the matcher's, to answer).
 */
function idNamed(filter: Filter): string | undefined {
  let id: string | undefined;
  for (const key in filter) {
    const value = filter[key];
    if (key === '$search') return undefined;
    if (key === 'id' && typeof value === 'string') id = value;
    else if (key === '$and' && Array.isArray(value)) {
      for (const part of value as unknown[]) {
        if (typeof part !== 'object' || part === null || Array.isArray(part)) return undefined;
        if (Object.hasOwn(part, '$search')) return undefined;
        id ??= idNamed(part as Filter);
      }
    }
  }
  return id;
}

/**
 * The object of `text` (the one the filter's id names, or null: none) when it matches the whole
 * filter, tested by the query language's matcher (the meaning the planner's SQL has), else null.
 * One object read by its id and tested costs a few µs; a plan and a statement for each distinct id
 * cost ~35 µs (bench/RESULTS.md, "Issue 39, round 11").
 */
function oneNamed(text: string | null | undefined, filter: Filter): Doc | null {
  if (text === null || text === undefined) return null;
  const doc = decodeDoc(text);
  return matchesFilter(doc, filter) ? doc : null;
}

/** The id of a filter that is `{id: <string>}` and nothing else; undefined for any other filter. */
function idAlone(filter: Filter): string | undefined {
  let id: unknown;
  for (const key in filter) {
    if (key !== 'id') return undefined;
    id = filter[key];
  }
  return typeof id === 'string' ? id : undefined;
}
