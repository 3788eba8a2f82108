import { AggregateScanError, DuplicateKeyError } from '../Store.js';
import type { AggregateRow, AggregateSpec, Doc, Filter, FindOptions, IndexSpec, Revised, StoreCollection, StoredTexts, UpdateOps, WriteCondition } from '../Store.js';
import { Revisions, conditionId } from '../internal/revisions.js';
import { groupRows } from '../internal/groupRows.js';
import type { DiskState } from '../internal/diskError.js';
import { jsonList } from '../../jsonList.js';
import { answerText, decodeDoc, encodeDoc } from './codec.js';
import type { Engine } from './engine.js';
import { countRows, selectRows } from './executor.js';
import { planRead } from './planner.js';
import { isUniqueViolation } from './schema.js';
import type { TableInfo } from './schema.js';
import { ident } from './sqlText.js';
import { textsOf } from './texts.js';
import { applyUpdate, isEmptyUpdate } from './updateOps.js';
import { sqliteDiskError } from './diskErrors.js';

/**
 * One collection of the embedded engine: reads run at once on the connection (after the writes
 * queued before them are committed), writes go through the engine's group commit.
 */
export class EngineCollection implements StoreCollection {
  readonly name: string;
  readonly #engine: Engine;
  readonly #disk: DiskState;
  /** Kept in memory (see Revised): every write of this collection runs in this process. */
  readonly #revisions = new Revisions();

  constructor(name: string, engine: Engine, disk: DiskState) {
    this.name = name;
    this.#engine = engine;
    this.#disk = disk;
  }

  /** The table, once the writes queued before this read are committed. */
  async #table(): Promise<TableInfo | undefined> {
    if (this.#engine.busy) await this.#engine.whenIdle();
    return this.#engine.schema.table(this.name);
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    const info = await this.#table();
    if (info === undefined) return [];
    const rows = selectRows(this.#engine, info, filter, options);
    const project = projector(options.fields);
    return rows.texts.map((text, i) => project(rows.docs[i] ?? decodeDoc(text)));
  }

  async findOne(filter: Filter, options: Pick<FindOptions, 'fields'> = {}): Promise<Doc | null> {
    const info = await this.#table();
    if (info === undefined) return null;
    const rows = selectRows(this.#engine, info, filter, { limit: 1 });
    const text = rows.texts[0];
    return text === undefined ? null : projector(options.fields)(rows.docs[0] ?? decodeDoc(text));
  }

  async findJson(filter: Filter, options: Omit<FindOptions, 'fields'> = {}): Promise<string> {
    const info = await this.#table();
    if (info === undefined) return '[]';
    return jsonList(selectRows(this.#engine, info, filter, options).texts.map(answerText));
  }

  async findWithJson(filter: Filter, options: Omit<FindOptions, 'fields'> = {}): Promise<{ docs: Doc[]; texts: string[] }> {
    const info = await this.#table();
    if (info === undefined) return { docs: [], texts: [] };
    const rows = selectRows(this.#engine, info, filter, options);
    return { docs: rows.texts.map((text, i) => rows.docs[i] ?? decodeDoc(text)), texts: rows.texts.map(answerText) };
  }

  async findTexts(filter: Filter, options: Omit<FindOptions, 'fields'>, pick: readonly string[]): Promise<StoredTexts> {
    const info = await this.#table();
    if (info === undefined) return { texts: [], values: [], spans: [] };
    const ids = options.sort === undefined && options.anyOrder === true && !options.skip && !options.limit ? idList(filter) : undefined;
    if (ids !== undefined) return this.#textsOfIds(info, ids, pick);
    const rows = selectRows(this.#engine, info, filter, options);
    return textsOf(rows.texts, rows.docs, pick);
  }

  findTextsOfIdsNow(ids: readonly string[], pick: readonly string[]): StoredTexts | undefined {
    if (this.#engine.busy) return undefined;
    const info = this.#engine.schema.table(this.name);
    if (info === undefined) return { texts: [], values: [], spans: [], listedRows: ids.map(() => -1) };
    return this.#textsOfIds(info, ids, pick);
  }

  /** `{id: {$in: ids}}` in any order, with where each listed id's object is (listedRows). */
  #textsOfIds(info: TableInfo, ids: readonly string[], pick: readonly string[]): StoredTexts {
    const rows = this.#engine.prepare(`SELECT id, doc FROM ${ident(info.tbl)} WHERE id IN (SELECT value FROM json_each(?1))`).all(JSON.stringify(ids)) as unknown as [string, string][];
    const rowOf = new Map<string, number>();
    const stored: string[] = [];
    for (const [id, doc] of rows) {
      rowOf.set(id, stored.length);
      stored.push(doc);
    }
    const texts = textsOf(stored, [], pick);
    texts.listedRows = ids.map((id) => rowOf.get(id) ?? -1);
    return texts;
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
    const info = this.#engine.schema.table(this.name);
    if (info === undefined) return null;
    const row = this.#engine.prepare(`SELECT doc FROM ${ident(info.tbl)} WHERE id = ?1`).get(id) as unknown as [string] | undefined;
    return row === undefined ? null : row[0];
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

  async insert(doc: Doc): Promise<Doc> {
    if (typeof doc.id !== 'string') throw new TypeError('an object needs a string id');
    const text = encodeDoc(doc);
    const stored = decodeDoc(text);
    await this.#write(() => {
      const info = this.#engine.schema.ensureTable(this.name);
      this.#learn(info, stored);
      try {
        this.#engine.prepare(`INSERT INTO ${ident(info.tbl)} (id, doc) VALUES (?1, ?2)`).run(doc.id, text);
      } catch (err) {
        throw this.#translate(info, err);
      }
      this.#revisions.advanced(doc.id);
    });
    return stored;
  }

  async update(filter: Filter, ops: UpdateOps, condition?: WriteCondition): Promise<Doc | null> {
    const only = condition === undefined ? undefined : conditionId(filter);
    if (isEmptyUpdate(ops)) return only !== undefined && this.#revisions.of(only) !== condition?.revision ? null : this.findOne(filter);
    return this.#write(() => {
      const info = this.#engine.schema.table(this.name);
      if (info === undefined) return null;
      // Compared inside the group commit's run: no other write of this process comes in between.
      if (only !== undefined && this.#revisions.of(only) !== condition?.revision) return null;
      const found = selectRows(this.#engine, info, filter, { limit: 1 });
      const text = found.texts[0];
      if (text === undefined) return null;
      const after = applyUpdate(found.docs[0] ?? decodeDoc(text), ops);
      const next = encodeDoc(after);
      const stored = decodeDoc(next);
      this.#learn(info, stored);
      try {
        this.#engine.prepare(`UPDATE ${ident(info.tbl)} SET doc = ?1 WHERE seq = ?2`).run(next, found.seqs[0] as number);
      } catch (err) {
        throw this.#translate(info, err);
      }
      this.#revisions.advanced(stored.id);
      return stored;
    });
  }

  async remove(filter: Filter, condition?: WriteCondition): Promise<number> {
    const only = condition === undefined ? undefined : conditionId(filter);
    return this.#write(() => {
      const info = this.#engine.schema.table(this.name);
      if (info === undefined) return 0;
      if (only !== undefined && this.#revisions.of(only) !== condition?.revision) return 0;
      const plan = planRead(filter, {}, info);
      if (plan.exact) return Number(this.#engine.prepare(`DELETE FROM ${ident(info.tbl)} WHERE ${plan.where}`).run(...plan.params).changes);
      const seqs = selectRows(this.#engine, info, filter, { anyOrder: true }).seqs;
      if (seqs.length === 0) return 0;
      return Number(this.#engine.prepare(`DELETE FROM ${ident(info.tbl)} WHERE seq IN (SELECT value FROM json_each(?1))`).run(JSON.stringify(seqs)).changes);
    });
  }

  async ensureIndex(spec: IndexSpec): Promise<void> {
    if (spec.field === 'id') return;
    await this.#write(() => this.#engine.schema.ensureIndex(this.#engine.schema.ensureTable(this.name), spec.field, spec.unique ?? false));
  }

  async dropIndex(field: string): Promise<void> {
    if (field === 'id' || this.#engine.schema.table(this.name)?.indexes.has(field) !== true) return;
    await this.#write(() => {
      const info = this.#engine.schema.table(this.name);
      if (info !== undefined) this.#engine.schema.dropIndex(info, field);
    });
  }

  /**
   * Groups in the process what the filter matches (SQL narrows it through the indexes); the
   * matches are counted first, so that too many fail before any is read.
   */
  async aggregate(filter: Filter, spec: AggregateSpec): Promise<AggregateRow[]> {
    const started = Date.now();
    const info = await this.#table();
    if (info === undefined) return groupRows([], spec, { started, idKey: 'id' });
    const scanned = countRows(this.#engine, info, filter);
    if (scanned > spec.maxScanned) throw new AggregateScanError(scanned);
    const rows = selectRows(this.#engine, info, filter, { anyOrder: true });
    const docs = rows.texts.map((text, i) => rows.docs[i] ?? decodeDoc(text));
    return groupRows(docs, spec, { started, idKey: 'id' });
  }

  /** The path facts learn what an object about to be written holds (saved in the same transaction). */
  #learn(info: TableInfo, doc: Doc): void {
    const grown = info.facts.add(doc);
    if (grown !== undefined) this.#engine.schema.saveFacts(info, grown);
  }

  #translate(info: TableInfo, err: unknown): unknown {
    if (isUniqueViolation(err)) return new DuplicateKeyError(this.#engine.schema.violatedField(info, err), { cause: err });
    return err;
  }

  /** A write through the group commit; a disk that refuses it answers the client's SvcError (507/503). */
  async #write<T>(run: () => T): Promise<T> {
    try {
      const value = await this.#engine.write(run);
      this.#disk.wrote();
      return value;
    } catch (err) {
      throw this.#disk.refused(sqliteDiskError(err), this.#engine.file);
    }
  }
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

/** The projection of `fields` (`id` kept unless excluded by name). */
export function projector(fields: Record<string, 0 | 1> | undefined): (doc: Doc) => Doc {
  if (!fields) return (doc) => doc;
  const keys = Object.keys(fields).filter((k) => k !== 'id');
  const included = keys.filter((k) => fields[k] === 1);
  const withId = fields.id !== 0;
  if (included.length > 0 && included.length < keys.length) throw new Error('a projection cannot both include and exclude properties other than id');
  if (included.length > 0 || (fields.id === 1 && keys.length === 0)) {
    return (doc) => {
      const out: Record<string, unknown> = withId ? { id: doc.id } : {};
      for (const key of included) if (Object.hasOwn(doc, key)) out[key] = doc[key];
      return out as Doc;
    };
  }
  const excluded = new Set(keys);
  return (doc) => {
    const out: Record<string, unknown> = withId ? { id: doc.id } : {};
    for (const key in doc) if (key !== 'id' && !excluded.has(key) && Object.hasOwn(doc, key)) out[key] = doc[key];
    return out as Doc;
  };
}
