import { expect } from 'vitest';
import type { Doc, Filter, FindOptions, Store, StoreCollection } from '../../src/store/Store.js';

/**
 * The optional reads of the store contract (issue 39): a store may offer texts and reads at once
 * beside find/findOne, and each one it offers must answer what its plain read, serialised,
 * answers: `findJson` is `JSON.stringify(find)`, and so on. The shortcuts of the read side answer
 * from them, so a store whose text drifted from its objects would answer clients wrongly.
 */
export const OPTIONAL_READS = ['findJson', 'findWithJson', 'findTexts', 'findTextsOfIdsNow', 'findOneJson', 'findOneJsonNow', 'findOneWithJsonNow'] as const;

/** One of {@link OPTIONAL_READS}. */
export type OptionalRead = (typeof OPTIONAL_READS)[number];

type Case = (ctx: { coll: StoreCollection; store: Store }) => Promise<void>;

/** Objects whose texts are easy to get wrong: escapes, line separators, nesting, a date, null, big numbers. */
const objects: Doc[] = [
  { id: 't1', name: 'Ann "the quill"', age: 31, tags: ['x', 'y'], address: { city: 'Oslo', zip: '0150' }, at: new Date('2024-02-29T12:34:56.789Z') },
  { id: 't2', name: 'bob \\ é 😀', age: 25, tags: ['y'], note: 'line\u2028separator\u2029', big: 1e21, small: 1e-7 },
  { id: 't3', name: 'Cid', age: 40, tags: [], nick: null, deep: { a: [1, { b: [null, true, 'name'] }] } },
  { id: 't4', name: 'Dee', age: 25, 'with space': 'key', 'dash-key': '"quoted"' },
  { id: 't5', name: '', age: -0.5 },
  // Picked names found in the text but not as the object's own members: inside a key, nested only.
  { id: 't6', 'q"tags': '},{', sub: { name: 'x', age: [25, { age: 1 }] }, city: 'a,"b"}' },
  { id: 't7', 'q"age': 1, age: 2, tags: [['y'], '"tags":'] },
];

/**
 * The objects a store is given: those with a `"` in a key are for findTexts' reading of the text
 * (a picked name found inside a key), which only the embedded stores offer; FerretDB v1's SQLite
 * handler refuses such keys ("malformed JSON"), where MongoDB stores them.
 */
const objectsFor = (coll: StoreCollection): Doc[] => (coll.findTexts ? objects : objects.filter((doc) => !Object.keys(doc).some((key) => key.includes('"'))));

const FILTERS: Filter[] = [{}, { age: 25 }, { age: { $gte: 30 } }, { tags: 'y' }, { name: { $regex: /^[a-c]/i } }, { id: { $in: ['t4', 't1', 'nope', 't1'] } }, { age: 99 }];
const OPTIONS: Omit<FindOptions, 'fields'>[] = [{}, { sort: { age: 1, name: 1 } }, { sort: { name: -1 }, skip: 1, limit: 2 }, { limit: 1 }, { skip: 3 }, { anyOrder: true }];
const PICK = ['id', 'name', 'tags', 'address', 'missing', 'city', 'at', 'age'];
/** Few names, as an On Get reads: a store may keep what it found for them (read twice below). */
const FEW = ['age', 'name', 'missing', 'city'];

const byId = (a: { id: unknown }, b: { id: unknown }): number => String(a.id).localeCompare(String(b.id));
const texts = (docs: Doc[]): string[] => docs.map((d) => JSON.stringify(d));

/** What find answers, as JSON texts; sorted by id when the order is the store's to choose. */
async function expected(coll: StoreCollection, filter: Filter, options: Omit<FindOptions, 'fields'>): Promise<string[]> {
  const docs = await coll.find(filter, options);
  return texts(options.anyOrder === true && options.sort === undefined ? [...docs].sort(byId) : docs);
}

const inOrder = (list: string[], options: Omit<FindOptions, 'fields'>): string[] =>
  options.anyOrder === true && options.sort === undefined ? [...list].sort((a, b) => byId(JSON.parse(a) as Doc, JSON.parse(b) as Doc)) : list;

/** Every optional read the collection offers, checked against its plain read on the current data. */
async function checkAll(coll: StoreCollection): Promise<void> {
  for (const filter of FILTERS) {
    for (const options of OPTIONS) {
      const want = await expected(coll, filter, options);
      const where = `${JSON.stringify(filter, (_k, v: unknown) => (v instanceof RegExp ? String(v) : v))} ${JSON.stringify(options)}`;
      if (coll.findJson) {
        const json = await coll.findJson(filter, options);
        if (options.anyOrder === true) expect(inOrder((JSON.parse(json) as unknown[]).map((d) => JSON.stringify(d)), options), `findJson ${where}`).toEqual(want);
        else expect(json, `findJson ${where}`).toBe(JSON.stringify(await coll.find(filter, options)));
      }
      if (coll.findWithJson) {
        const found = await coll.findWithJson(filter, options);
        expect(found.texts, `findWithJson texts ${where}`).toEqual(texts(found.docs));
        expect(inOrder(found.texts, options), `findWithJson ${where}`).toEqual(want);
      }
      if (coll.findTexts) for (const pick of [PICK, FEW, [...FEW], ['at']]) await checkTexts(coll, filter, options, where, want, pick);
    }
  }
  const docs = await coll.find({});
  for (const id of [...docs.map((d) => d.id), 'nope']) await checkOne(coll, id);
  if (coll.findTextsOfIdsNow) {
    // A long list too (a store may read few ids one by one and many in one statement).
    const long = [...docs.map((d) => d.id), ...Array.from({ length: 70 }, (_, i) => `nope${i}`), 't1'];
    // Many ids, few of them distinct (`$expand` lists one id per object of a page).
    const repeated = Array.from({ length: 100 }, (_, i) => (i % 9 === 8 ? 'nope' : (docs[i % docs.length] as Doc).id));
    for (const ids of [['t4', 't1', 'nope', 't1'], docs.map((d) => d.id), [], long, repeated]) {
      const now = coll.findTextsOfIdsNow(ids, PICK);
      // Undefined: the store cannot tell at once (a write under way); the caller asks findTexts.
      if (now === undefined) continue;
      const later = await coll.findTexts?.({ id: { $in: ids } }, { anyOrder: true }, PICK);
      expect(now.texts.map((t) => t).sort(), `findTextsOfIdsNow ${ids.join()}`).toEqual([...(later?.texts ?? [])].sort());
      expect(now.listedRows?.map((row) => (row < 0 ? null : (JSON.parse(now.texts[row] as string) as Doc).id)), 'findTextsOfIdsNow listedRows').toEqual(ids.map((id) => (docs.some((d) => d.id === id) ? id : null)));
    }
  }
}

/** findTexts: texts as find serialises them, the picked values, and where each value is in its text. */
async function checkTexts(coll: StoreCollection, filter: Filter, options: Omit<FindOptions, 'fields'>, where: string, want: string[], names: readonly string[]): Promise<void> {
  const found = await coll.findTexts?.(filter, options, names);
  if (found === undefined) return;
  expect(inOrder(found.texts, options), `findTexts ${where}`).toEqual(want);
  found.texts.forEach((text, i) => {
    const doc = JSON.parse(text) as Record<string, unknown>;
    names.forEach((key, k) => {
      const value = found.values[i * names.length + k];
      expect(value === undefined ? undefined : JSON.stringify(value), `findTexts value ${key} ${where}`).toEqual(doc[key] === undefined ? undefined : JSON.stringify(doc[key]));
      const start = found.spans[(i * names.length + k) * 2] as number;
      const end = found.spans[(i * names.length + k) * 2 + 1] as number;
      if (start >= 0) expect(text.slice(start, end), `findTexts span ${key} ${where}`).toBe(JSON.stringify(doc[key]));
      else if (start === -1) expect(Object.hasOwn(doc, key), `findTexts span -1 of ${key} ${where}`).toBe(false);
      else expect(start, `findTexts span ${key} ${where}`).toBe(-2);
    });
  });
  const listed = (filter.id as { $in?: string[] } | undefined)?.$in;
  if (found.listedRows !== undefined && listed !== undefined) {
    expect(found.listedRows.map((row) => (row < 0 ? null : (JSON.parse(found.texts[row] as string) as Doc).id)), `findTexts listedRows ${where}`).toEqual(
      listed.map((id) => (want.some((t) => (JSON.parse(t) as Doc).id === id) ? id : null)),
    );
  }
}

/** The reads of one object by id: the text of findOne, at once or not. */
async function checkOne(coll: StoreCollection, id: string): Promise<void> {
  const doc = await coll.findOne({ id });
  const text = doc === null ? null : JSON.stringify(doc);
  if (coll.findOneJson) expect(await coll.findOneJson(id), `findOneJson ${id}`).toBe(text);
  const now = coll.findOneJsonNow?.(id);
  if (now !== undefined) expect(now, `findOneJsonNow ${id}`).toBe(text);
  const found = coll.findOneWithJsonNow?.(id);
  if (found === undefined) return;
  if (doc === null) return expect(found, `findOneWithJsonNow ${id}`).toBeNull();
  expect(found?.doc, `findOneWithJsonNow doc ${id}`).toEqual(doc);
  expect(found?.text, `findOneWithJsonNow text ${id}`).toBe(text);
  // A copy: the caller may change it (On Get runs on it in place).
  if (found !== null) (found.doc as Record<string, unknown>).name = 'changed by the caller';
  expect(await coll.findOne({ id }), `findOneWithJsonNow copy ${id}`).toEqual(doc);
}

/**
 * Registers the optional-read cases with the contract's `test`: the store declares the optional
 * reads it offers (`declared`), so that one lost by a wrapper or a change fails instead of
 * silently sending every request the slow way; each offered one is checked against its plain
 * read, before and after writes.
 */
export function textReadCases(test: (title: string, body: Case) => void, declared: readonly OptionalRead[]): void {
  test('optional reads: the store offers the ones it declares, and no other', async ({ coll }) => {
    expect(OPTIONAL_READS.filter((method) => typeof coll[method] === 'function')).toEqual(OPTIONAL_READS.filter((method) => declared.includes(method)));
  });

  test('optional reads answer what find and findOne answer, serialised: findJson is JSON.stringify(find), and so on', async ({ coll }) => {
    for (const doc of objectsFor(coll)) await coll.insert(structuredClone(doc));
    await checkAll(coll);
  });

  test('kept lists: findTexts gives the list keptList finds, its answer kept until a write that may change the list; generationNow is another number after every write', async ({ coll, store }) => {
    if (coll.keptList === undefined) {
      expect(coll.generationNow).toBeUndefined();
      return;
    }
    for (const doc of objectsFor(coll)) await coll.insert(structuredClone(doc));
    const query = [{ age: 25 }, { sort: { name: 1 } }] as const;
    const first = await coll.findTexts?.(query[0], query[1], ['id']);
    const list = first?.list;
    expect(list).toBeDefined();
    expect(await coll.keptList(query[0], query[1])).toBe(list);
    list?.keep('expanded', '[answer]');
    expect((await coll.findTexts?.(query[0], query[1], ['id']))?.list).toBe(list);
    expect(list?.answer('expanded')).toBe('[answer]');
    expect(list?.answer('other')).toBeUndefined();
    const seen = new Set<number | undefined>([coll.generationNow?.()]);
    const changed = (what: string): void => {
      const now = coll.generationNow?.();
      expect(now, what).toBeTypeOf('number');
      expect(seen.has(now), what).toBe(false);
      seen.add(now);
    };
    // A write of objects the list cannot hold leaves it and its answer.
    await coll.insert({ id: 'n1', name: 'New', age: 30 });
    changed('insert');
    expect(await coll.keptList(query[0], query[1])).toBe(list);
    expect(list?.answer('expanded')).toBe('[answer]');
    // One that may change it drops both: the query is kept anew when read again, without an answer.
    await coll.update({ id: 't4' }, { $set: { name: 'Dee, renamed' } });
    changed('update');
    expect(await coll.keptList(query[0], query[1])).toBeUndefined();
    expect(list?.answer('expanded')).toBeUndefined();
    list?.keep('expanded', '[stale]');
    expect(list?.answer('expanded')).toBeUndefined();
    const again = (await coll.findTexts?.(query[0], query[1], ['id']))?.list;
    expect(again).toBeDefined();
    expect(again).not.toBe(list);
    expect(again?.answer('expanded')).toBeUndefined();
    await coll.remove({ id: 'n1' });
    changed('remove');
    await coll.insertMany?.([{ id: 'n2', age: 1 }]);
    if (coll.insertMany) changed('insertMany');
    await coll.updateMany?.({ age: 1 }, { $set: { age: 2 } });
    if (coll.updateMany) changed('updateMany');
    await coll.ensureIndex({ field: 'name' });
    changed('ensureIndex');
    await coll.dropIndex?.('name');
    if (coll.dropIndex) changed('dropIndex');
    // No other collection has had one of these numbers.
    expect(seen.has(store.collection('another').generationNow?.())).toBe(false);
  });

  test('optional reads follow every write: updates, removals, inserts, modifiers', async ({ coll }) => {
    for (const doc of objectsFor(coll)) await coll.insert(structuredClone(doc));
    await checkAll(coll);
    await coll.update({ id: 't1' }, { $set: { name: 'Ann, renamed', age: 25 }, $push: { tags: ['z'] } });
    await coll.update({ id: 't3' }, { $unset: { nick: true }, $inc: { age: 1 } });
    await coll.remove({ id: 't2' });
    await coll.insert({ id: 't8', name: 'Eve', age: 25, tags: ['y', 'x'] });
    await coll.update({ id: 't4' }, { $pull: { tags: ['x'] }, $addToSet: { more: [1, 1, 2] } });
    await checkAll(coll);
  });
}
