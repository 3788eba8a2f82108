import { SvcError } from '../errors.js';
import { deepEqual } from '../resources/updates.js';
import { DuplicateKeyError } from '../store/Store.js';
import type { Doc, Filter, ManyOps, Store, StoreCollection } from '../store/Store.js';
import { convertValue } from './convertValue.js';
import type { Conversion } from './convertValue.js';
import type { PropertyType } from '../types.js';
import type { MigrationStep } from './migration.js';
import { chunks, sendEach, writesAtOnce } from './writes.js';

/** Where a step stands: resumed from here after an interruption. */
export interface StepProgress {
  /** Steps with two passes (a type change undone): which one. */
  phase: number;
  /** The id of the last object done in this pass (objects are taken in id order), or null. */
  cursor: string | null;
  /** Objects changed so far. */
  touched: number;
  /**
   * The page being written (recorded before its write): the objects after `cursor` up to `to`
   * (its last id), of which `todo` needed the change. Resumed, the objects of that page that no
   * longer need it are counted as changed, whoever's call changed them.
   */
  pending?: { to: string; todo: number } | null;
}

/** What a step needs to run. */
export interface StepContext {
  store: Store;
  /** The migration's collection. */
  coll: StoreCollection;
  /** `_migration_values`: what removals and type changes took away, for `down`. */
  values: StoreCollection;
  migration: string;
  index: number;
  /** Objects read and written at a time. */
  batch: number;
  /** Where to start (a step resumed). */
  start: StepProgress;
  /** Records the progress (a resumed step starts there) after a batch, or before one (`pending`); holds the lease first. */
  progress(at: StepProgress): Promise<void>;
  /** Called before every write: the lock is still this process's (LeaseLostError otherwise). */
  hold(): Promise<void>;
}

/** A step's values collection in the store. */
export const VALUES_COLLECTION = '_migration_values';

/** A value a step took away from an object, kept for `down`. */
interface Kept extends Doc {
  m: string;
  s: number;
  o: string;
  v: unknown;
}

/** A step cannot be done: its migration fails (its collection is not served). */
export class MigrationStepError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MigrationStepError';
  }
}

/** Runs a step forward; answers how many objects it changed. */
export async function stepUp(step: MigrationStep, ctx: StepContext): Promise<number> {
  switch (step.op) {
    case 'rename':
      return renameProperty(ctx, step.from, step.to);
    case 'remove':
      return pages(ctx, { [step.property]: { $exists: true } }, [step.property], ALL, async (docs) => {
        if (step.keep) await keep(ctx, docs.map((doc) => [doc.id, doc[step.property]]));
        await ctx.hold();
        await setEach(ctx, docs, { [step.property]: { $exists: true } }, () => ({ $unset: { [step.property]: true } }));
      });
    case 'add': {
      if (step.default === undefined) return 0;
      const value = step.default;
      return pages(ctx, { [step.property]: { $exists: false } }, [], ALL, (docs) => setEach(ctx, docs, { [step.property]: { $exists: false } }, () => ({ $set: { [step.property]: structuredClone(value) } })));
    }
    case 'convert':
      return convertUp(ctx, step);
    case 'addIndex':
      return makeIndex(ctx.coll, step.property, step.unique);
    case 'dropIndex':
      await ctx.coll.dropIndex?.(step.property);
      return 0;
    case 'renameCollection':
      return moveCollection(ctx, step.from, ctx.coll.name);
  }
}

/** Undoes a step (what it did, as far as it was done); answers how many objects it changed. */
export async function stepDown(step: MigrationStep, ctx: StepContext): Promise<number> {
  switch (step.op) {
    case 'rename':
      return renameProperty(ctx, step.to, step.from);
    case 'remove':
      if (!step.keep) throw new MigrationStepError(`remove ${step.property} kept no values ("keep": false): it cannot be undone`);
      return restoreKept(ctx, step.property, (doc) => doc[step.property] === undefined);
    case 'add': {
      if (step.default === undefined) return 0;
      const value = step.default;
      return pages(
        ctx,
        { [step.property]: { $exists: true } },
        [step.property],
        (doc) => deepEqual(doc[step.property], value),
        (docs) => setEach(ctx, docs, {}, () => ({ $unset: { [step.property]: true } })),
      );
    }
    case 'convert':
      return convertDown(ctx, step);
    case 'addIndex':
      await ctx.coll.dropIndex?.(step.property);
      return 0;
    case 'dropIndex':
      return makeIndex(ctx.coll, step.property, step.unique);
    case 'renameCollection':
      return moveCollection(ctx, ctx.coll.name, step.from);
  }
}

async function renameProperty(ctx: StepContext, from: string, to: string): Promise<number> {
  const has = { [from]: { $exists: true } };
  return pages(ctx, has, [from], ALL, async (docs) => {
    const updateMany = ctx.coll.updateMany?.bind(ctx.coll);
    if (updateMany) await sendEach(chunks(docs), writesAtOnce(ctx.store), ctx.hold, (chunk) => updateMany({ id: { $in: chunk.map((doc) => doc.id) }, ...has }, { $rename: { [from]: to } }));
    else await setEach(ctx, docs, has, (doc) => ({ $set: { [to]: doc[from] }, $unset: { [from]: true } }));
  });
}

type ConvertStep = Extract<MigrationStep, { op: 'convert' }>;

async function convertUp(ctx: StepContext, step: ConvertStep): Promise<number> {
  const name = step.property;
  const has = { [name]: { $exists: true } };
  if (step.invalid === 'fail' && ctx.start.cursor === null) {
    // Before anything is written: the migration fails whole or does its work.
    const counts = await scanConversion(ctx.coll, name, step.to, ctx.batch);
    if (counts.invalid > 0) throw new MigrationStepError(`convert ${name} to ${step.to}: ${counts.invalid} values do not convert (e.g. objects ${counts.examples.join(', ')}) and "invalid" is "fail"; change those objects, or choose "unset", "keep" or {"set": value}`);
  }
  // Objects whose value converts, or does not and is unset or replaced: what the step changes.
  const needs = (doc: Doc): boolean => {
    const kind = convertValue(doc[name], step.to).kind;
    return kind === 'changed' || (kind === 'invalid' && step.invalid !== 'keep');
  };
  return pages(ctx, has, [name], needs, async (docs) => {
    const changed: [Doc, unknown][] = [];
    const invalid: Doc[] = [];
    for (const doc of docs) {
      const outcome = convertValue(doc[name], step.to);
      if (outcome.kind === 'changed') changed.push([doc, outcome.value]);
      else if (outcome.kind === 'invalid') invalid.push(doc);
    }
    if (invalid.length > 0 && step.invalid === 'fail') throw new MigrationStepError(`convert ${name} to ${step.to}: object ${invalid[0]?.id ?? '?'} holds a value that does not convert and "invalid" is "fail"`);
    if (invalid.length > 0 && step.invalid !== 'keep' && step.invalid !== 'fail') {
      await keep(ctx, invalid.map((doc) => [doc.id, doc[name]]));
      const policy = step.invalid;
      await ctx.hold();
      await setEach(ctx, invalid, has, () => (policy === 'unset' ? { $unset: { [name]: true } } : { $set: { [name]: structuredClone(policy.set) } }));
    }
    const values = new Map(changed.map(([doc, value]) => [doc.id, value]));
    await setEach(
      ctx,
      changed.map(([doc]) => doc),
      has,
      (doc) => ({ $set: { [name]: values.get(doc.id) } }),
    );
  });
}

/**
 * A type change undone: first the values it took away come back (where the object has no value,
 * or still the `{set}` one), then every value of the new type is converted back to the old one
 * (`" 12 "` became 12 and comes back as "12": a conversion back is not always the text it was).
 */
async function convertDown(ctx: StepContext, step: ConvertStep): Promise<number> {
  const name = step.property;
  let touched = 0;
  if (ctx.start.phase === 0) {
    const policy = step.invalid;
    touched += await restoreKept(ctx, name, (doc) => (typeof policy === 'object' ? deepEqual(doc[name], policy.set) : doc[name] === undefined));
    ctx.start = { phase: 1, cursor: null, touched };
    await ctx.progress(ctx.start);
  }
  // Values of the new type that convert back to the old one.
  const back = (doc: Doc): Conversion | undefined => (convertValue(doc[name], step.to).kind === 'same' ? convertValue(doc[name], step.from) : undefined);
  return pages(
    ctx,
    { [name]: { $exists: true } },
    [name],
    (doc) => back(doc)?.kind === 'changed',
    (docs) =>
      setEach(ctx, docs, { [name]: { $exists: true } }, (doc) => {
        const b = back(doc);
        return { $set: { [name]: b?.kind === 'changed' ? b.value : doc[name] } };
      }),
  );
}

/** How many values a type change converts, and how many do not convert (with a few object ids). */
export async function scanConversion(coll: StoreCollection, name: string, to: PropertyType, batch: number): Promise<{ changed: number; invalid: number; examples: string[] }> {
  const out = { changed: 0, invalid: 0, examples: [] as string[] };
  let cursor: string | null = null;
  for (;;) {
    const page: Doc[] = await coll.find(after({ [name]: { $exists: true } }, cursor), { sort: { id: 1 }, limit: batch, fields: { id: 1, [name]: 1 } });
    const last = page[page.length - 1];
    if (last === undefined) return out;
    for (const doc of page) {
      const kind = convertValue(doc[name], to).kind;
      if (kind === 'changed') out.changed++;
      else if (kind === 'invalid') {
        out.invalid++;
        if (out.examples.length < 5) out.examples.push(doc.id);
      }
    }
    cursor = last.id;
  }
}

/** How many objects share a value of the property with another (what a unique index refuses). */
export async function countDuplicates(coll: StoreCollection, name: string, batch: number): Promise<number> {
  const seen = new Map<string, number>();
  let cursor: string | null = null;
  for (;;) {
    const page: Doc[] = await coll.find(after({ [name]: { $exists: true } }, cursor), { sort: { id: 1 }, limit: batch, fields: { id: 1, [name]: 1 } });
    const last = page[page.length - 1];
    if (last === undefined) break;
    for (const doc of page) {
      const value = doc[name];
      if (value === null || value === undefined) continue;
      const key = JSON.stringify([typeof value, value]);
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    cursor = last.id;
  }
  let duplicates = 0;
  for (const n of seen.values()) if (n > 1) duplicates += n;
  return duplicates;
}

async function makeIndex(coll: StoreCollection, name: string, unique: boolean): Promise<number> {
  try {
    await coll.ensureIndex({ field: name, unique });
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    const duplicates = await countDuplicates(coll, name, 1000).catch(() => undefined);
    throw new MigrationStepError(`a unique index on ${name} cannot be made: ${duplicates ?? 'some'} objects share a value of ${name} with another; make them differ (or drop "unique") and start again`, { cause: err });
  }
  return 0;
}

/**
 * Objects of `from` move to `to` a batch at a time, each copied (unless a copy is there) before it
 * is removed: interrupted, an object is in one of the two or both, never in neither. A store that
 * can rename a collection in one step does so when `to` is empty. An object whose unique value is
 * taken under `to` fails the step (the objects moved so far stay moved; it resumes).
 */
async function moveCollection(ctx: StepContext, from: string, to: string): Promise<number> {
  const source = ctx.store.collection(from);
  const target = ctx.store.collection(to);
  let moved = ctx.start.touched;
  const count = ctx.start.cursor === null && ctx.store.renameCollection ? await source.count({}) : 0;
  if (count > 0 && ctx.store.renameCollection) {
    await ctx.hold();
    if (await ctx.store.renameCollection(from, to)) {
      moved += count;
      await ctx.progress({ phase: 0, cursor: null, touched: moved });
      return moved;
    }
  }
  for (;;) {
    const batch = await source.find({}, { limit: ctx.batch });
    const last = batch[batch.length - 1];
    if (last === undefined) return moved;
    const ids = batch.map((doc) => doc.id);
    const copied = new Set((await target.find({ id: { $in: ids } }, { fields: { id: 1 } })).map((doc) => doc.id));
    await sendEach(
      batch.filter((doc) => !copied.has(doc.id)),
      writesAtOnce(ctx.store),
      ctx.hold,
      (doc) =>
        target.insert(doc).catch((err: unknown) => {
          if (err instanceof DuplicateKeyError && err.field === 'id') return doc;
          if (err instanceof DuplicateKeyError) throw new MigrationStepError(`moving the objects of ${from} to ${to}: an object's ${err.field} is taken under ${to} already (by an object kept from a resource deleted before?); change one of them and start again`, { cause: err });
          throw err;
        }),
    );
    await ctx.hold();
    moved += await source.remove({ id: { $in: ids } });
    await ctx.progress({ phase: 0, cursor: last.id, touched: moved });
  }
}

/** Keeps values taken away from objects (object id, value), for `down`; a value kept already stays. */
async function keep(ctx: StepContext, entries: [id: string, value: unknown][]): Promise<void> {
  const docs: Kept[] = entries.filter(([, value]) => value !== undefined).map(([id, value]) => ({ id: `${ctx.migration}#${ctx.index}#${id}`, m: ctx.migration, s: ctx.index, o: id, v: value }));
  if (docs.length === 0) return;
  const insertMany = ctx.values.insertMany?.bind(ctx.values);
  if (insertMany) {
    try {
      await sendEach(chunks(docs), writesAtOnce(ctx.store), ctx.hold, (chunk) => insertMany(chunk));
      return;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      // Some were kept before an interruption: one at a time below.
    }
  }
  await sendEach(docs, writesAtOnce(ctx.store), ctx.hold, (doc) =>
    ctx.values.insert(doc).catch((err: unknown) => {
      if (!(err instanceof DuplicateKeyError)) throw err;
      return doc;
    }),
  );
}

/** Puts kept values back where `wanted(object)` holds, then forgets them; answers how many came back. */
async function restoreKept(ctx: StepContext, name: string, wanted: (doc: Doc) => boolean): Promise<number> {
  let restored = ctx.start.touched;
  for (;;) {
    const kept = (await ctx.values.find({ m: ctx.migration, s: ctx.index }, { limit: ctx.batch, sort: { id: 1 } })) as Kept[];
    if (kept.length === 0) return restored;
    const ids = kept.map((k) => k.o);
    const current = new Map((await ctx.coll.find({ id: { $in: ids } }, { fields: { id: 1, [name]: 1 } })).map((doc) => [doc.id, doc]));
    const back = kept.filter((k) => {
      const doc = current.get(k.o);
      return doc !== undefined && wanted(doc);
    });
    const values = new Map(back.map((k) => [k.o, k.v]));
    await ctx.hold();
    restored += await setEach(
      ctx,
      back.map((k) => current.get(k.o) as Doc),
      {},
      (doc) => ({ $set: { [name]: values.get(doc.id) } }),
    );
    await ctx.hold();
    await ctx.values.remove({ id: { $in: kept.map((k) => k.id) } });
    await ctx.progress({ phase: ctx.start.phase, cursor: null, touched: restored });
  }
}

/** Every object a step's filter finds needs its change. */
const ALL = (): boolean => true;

/**
 * Pages through the objects matching `filter` in id order from the step's cursor; `handle` changes
 * those of each page that `needs` the change. What a page changed is counted by reading its objects
 * again: those that no longer need the change were changed (not the write's reply, which a write
 * that timed out and went on in the database never gives). A page is recorded as pending before its
 * write, so that a process killed during it counts it the same way when resumed. A write that
 * fails because the database did not answer is tried again on what is still to change, once the
 * database has stopped changing the page (see settle). Answers the objects changed in all.
 */
async function pages(ctx: StepContext, filter: Filter, names: string[], needs: (doc: Doc) => boolean, handle: (docs: Doc[]) => Promise<unknown>): Promise<number> {
  let { cursor, touched } = ctx.start;
  let pending = ctx.start.pending ?? null;
  const reader = new PageReader(ctx.coll, filter, names, ctx.batch);
  for (;;) {
    let todo: Doc[];
    if (pending === null) {
      const page = await reader.after(cursor);
      const last = page[page.length - 1];
      if (last === undefined) return touched;
      todo = page.filter(needs);
      pending = { to: last.id, todo: todo.length };
      if (todo.length > 0) await ctx.progress({ phase: ctx.start.phase, cursor, touched, pending });
    } else {
      // Resumed in the middle of a page: what of it is still to change.
      todo = (await reader.range(cursor, pending.to)).filter(needs);
    }
    const left = await writePage(ctx, reader, needs, todo, handle);
    touched += pending.todo - left;
    cursor = pending.to;
    pending = null;
    await ctx.progress({ phase: ctx.start.phase, cursor, touched, pending: null });
  }
}

/** Reads of a step's objects (those `filter` matches, in id order), at most `size` at a time: halved while the database cannot answer in time. */
class PageReader {
  readonly #fields: Record<string, 1>;

  constructor(
    private readonly coll: StoreCollection,
    private readonly filter: Filter,
    names: string[],
    private size: number,
  ) {
    this.#fields = Object.fromEntries([['id', 1], ...names.map((n) => [n, 1])]) as Record<string, 1>;
  }

  /** The next page after `cursor`. */
  after(cursor: string | null, to?: string): Promise<Doc[]> {
    const id = to === undefined ? (cursor === null ? undefined : { $gt: cursor }) : cursor === null ? { $lte: to } : { $gt: cursor, $lte: to };
    const filter = id === undefined ? this.filter : { ...this.filter, id };
    return answered(
      () => this.coll.find(filter, { sort: { id: 1 }, limit: this.size, fields: this.#fields }),
      () => (this.size = Math.max(1, Math.floor(this.size / 2))),
    );
  }

  /** Every object after `cursor` up to `to`. */
  async range(cursor: string | null, to: string): Promise<Doc[]> {
    const out: Doc[] = [];
    for (let at = cursor; ; ) {
      const page = await this.after(at, to);
      out.push(...page);
      const last = page[page.length - 1];
      if (last === undefined || last.id === to) return out;
      at = last.id;
    }
  }

  /** Those of `ids` the filter still matches. */
  async ids(ids: string[]): Promise<Doc[]> {
    const out: Doc[] = [];
    for (let i = 0; i < ids.length; ) {
      const chunk = ids.slice(i, i + this.size);
      out.push(
        ...(await answered(
          () => this.coll.find({ ...this.filter, id: { $in: chunk } }, { limit: chunk.length, fields: this.#fields }),
          () => (this.size = Math.max(1, Math.floor(this.size / 2))),
        )),
      );
      i += chunk.length;
    }
    return out;
  }
}

/** Writes a page until none of its objects needs the change (or the write says it is done); answers how many still need it. */
async function writePage(ctx: StepContext, reader: PageReader, needs: (doc: Doc) => boolean, todo: Doc[], handle: (docs: Doc[]) => Promise<unknown>): Promise<number> {
  let left = todo;
  const still = async (): Promise<Doc[]> => (await reader.ids(left.map((doc) => doc.id))).filter(needs);
  for (let failures = 0; left.length > 0; ) {
    await ctx.hold();
    try {
      await handle(left);
      return (await still()).length;
    } catch (err) {
      // A database that did not answer in time (its time limit per operation, a busy FerretDB
      // writing each object in a transaction of its own, or one frozen for a while).
      if (!isUnavailable(err) || ++failures > UNAVAILABLE_RETRIES) throw err;
    }
    left = await settle(still, failures);
  }
  return 0;
}

/**
 * After a write that timed out: waits until the database has stopped changing the page (the call
 * may go on there, object by object on FerretDB v1), then answers what is still to change. Two
 * writes of the same change to an object agree, so one going on beside the retry is harmless; a
 * late one landing after the *next* step changed the object would undo that step's change on a
 * database whose updates are not atomic (FerretDB v1): this wait keeps that from happening within
 * one process (a real MongoDB applies each object's update atomically and filters on the value it
 * changes); across processes, the lease does (writes.ts, docs/migrations.md).
 */
async function settle(still: () => Promise<Doc[]>, failures: number): Promise<Doc[]> {
  let left = await still();
  for (let quiet = 0; quiet < 2 && left.length > 0; ) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 500 * failures)));
    const now = await still();
    quiet = now.length === left.length ? quiet + 1 : 0;
    left = now;
  }
  return left;
}

/** A read, tried again while the database does not answer (a few times, then its error); `retry` is told before each new try. */
async function answered<T>(read: () => Promise<T>, retry?: () => void): Promise<T> {
  for (let failures = 0; ; failures++) {
    try {
      return await read();
    } catch (err) {
      if (!isUnavailable(err) || failures >= UNAVAILABLE_RETRIES) throw err;
      retry?.();
      await new Promise((resolve) => setTimeout(resolve, 250 * (failures + 1)));
    }
  }
}

/** Times a page in a row may meet a database that does not answer before its migration fails. */
const UNAVAILABLE_RETRIES = 12;

/** The store did not answer (in time): worth another try, not a reason to fail the migration at once. */
export function isUnavailable(err: unknown): boolean {
  return err instanceof SvcError && err.code === 'UNAVAILABLE';
}

function after(filter: Filter, cursor: string | null): Filter {
  return cursor === null ? filter : { ...filter, id: { $gt: cursor } };
}

/**
 * Applies to each object its ops, under `condition` besides its id (an object changed meanwhile so
 * that it no longer needs it is left alone): a few writes at a time on MongoDB, the lease held
 * before each (sendEach). Answers how many objects changed.
 */
async function setEach(ctx: Pick<StepContext, 'store' | 'coll' | 'hold'>, docs: Doc[], condition: Filter, ops: (doc: Doc) => ManyOps & { $rename?: never }): Promise<number> {
  if (docs.length === 0) return 0;
  const coll = ctx.coll;
  const first = ops(docs[0] as Doc);
  // One updateMany per chunk when every object gets the same change.
  const updateMany = coll.updateMany?.bind(coll);
  if (updateMany && docs.every((doc) => deepEqual(ops(doc), first))) {
    const counts = await sendEach(chunks(docs), writesAtOnce(ctx.store), ctx.hold, (chunk) => updateMany({ id: { $in: chunk.map((doc) => doc.id) }, ...condition }, first));
    return counts.reduce((a, b) => a + b, 0);
  }
  const done = await sendEach(docs, writesAtOnce(ctx.store), ctx.hold, (doc) => coll.update({ id: doc.id, ...condition }, ops(doc)));
  return done.filter((doc) => doc !== null).length;
}
