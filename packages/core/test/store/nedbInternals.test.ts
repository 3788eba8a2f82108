import { createRequire } from 'node:module';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The files store (embeddedStore.ts) patches nedb's private internals: its write methods
// (internal/rollbackOnFailedAppend.ts), its persistence (internal/nedbAppend.ts,
// internal/nedbLineBreaks.ts), the _id index's tree (internal/hashIdIndex.ts), and reads its
// executor, index map, index trees, model and Cursor directly. nedb is pinned to an exact version
// for that; this test is what an upgrade must pass first: every internal the patches use is
// there, of the kind and arity they call it with, and does what they assume, on a tiny datastore.

const nedbRequire = createRequire(createRequire(import.meta.url).resolve('@seald-io/nedb'));
const Datastore = nedbRequire('./index.js') as new (options: object) => Db;
const Cursor = nedbRequire('./lib/cursor.js') as new (db: Db, query: object, mapFn: (docs: Raw[]) => unknown) => PromiseLike<unknown> & Record<string, unknown>;
const model = nedbRequire('./lib/model.js') as Record<string, unknown>;

type Raw = { _id: string } & Record<string, unknown>;
type Fn = (...args: unknown[]) => unknown;
interface TreeNode {
  key?: unknown;
  data: Raw[];
  left?: TreeNode | null;
  right?: TreeNode | null;
}
interface NedbIndex {
  unique: boolean;
  tree: { tree?: TreeNode } & Record<string, unknown>;
  reset: Fn;
  insert: Fn;
  getMatching(value: unknown): Raw[];
  getAll(): Raw[];
}
type Db = Record<string, unknown> & {
  indexes: { _id: NedbIndex; [field: string]: NedbIndex | undefined };
  executor: { pushAsync<T>(task: () => Promise<T>): Promise<T> };
  persistence: Record<string, unknown> & { filename: string; inMemoryOnly: boolean; modes: { fileMode: number } };
  loadDatabaseAsync(): Promise<void>;
  insertAsync(doc: object): Promise<Raw>;
  updateAsync(query: object, update: object, options?: object): Promise<unknown>;
  removeAsync(query: object, options?: object): Promise<number>;
  ensureIndexAsync(options: object): Promise<void>;
  getAllData(): Raw[];
};

/**
 * Each function the patches call or replace, with the number of declared parameters before the
 * first default (Function.length) that nedb 4.1.2 has: a change of either is a change of shape.
 */
const DATASTORE_METHODS: readonly [string, number][] = [
  // rollbackOnFailedAppend replaces the first three and calls the others.
  ['_insertAsync', 1],
  ['_updateAsync', 3],
  ['_removeAsync', 1],
  ['_prepareDocumentForInsertion', 1],
  ['_insertInCache', 1],
  ['_addToIndexes', 1],
  ['_removeFromIndexes', 1],
  ['_updateIndexes', 2],
  ['_getCandidatesAsync', 1],
  // embeddedStore.ts
  ['getAllData', 0],
  ['ensureIndexAsync', 0],
  ['removeIndexAsync', 1],
];
const PERSISTENCE_METHODS: readonly [string, number][] = [
  // nedbAppend.ts replaces these three; nedbLineBreaks.ts the fourth.
  ['persistNewStateAsync', 1],
  ['persistCachedDatabaseAsync', 0],
  ['loadDatabaseAsync', 0],
  ['treatRawStreamAsync', 1],
];
const INDEX_METHODS: readonly [string, number][] = [
  // hashIdIndex.ts replaces reset and calls insert; embeddedStore.ts calls getMatching and getAll.
  ['reset', 1],
  ['insert', 1],
  ['getMatching', 1],
  ['getAll', 0],
];
/** What nedb's Index calls on its tree: HashTree (hashIdIndex.ts) answers each. */
const TREE_METHODS: readonly string[] = ['insert', 'delete', 'search', 'betweenBounds', 'executeOnEveryNode'];
const MODEL_FUNCTIONS: readonly [string, number][] = [
  ['deepCopy', 2],
  ['match', 2],
  ['modify', 2],
  ['getDotValue', 2],
  ['compareThings', 3],
  ['serialize', 1],
  ['deserialize', 1],
];

function arityOf(owner: object, name: string): number | string {
  const fn = (owner as Record<string, unknown>)[name];
  return typeof fn === 'function' ? fn.length : `not a function (${typeof fn})`;
}

describe('nedb internals the files store patches', () => {
  let dir: string;
  let db: Db;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-nedb-internals-'));
    db = new Datastore({ filename: join(dir, 'tiny.db') });
    await db.loadDatabaseAsync();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is the exact version packages/core pins', async () => {
    const pinned = (JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> }).dependencies['@seald-io/nedb'];
    expect(pinned, 'an exact version, no range: the patches are written against it').toMatch(/^\d+\.\d+\.\d+$/);
    expect((nedbRequire('./package.json') as { version: string }).version).toBe(pinned);
  });

  it('has each internal the patches use, of the expected kind and arity', () => {
    const shape = (owner: object, table: readonly [string, number][]) => Object.fromEntries(table.map(([name]) => [name, arityOf(owner, name)]));
    expect(shape(db, DATASTORE_METHODS)).toEqual(Object.fromEntries(DATASTORE_METHODS));
    expect(shape(db.persistence, PERSISTENCE_METHODS)).toEqual(Object.fromEntries(PERSISTENCE_METHODS));
    expect(typeof db.persistence.filename).toBe('string');
    expect(typeof db.persistence.inMemoryOnly).toBe('boolean');
    expect(typeof db.persistence.modes?.fileMode).toBe('number');
    expect(typeof db.executor?.pushAsync).toBe('function');
    expect(typeof db.indexes).toBe('object');
    const id = db.indexes._id as NedbIndex;
    expect(id, 'the _id index').toBeDefined();
    expect(shape(id, INDEX_METHODS)).toEqual(Object.fromEntries(INDEX_METHODS));
    expect(id.unique).toBe(true);
    for (const name of TREE_METHODS) expect(typeof id.tree[name], `the _id index's tree.${name}`).toBe('function');
    expect(shape(model, MODEL_FUNCTIONS)).toEqual(Object.fromEntries(MODEL_FUNCTIONS));
    expect(typeof Cursor).toBe('function');
    expect(Cursor.length).toBe(3);
  });

  it('writes through the instance\'s own _insertAsync, _updateAsync and _removeAsync, in the executor', async () => {
    // rollbackOnFailedAppend replaces them on the instance: the public methods must call them there.
    const calls: string[] = [];
    for (const name of ['_insertAsync', '_updateAsync', '_removeAsync']) {
      const original = db[name] as Fn;
      db[name] = function (this: Db, ...args: unknown[]) {
        calls.push(name);
        return original.apply(this, args);
      };
    }
    try {
      const a = await db.insertAsync({ _id: 'a', n: 1 });
      expect(a).toEqual({ _id: 'a', n: 1 });
      await db.updateAsync({ _id: 'a' }, { $set: { n: 2 } }, {});
      await db.insertAsync({ _id: 'b', n: 3 });
      expect(await db.removeAsync({ _id: 'b' }, {})).toBe(1);
    } finally {
      for (const name of ['_insertAsync', '_updateAsync', '_removeAsync']) delete db[name];
    }
    expect(calls).toEqual(['_insertAsync', '_updateAsync', '_insertAsync', '_removeAsync']);
    // The executor answers what its task answers, in order.
    const order: number[] = [];
    const answers = await Promise.all([1, 2, 3].map((n) => db.executor.pushAsync(() => (order.push(n), Promise.resolve(n * 10)))));
    expect(answers).toEqual([10, 20, 30]);
    expect(order).toEqual([1, 2, 3]);
  });

  it('keeps the cached objects in its indexes, replaced (never changed in place) by an update', async () => {
    await db.insertAsync({ _id: 'c', n: 1 });
    const cached = db.indexes._id.getMatching('c')[0] as Raw;
    expect(db.getAllData()).toContain(cached);
    // _getCandidatesAsync answers the cached objects themselves (the rollback puts them back).
    const candidates = (await (db._getCandidatesAsync as Fn).call(db, { _id: 'c' })) as Raw[];
    expect(candidates).toContain(cached);
    await db.updateAsync({ _id: 'c' }, { $set: { n: 2 } }, {});
    const updated = db.indexes._id.getMatching('c')[0] as Raw;
    expect(updated).not.toBe(cached);
    expect(cached.n).toBe(1);
    // _updateIndexes takes a list of pairs (the rollback undoes an update with the pairs swapped).
    (db._updateIndexes as Fn).call(db, [{ oldDoc: updated, newDoc: cached }]);
    expect(db.indexes._id.getMatching('c')[0]).toBe(cached);
    (db._updateIndexes as Fn).call(db, [{ oldDoc: cached, newDoc: updated }]);
    // _removeFromIndexes and _addToIndexes take one object out of and into every index.
    (db._removeFromIndexes as Fn).call(db, updated);
    expect(db.indexes._id.getMatching('c')).toEqual([]);
    (db._addToIndexes as Fn).call(db, updated);
    expect(db.indexes._id.getMatching('c')[0]).toBe(updated);
    // _prepareDocumentForInsertion copies and gives an id; _insertInCache indexes what it made.
    const prepared = (db._prepareDocumentForInsertion as Fn).call(db, { n: 9 }) as Raw;
    expect(typeof prepared._id).toBe('string');
    (db._insertInCache as Fn).call(db, prepared);
    expect(db.indexes._id.getMatching(prepared._id)[0]).toBe(prepared);
    (db._removeFromIndexes as Fn).call(db, prepared);
  });

  it('appends writes through persistNewStateAsync(docs) and rewrites the file through persistCachedDatabaseAsync on load', async () => {
    const appended: unknown[][] = [];
    const persistence = db.persistence as Record<string, unknown>;
    const append = persistence.persistNewStateAsync as Fn;
    persistence.persistNewStateAsync = (docs: unknown[]) => (appended.push(docs), append.call(persistence, docs));
    try {
      await db.insertAsync({ _id: 'd' });
      await db.removeAsync({ _id: 'd' }, {});
    } finally {
      delete persistence.persistNewStateAsync;
    }
    expect(appended).toEqual([[{ _id: 'd' }], [{ _id: 'd', $$deleted: true }]]);
    let rewrites = 0;
    const rewrite = persistence.persistCachedDatabaseAsync as Fn;
    persistence.persistCachedDatabaseAsync = () => (rewrites++, rewrite.call(persistence));
    try {
      await db.loadDatabaseAsync();
    } finally {
      delete persistence.persistCachedDatabaseAsync;
    }
    expect(rewrites).toBe(1);
  });

  it('resets the _id index through its own reset on load, and reads datafiles through treatRawStreamAsync', async () => {
    // hashIdIndex replaces reset: a load must make the tree anew through it.
    const id = db.indexes._id;
    const reset = id.reset;
    let resets = 0;
    id.reset = function (this: NedbIndex, ...args: unknown[]) {
      resets++;
      return reset.apply(this, args);
    };
    try {
      await db.loadDatabaseAsync();
    } finally {
      id.reset = reset;
    }
    expect(resets).toBeGreaterThan(0);
    const read = (await (db.persistence.treatRawStreamAsync as Fn).call(db.persistence, Readable.from(['{"_id":"x","n":1}\n{"_id":"y"}\n']))) as { data: Raw[] };
    expect(read.data).toEqual([
      { _id: 'x', n: 1 },
      { _id: 'y' },
    ]);
  });

  it('keeps an index on another field in a tree of nodes with key, data, left and right', async () => {
    // embeddedStore.ts walks that tree for sorted reads (walkIndex).
    await db.ensureIndexAsync({ fieldName: 'n' });
    const root = db.indexes.n?.tree.tree;
    expect(root).toBeDefined();
    const keys: unknown[] = [];
    const walk = (node: TreeNode | null | undefined): void => {
      if (node === null || node === undefined || !Object.hasOwn(node, 'key')) return;
      expect(Array.isArray(node.data)).toBe(true);
      walk(node.left);
      keys.push(node.key);
      walk(node.right);
    };
    walk(root);
    expect(keys.length).toBeGreaterThan(0);
    expect([...keys].sort((a, b) => (model.compareThings as (a: unknown, b: unknown) => number)(a, b))).toEqual(keys);
  });

  it('runs a Cursor in the executor and hands the matches to its mapFn', async () => {
    const cursor = new Cursor(db, { n: { $exists: true } }, (docs) => docs.map((d) => d._id));
    for (const name of ['sort', 'skip', 'limit']) expect(typeof cursor[name]).toBe('function');
    const ids = await ((cursor.sort as Fn)({ _id: 1 }) as PromiseLike<string[]>);
    expect(ids).toEqual(['a', 'c']);
  });

  it('serialises and reads back one datafile line (model.serialize, model.deserialize)', () => {
    const line = (model.serialize as Fn)({ _id: 'e', at: new Date(0) }) as string;
    expect(line).toBe('{"_id":"e","at":{"$$date":0}}');
    expect((model.deserialize as Fn)(line)).toEqual({ _id: 'e', at: new Date(0) });
  });
});
