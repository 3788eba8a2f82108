import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../../../src/store/embeddedStore.js';
import { createEngineStore } from '../../../src/store/embedded/index.js';
import type { Doc, Filter, FindOptions, Store, StoreCollection, UpdateOps } from '../../../src/store/Store.js';

// The engine against the old embedded store on the same random objects, filters, sorts and
// updates: the same answers (the query language's meaning, arrays, null and missing, kinds
// mixed), whichever parts the planner could write in SQL. And every text read equal to the plain
// read it stands for (findJson === JSON.stringify(find), ...). Strings are ASCII: the one
// difference documented (strings compared by code point, not UTF-16 unit) is not drawn.

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEED = Number(process.env.SVC_ENGINE_SEED ?? 41);
const rnd = random(SEED);
const pick = <T,>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)] as T;
const words = ['a', 'b', 'ab', 'B', 'c', 'abc', ''];

function scalar(): unknown {
  return pick([() => Math.floor(rnd() * 6) - 1, () => pick(words), () => rnd() < 0.5, () => null, () => Math.floor(rnd() * 60) / 10, () => new Date(Math.floor(rnd() * 4) * 1000)])();
}

function value(depth = 0): unknown {
  const r = rnd();
  if (r < 0.6 || depth > 1) return scalar();
  // Elements are scalars or objects: for an array inside an array, the old store looks into it
  // ({o: {$in: [3]}} matches o: [[3]]) where MongoDB and the engine do not (documented).
  if (r < 0.8) return Array.from({ length: Math.floor(rnd() * 3) }, () => (rnd() < 0.8 ? scalar() : { a: scalar() }));
  return { a: scalar(), ...(rnd() < 0.5 ? { b: value(depth + 1) } : {}) };
}

let next = 0;
function doc(): Doc {
  const out: Doc = { id: `d${next++}` };
  for (const key of ['n', 's', 'tags', 'o']) if (rnd() < 0.8) out[key] = key === 'n' ? scalar() : key === 's' ? pick([...words, null]) : value();
  if (rnd() < 0.3) out.k = Math.floor(rnd() * 5);
  return out;
}

const paths = ['n', 's', 'tags', 'o', 'o.a', 'o.b', 'k', 'id', 'missing'];

/**
 * A bound of a range: numbers and strings (nedb throws on null inside $nor). Not dates: the old
 * store takes null for less than any date (`null <= date` in JavaScript), where MongoDB and the
 * engine compare dates only with dates (documented; engine test 'dates compare only with dates').
 */
function bound(): unknown {
  return pick([() => Math.floor(rnd() * 60) / 10 - 1, () => pick(words), () => pick(['d1', 'd5'])])();
}

function condition(): unknown {
  const v = (): unknown => (rnd() < 0.2 ? pick(['d1', 'd2', 'd3']) : scalar());
  return pick([
    () => v(),
    () => ({ $ne: v() }),
    () => ({ [pick(['$gt', '$gte', '$lt', '$lte'])]: bound() }),
    () => ({ $gt: bound(), $lt: bound() }),
    () => ({ $in: [v(), v()] }),
    () => ({ $nin: [v(), v()] }),
    () => ({ $exists: rnd() < 0.5 }),
    () => ({ $size: Math.floor(rnd() * 3) }),
    () => ({ $regex: pick([/^a/, /b/i, /^$/]) }),
    () => ({ $not: { [pick(['$gt', '$lt'])]: Math.floor(rnd() * 5) } }),
    () => ({ $elemMatch: { a: { $gt: 1 } } }),
  ])();
}

function filter(depth = 0): Filter {
  const r = rnd();
  if (r < 0.15 && depth < 2) return { [pick(['$or', '$and', '$nor'])]: [filter(depth + 1), filter(depth + 1)] };
  const out: Filter = {};
  const count = Math.floor(rnd() * 3);
  for (let i = 0; i < count; i++) out[pick(paths)] = condition();
  return out;
}

function options(): Omit<FindOptions, 'fields'> {
  const out: Omit<FindOptions, 'fields'> = {};
  if (rnd() < 0.6) {
    const sort: Record<string, 1 | -1> = {};
    for (let i = 0; i < 1 + Math.floor(rnd() * 2); i++) sort[pick(['n', 's', 'k', 'id', 'o.a', 'tags'])] = rnd() < 0.5 ? 1 : -1;
    out.sort = sort;
  }
  if (rnd() < 0.4) out.limit = 1 + Math.floor(rnd() * 5);
  if (rnd() < 0.3) out.skip = Math.floor(rnd() * 4);
  return out;
}

function update(): UpdateOps {
  return pick<() => UpdateOps>([
    () => ({ $set: { n: scalar() } }),
    () => ({ $set: { s: pick(words) }, $unset: { o: true } }),
    () => ({ $inc: { k: 1 } }),
    () => ({ $push: { list: [scalar()] } }),
    () => ({ $addToSet: { list: [pick(words)] } }),
    () => ({ $pull: { list: [pick(words)] } }),
  ])();
}

/** An answer as comparable text: a failed call as its error's message. */
async function outcome<T>(run: () => Promise<T>): Promise<string> {
  try {
    return JSON.stringify(await run());
  } catch (err) {
    return `error: ${err instanceof Error ? err.message : String(err)}`;
  }
}

describe(`embedded engine against the old embedded store, random queries (seed ${SEED})`, () => {
  let dirs: string[];
  let stores: Store[];
  let old: StoreCollection;
  let engine: StoreCollection;

  beforeAll(async () => {
    dirs = [await mkdtemp(join(tmpdir(), 'svc-diff-old-')), await mkdtemp(join(tmpdir(), 'svc-diff-new-'))];
    stores = [await createEmbeddedStore({ dir: dirs[0] as string }), await createEngineStore({ dir: dirs[1] as string })];
    old = (stores[0] as Store).collection('things');
    engine = (stores[1] as Store).collection('things');
    for (const coll of [old, engine]) await coll.ensureIndex({ field: 'n' });
    for (let i = 0; i < 150; i++) {
      const d = doc();
      await old.insert(structuredClone(d));
      await engine.insert(structuredClone(d));
    }
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('finds and counts the same objects in the same order', async () => {
    for (let i = 0; i < 400; i++) {
      const f = filter();
      const o = options();
      const label = JSON.stringify({ i, f, o }, (_k, v: unknown) => (v instanceof RegExp ? String(v) : v));
      const expected = await outcome(() => old.find(f, o));
      // An order the old store leaves to ties (mixed kinds compare equal only by insertion) is the same too.
      expect(await outcome(() => engine.find(f, o)), label).toBe(expected);
      expect(await outcome(() => engine.count(f)), label).toBe(await outcome(() => old.count(f)));
    }
  });

  it('answers every text read as the plain read it stands for', async () => {
    for (let i = 0; i < 150; i++) {
      const f = filter();
      const o = options();
      const label = JSON.stringify({ i, f, o }, (_k, v: unknown) => (v instanceof RegExp ? String(v) : v));
      let docs: Doc[];
      try {
        docs = await engine.find(f, o);
      } catch {
        continue;
      }
      expect(await engine.findJson?.(f, o), label).toBe(JSON.stringify(docs));
      const both = await engine.findWithJson?.(f, o);
      expect(both?.docs, label).toEqual(docs);
      expect(both?.texts, label).toEqual(docs.map((d) => JSON.stringify(d)));
      const texts = await engine.findTexts?.(f, o, ['id', 'n', 'o']);
      expect(texts?.texts, label).toEqual(docs.map((d) => JSON.stringify(d)));
      docs.forEach((d, row) => {
        expect(texts?.values.slice(row * 3, row * 3 + 3), label).toEqual([d.id, d.n, d.o]);
        for (let k = 1; k < 3; k++) {
          const start = texts?.spans[(row * 3 + k) * 2] as number;
          const end = texts?.spans[(row * 3 + k) * 2 + 1] as number;
          if (start >= 0) expect(texts?.texts[row]?.slice(start, end), label).toBe(JSON.stringify(d[k === 1 ? 'n' : 'o']));
          if (start === -1) expect(Object.hasOwn(d, k === 1 ? 'n' : 'o')).toBe(false);
        }
      });
    }
    for (const id of ['d0', 'd7', 'd149', 'nope']) {
      const found = await engine.findOne({ id });
      expect(engine.findOneJsonNow?.(id)).toBe(found === null ? null : JSON.stringify(found));
      expect(await engine.findOneJson?.(id)).toBe(found === null ? null : JSON.stringify(found));
      expect(engine.findOneWithJsonNow?.(id)).toEqual(found === null ? null : { doc: found, text: JSON.stringify(found) });
    }
    const ids = ['d3', 'nope', 'd1', 'd3'];
    const listed = engine.findTextsOfIdsNow?.(ids, ['id']);
    const plain = await engine.find({ id: { $in: ids } });
    expect(listed?.texts.toSorted()).toEqual(plain.map((d) => JSON.stringify(d)).toSorted());
    expect(listed?.listedRows?.map((row) => (row < 0 ? null : JSON.parse(listed.texts[row] as string).id))).toEqual(['d3', null, 'd1', 'd3']);
  });

  it('updates and removes the same objects', async () => {
    for (let i = 0; i < 150; i++) {
      // One object at most: which of several matches is "first" is the old store's hash order.
      const f = { $and: [{ id: `d${Math.floor(rnd() * 150)}` }, filter()] };
      const ops = update();
      const label = JSON.stringify({ i, f, ops }, (_k, v: unknown) => (v instanceof RegExp ? String(v) : v));
      expect(await outcome(() => engine.update(f, ops)), label).toBe(await outcome(() => old.update(f, ops)));
      if (i % 25 === 0) {
        const g = filter();
        expect(await outcome(() => engine.remove(g)), label).toBe(await outcome(() => old.remove(g)));
      }
    }
    expect(JSON.stringify(await engine.find({}))).toBe(JSON.stringify(await old.find({})));
  });
});
