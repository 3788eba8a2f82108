import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Doc } from '../../../src/store/Store.js';
import { Engine } from '../../../src/store/embedded/engine.js';
import { createEngineStore, ENGINE_FILE } from '../../../src/store/embedded/index.js';
import { killWhileWriting } from './crashHelpers.js';

describe('embedded engine', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-engine-files-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('keeps every acknowledged write when the process is killed with SIGKILL', async () => {
    await killWhileWriting(dir, 0);
  });

  it('keeps the path facts of the database when a write that grew them fails (a unique index refusing it)', async () => {
    // The refused insert would have taught the facts that `n` holds booleans; its savepoint is
    // rolled back, so the facts in memory are read again. Without that, the next boolean `n`
    // would not be written to svc_paths, and after a restart {n: 1} would match `true` too.
    let store = await createEngineStore({ dir });
    let coll = store.collection('things');
    await coll.ensureIndex({ field: 'email', unique: true });
    await coll.insert({ id: 'a', email: 'x', n: 1 });
    await expect(coll.insert({ id: 'b', email: 'x', n: true })).rejects.toMatchObject({ field: 'email' });
    await coll.insert({ id: 'c', email: 'y', n: true });
    await store.close();
    store = await createEngineStore({ dir });
    coll = store.collection('things');
    expect((await coll.find({ n: 1 })).map((d) => d.id)).toEqual(['a']);
    expect((await coll.find({ n: true })).map((d) => d.id)).toEqual(['c']);
    await store.close();
  });

  it('compares dates only with dates, and sorts by them', async () => {
    const store = await createEngineStore({ dir });
    const coll = store.collection('events');
    await coll.insert({ id: 'e1', at: new Date(2000) });
    await coll.insert({ id: 'e2', at: null });
    await coll.insert({ id: 'e3' });
    await coll.insert({ id: 'e4', at: new Date(1000) });
    await coll.insert({ id: 'e5', at: '1970-01-01T00:00:00.500Z' });
    expect((await coll.find({ at: { $lte: new Date(5000) } })).map((d) => d.id)).toEqual(['e1', 'e4']);
    expect((await coll.find({ at: new Date(1000) })).map((d) => d.id)).toEqual(['e4']);
    expect((await coll.find({ id: { $in: ['e1', 'e4'] } }, { sort: { at: -1 } })).map((d) => d.at)).toEqual([new Date(2000), new Date(1000)]);
    await store.close();
  });

  it('keeps raw U+2028, U+2029 and U+0085 inside strings', async () => {
    let store = await createEngineStore({ dir });
    const text = 'a\u2028b\u2029c\u0085d\r\ne';
    await store.collection('notes').insert({ id: 'n1', text, [`k\u2028`]: 1 });
    await store.close();
    store = await createEngineStore({ dir });
    expect(await store.collection('notes').findOne({ id: 'n1' })).toEqual({ id: 'n1', text, [`k\u2028`]: 1 });
    expect(await store.collection('notes').count({ text })).toBe(1);
    await store.close();
  });

  it('refuses property names the codec cannot keep, as the old store did', async () => {
    const store = await createEngineStore({ dir });
    const coll = store.collection('names');
    await expect(coll.insert({ id: 'x', $where: 1 })).rejects.toThrow(/\$ character/);
    await expect(coll.insert({ id: 'x', nested: { 'a.b': 1 } })).rejects.toThrow(/contain a \./);
    await expect(coll.update({ id: 'x' }, { $set: { 'a.b': 1 } })).resolves.toBeNull();
    expect(await coll.count({})).toBe(0);
    await store.close();
  });

  it('holds the data folder: a second store on it is refused until the first closes', async () => {
    const first = await createEngineStore({ dir });
    await expect(createEngineStore({ dir })).rejects.toThrow();
    await first.close();
    const second = await createEngineStore({ dir });
    await second.close();
  });

  it('renames a collection in one step, and refuses when the target holds objects', async () => {
    const store = await createEngineStore({ dir });
    await store.collection('from').ensureIndex({ field: 'n', unique: true });
    await store.collection('from').insert({ id: 'a', n: 1 });
    await store.collection('full').insert({ id: 'b' });
    await store.collection('empty').insert({ id: 'c' });
    await store.collection('empty').remove({});
    expect(await store.renameCollection?.('from', 'full')).toBe(false);
    expect(await store.renameCollection?.('from', 'empty')).toBe(true);
    expect(await store.collection('empty').find({})).toEqual([{ id: 'a', n: 1 }]);
    expect(await store.collection('from').find({})).toEqual([]);
    await expect(store.collection('empty').insert({ id: 'd', n: 1 })).rejects.toMatchObject({ field: 'n' });
    expect(await store.listCollections?.()).toEqual(['empty', 'full']);
    await store.close();
  });

  it('keeps its data in one WAL database file (durability full included)', async () => {
    const pragma = (): number => {
      const db = new DatabaseSync(join(dir, ENGINE_FILE), { readOnly: true });
      try {
        return (db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode === 'wal' ? 1 : 0;
      } finally {
        db.close();
      }
    };
    const store = await createEngineStore({ dir, durability: 'full' });
    await store.collection('x').insert({ id: 'a' });
    await store.close();
    expect(pragma()).toBe(1);
    expect((await readdir(dir)).filter((f) => f.startsWith(ENGINE_FILE))).toContain(ENGINE_FILE);
  });

  it('gives SQLite the page cache and the memory map it is told (EngineMemory), and refuses sizes out of range', async () => {
    const pragmas = (engine: Engine): unknown[] => [engine.db.prepare('PRAGMA cache_size').get(), engine.db.prepare('PRAGMA mmap_size').get()].map((r) => Object.values(r as object)[0]);
    const byDefault = new Engine(join(dir, 'a.sqlite'), 'normal');
    expect(pragmas(byDefault)).toEqual([-32 * 1024, 0]);
    await byDefault.close();
    const chosen = new Engine(join(dir, 'b.sqlite'), 'normal', { cacheMb: 8, mmapMb: 16 });
    expect(pragmas(chosen)).toEqual([-8 * 1024, 16 * 2 ** 20]);
    await chosen.close();
    for (const memory of [{ cacheMb: 0 }, { cacheMb: 1.5 }, { cacheMb: 65_537 }, { mmapMb: -1 }, { mmapMb: 2048 }, { mmapMb: Number.NaN }]) {
      expect(() => new Engine(join(dir, 'c.sqlite'), 'normal', memory), JSON.stringify(memory)).toThrow(RangeError);
    }
  });

  it('reads the database file through a memory map only when mmapMb is given', async () => {
    const mapped = async (mmapMb: number | undefined): Promise<boolean> => {
      const folder = join(dir, `m${mmapMb ?? 'default'}`);
      const options = { dir: folder, ...(mmapMb === undefined ? {} : { mmapMb }) };
      const writing = await createEngineStore(options);
      const things = writing.collection('things');
      await Promise.all(Array.from({ length: 200 }, (_, i) => things.insert({ id: `t${i}`, pad: 'x'.repeat(500) })));
      await writing.close(); // checkpointed: the rows are in the database file, no longer in the WAL
      const store = await createEngineStore(options);
      expect((await store.collection('things').find({ pad: { $ne: 'y' } })).length).toBe(200);
      const maps = await readFile('/proc/self/maps', 'utf8');
      await store.close();
      // The database file itself (its -shm is mapped in WAL mode either way).
      return maps.split('\n').some((line) => line.endsWith(` ${join(folder, ENGINE_FILE)}`));
    };
    expect(await mapped(undefined)).toBe(false);
    expect(await mapped(4)).toBe(true);
  });

  it('several stores in one process (several apps): each its own folder, database and group commit', async () => {
    const dirs = [join(dir, 'a'), join(dir, 'b'), join(dir, 'c')];
    const stores = await Promise.all(dirs.map((d) => createEngineStore({ dir: d })));
    await Promise.all(stores.map((store, s) => Promise.all(Array.from({ length: 200 }, (_, i) => store.collection('todos').insert({ id: `s${s}-${i}`, s, i })))));
    for (const [s, store] of stores.entries()) expect(await store.collection('todos').count({ s })).toBe(200);
    expect(await stores[0]?.collection('todos').count({ s: 1 })).toBe(0);
    // One closed: the others write and read on, and its folder opens again.
    await stores[1]?.close();
    await stores[0]?.collection('todos').update({ id: 's0-1' }, { $set: { i: -1 } });
    expect(await stores[2]?.collection('todos').findOne({ id: 's2-5' })).toEqual({ id: 's2-5', s: 2, i: 5 });
    const again = await createEngineStore({ dir: dirs[1] as string });
    expect(await again.collection('todos').count({})).toBe(200);
    await Promise.all([again.close(), stores[0]?.close(), stores[2]?.close()]);
  });

  it('the texts kept for GET by id follow every write: update (by id or not, refused too), remove, rename', async () => {
    const store = await createEngineStore({ dir });
    const c = store.collection('kept');
    await c.ensureIndex({ field: 'email', unique: true });
    await c.insert({ id: 'a', email: 'a@x', n: 1 });
    await c.insert({ id: 'b', email: 'b@x', n: 2 });
    expect(c.findOneJsonNow?.('a')).toBe('{"id":"a","email":"a@x","n":1}');
    await c.update({ id: 'a' }, { $inc: { n: 1 } });
    expect(c.findOneJsonNow?.('a')).toBe('{"id":"a","email":"a@x","n":2}');
    await c.update({ email: 'a@x' }, { $set: { n: 3 } });
    expect(c.findOneWithJsonNow?.('a')).toEqual({ doc: { id: 'a', email: 'a@x', n: 3 }, text: '{"id":"a","email":"a@x","n":3}' });
    // Refused (the unique index) in a group commit with an accepted one: the kept text is the stored one.
    const [refused, accepted] = await Promise.allSettled([c.update({ id: 'a' }, { $set: { email: 'b@x' } }), c.update({ id: 'b' }, { $set: { n: 20 } })]);
    expect(refused.status).toBe('rejected');
    expect(accepted.status).toBe('fulfilled');
    expect(c.findOneJsonNow?.('a')).toBe('{"id":"a","email":"a@x","n":3}');
    expect(c.findOneJsonNow?.('b')).toBe('{"id":"b","email":"b@x","n":20}');
    // A page of a list keeps its texts too: an update of one of them, by id or not, shows at once.
    const page = async (): Promise<string> => (await c.findJson?.({ n: { $gte: 0 } }, { sort: { n: 1 }, limit: 5 })) ?? '';
    expect(await page()).toBe('[{"id":"a","email":"a@x","n":3},{"id":"b","email":"b@x","n":20}]');
    await c.update({ n: 3 }, { $set: { n: 4 } });
    expect(await page()).toBe('[{"id":"a","email":"a@x","n":4},{"id":"b","email":"b@x","n":20}]');
    await c.update({ id: 'b' }, { $set: { n: 21 } });
    expect(await page()).toBe('[{"id":"a","email":"a@x","n":4},{"id":"b","email":"b@x","n":21}]');
    // The rows of a list asked again are kept until a write of any kind: an insert shows at once.
    expect(await page()).toBe(await page());
    await c.insert({ id: 'c', email: 'c@x', n: 0 });
    expect(await page()).toBe('[{"id":"c","email":"c@x","n":0},{"id":"a","email":"a@x","n":4},{"id":"b","email":"b@x","n":21}]');
    await c.insertMany?.([{ id: 'd', email: 'd@x', n: 1 }]);
    expect(JSON.parse(await page()).map((d: { id: string }) => d.id)).toEqual(['c', 'd', 'a', 'b']);
    await c.remove({ id: { $in: ['c', 'd'] } });
    await c.update({ id: 'a' }, { $set: { n: 3 } });
    await c.remove({ n: { $gt: 10 } });
    expect(await page()).toBe('[{"id":"a","email":"a@x","n":3}]');
    expect(c.findOneJsonNow?.('b')).toBeNull();
    await c.insert({ id: 'b', email: 'b2@x' });
    expect(c.findOneJsonNow?.('b')).toBe('{"id":"b","email":"b2@x"}');
    expect(await store.renameCollection?.('kept', 'moved')).toBe(true);
    expect(c.findOneJsonNow?.('a')).toBeNull();
    expect(store.collection('moved').findOneJsonNow?.('a')).toBe('{"id":"a","email":"a@x","n":3}');
    await store.collection('moved').remove({});
    expect(await store.renameCollection?.('moved', 'kept')).toBe(true);
    expect(store.collection('moved').findOneJsonNow?.('a')).toBeNull();
    expect(c.findOneJsonNow?.('a')).toBeNull();
    await store.close();
  });

  it('findOne by id alone (the kept texts) answers as a planned findOne does: dates, a copy, $fields, every write followed', async () => {
    const store = await createEngineStore({ dir });
    const c = store.collection('byid');
    await c.ensureIndex({ field: 'email', unique: true });
    const at = new Date('2026-11-29T10:00:00.000Z');
    await c.insert({ id: 'a', email: 'a@x', n: 1, at, tags: ['x'] });
    await c.insert({ id: 'b', email: 'b@x', n: 2 });
    // The same object as a filter the id lookup does not take ({id, n}: planned and run in SQL).
    const planned = async (id: string): Promise<unknown> => c.findOne({ id, n: { $exists: true } });
    for (const id of ['a', 'b']) expect(await c.findOne({ id })).toEqual(await planned(id));
    expect((await c.findOne({ id: 'a' }))?.at).toEqual(at);
    expect(await c.findOne({ id: 'a' }, { fields: { email: 1 } })).toEqual({ id: 'a', email: 'a@x' });
    const copy = (await c.findOne({ id: 'a' })) as unknown as { tags: string[] };
    copy.tags.push('changed');
    expect(await c.findOne({ id: 'a' })).toMatchObject({ tags: ['x'] });
    // Followed through updates (by id or not), one refused beside one accepted, removes and a re-insert.
    await c.update({ email: 'a@x' }, { $inc: { n: 10 } });
    expect(await c.findOne({ id: 'a' })).toMatchObject({ n: 11 });
    const [refused] = await Promise.allSettled([c.update({ id: 'a' }, { $set: { email: 'b@x' } }), c.update({ id: 'b' }, { $set: { n: 20 } })]);
    expect(refused.status).toBe('rejected');
    expect(await c.findOne({ id: 'a' })).toMatchObject({ email: 'a@x', n: 11 });
    expect(await c.findOne({ id: 'b' })).toMatchObject({ n: 20 });
    // A write queued before the read is committed first (the read waits for it).
    const write = c.update({ id: 'b' }, { $set: { n: 21 } });
    expect(await c.findOne({ id: 'b' })).toMatchObject({ n: 21 });
    await write;
    await c.remove({ n: { $gt: 15 } });
    expect(await c.findOne({ id: 'b' })).toBeNull();
    await c.insert({ id: 'b', email: 'b2@x' });
    expect(await c.findOne({ id: 'b' })).toEqual({ id: 'b', email: 'b2@x' });
    expect(await c.findOne({ id: 'none' })).toBeNull();
    expect(await store.collection('empty').findOne({ id: 'a' })).toBeNull();
    await store.close();
  });

  it('a query asked again is planned again once a write changed what the planner knows (kinds, an index, a search table)', async () => {
    const store = await createEngineStore({ dir });
    const c = store.collection('plans');
    await c.insert({ id: 'n1', flag: 1, title: 'apple' });
    // Planned while `flag` holds only numbers: no type guard; kept.
    expect((await c.find({ flag: 1 })).map((d) => d.id)).toEqual(['n1']);
    // `true` is 1 to SQLite: the kept plan would now match it too.
    await c.insert({ id: 'b1', flag: true, title: 'apple pie' });
    expect((await c.find({ flag: 1 })).map((d) => d.id)).toEqual(['n1']);
    expect(await c.count({ flag: 1 })).toBe(1);
    // Arrays on the way: the plan must leave it to the matcher.
    await c.insert({ id: 'a1', flag: [1, 2], title: 'x' });
    expect((await c.find({ flag: 1 })).map((d) => d.id)).toEqual(['n1', 'a1']);
    await c.ensureIndex({ field: 'flag' });
    expect((await c.find({ flag: 1 })).map((d) => d.id)).toEqual(['n1', 'a1']);
    // A search before and after its table is made (the matcher, then FTS5): the same answers.
    const search = { $search: { words: ['apple'], fields: ['title'] } };
    expect((await c.find(search)).map((d) => d.id)).toEqual(['n1', 'b1']);
    await c.ensureSearch?.(['title']);
    expect((await c.find(search)).map((d) => d.id).sort()).toEqual(['b1', 'n1']);
    // Values JSON would confuse are told apart: a date and its ISO text, NaN and null.
    await c.insert({ id: 'd1', at: new Date(0) });
    await c.insert({ id: 'd2', at: '1970-01-01T00:00:00.000Z' });
    expect((await c.find({ at: new Date(0) })).map((d) => d.id)).toEqual(['d1']);
    expect((await c.find({ at: '1970-01-01T00:00:00.000Z' })).map((d) => d.id)).toEqual(['d2']);
    await store.close();
  });

  it("shares one read transaction among a turn's reads: a change behind the store is seen from the next turn, a write through it at once", async () => {
    // Engine.reading: the reads of one turn of the event loop (the requests answered together)
    // take the WAL's read lock once, not once per statement. Seen from outside: another
    // connection changes a row; reads of the same turn still see the database as at the turn's
    // first read, the next turn's see the change.
    const store = await createEngineStore({ dir });
    const behind = new DatabaseSync(join(dir, ENGINE_FILE));
    const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    try {
      const todos = store.collection('todos');
      await todos.insert({ id: 't1', n: 1 });
      const tbl = (behind.prepare('SELECT tbl FROM svc_collections WHERE name = ?').get('todos') as { tbl: string }).tbl;
      const set = (n: number): void => {
        behind.prepare(`UPDATE "${tbl}" SET doc = ? WHERE id = ?`).run(JSON.stringify({ id: 't1', n }), 't1');
      };
      await nextTurn();
      expect(await todos.count({ n: 1 })).toBe(1);
      set(2);
      expect(await todos.count({ n: 2 })).toBe(0);
      expect(await todos.find({ n: { $gte: 0 } })).toEqual([{ id: 't1', n: 1 }]);
      await nextTurn();
      expect(await todos.count({ n: 2 })).toBe(1);
      // A write through the store, after a read of its turn: the group commit ends the read
      // transaction first (a BEGIN inside it would fail), and the next read sees the write.
      expect(await todos.count({ n: 2 })).toBe(1);
      await todos.update({ id: 't1' }, { $set: { n: 3 } });
      expect(await todos.count({ n: 3 })).toBe(1);
      await todos.insert({ id: 't2', n: 3 });
      expect(await todos.count({ n: 3 })).toBe(2);
      // The other connection may write meanwhile: the read transaction never holds a write lock.
      await todos.count({});
      set(5);
      await nextTurn();
      expect(await todos.count({ n: 5 })).toBe(1);
    } finally {
      behind.close();
      await store.close();
    }
  });

  it('ends the read transaction before the next group commit: a read left iterating, a read after a write was queued', async () => {
    const engine = new Engine(join(dir, 'iter.db'), 'normal');
    try {
      engine.db.exec('CREATE TABLE t (x INTEGER)');
      await engine.write(() => engine.prepare('INSERT INTO t VALUES (1), (2), (3)').run());
      engine.reading();
      const rows = engine.prepare('SELECT x FROM t ORDER BY x').iterate();
      expect(rows.next().value).toEqual([1]);
      expect(engine.db.isTransaction).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(engine.db.isTransaction).toBe(false);
      await engine.write(() => engine.prepare('INSERT INTO t VALUES (4)').run());
      expect(engine.prepare('SELECT count(*) FROM t').get()).toEqual([4]);
      // A read opened after a write was queued in the same turn: the group commit comes first
      // (its setImmediate was queued first), and ends the read transaction before its BEGIN.
      const written = engine.write(() => engine.prepare('INSERT INTO t VALUES (5)').run());
      engine.reading();
      expect(engine.prepare('SELECT count(*) FROM t').get()).toEqual([4]);
      await written;
      expect(engine.prepare('SELECT count(*) FROM t').get()).toEqual([5]);
    } finally {
      await engine.close();
    }
  });

  it("commits what a write's hooks ask for (insertAtCommit) with the write, or nothing of either", async () => {
    const store = await createEngineStore({ dir });
    try {
      const things = store.collection('things');
      const events = store.collection('events');
      await things.ensureIndex({ field: 'email', unique: true });
      const told: string[] = [];
      let failing = false;
      const hooks = {
        stored(object: Doc, before?: Doc) {
          told.push(`${String(object.id)}:${String(before?.n ?? '-')}->${String(object.n)}`);
          void events
            .insertAtCommit?.(() => {
              if (failing) throw new Error('the event cannot be written');
              return { id: `e-${String(object.id)}-${String(object.n)}`, of: object.id };
            })
            .catch(() => undefined);
        },
      };
      // One group commit: two inserts and one a unique index refuses (its hooks are not told).
      const results = await Promise.allSettled([things.insert({ id: 'a', email: 'x', n: 1 }, hooks), things.insert({ id: 'b', email: 'x', n: 1 }, hooks), things.insert({ id: 'c', email: 'y', n: 1 }, hooks)]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(told).toEqual(['a:-->1', 'c:-->1']);
      expect((await events.find({}, { sort: { id: 1 } })).map((d) => d.id)).toEqual(['e-a-1', 'e-c-1']);
      // An update's hooks have the object before it too.
      await things.update({ id: 'a' }, { $set: { n: 2 } }, undefined, hooks);
      expect(told.at(-1)).toBe('a:1->2');
      expect((await events.find({ of: 'a' }, { sort: { id: 1 } })).map((d) => d.id)).toEqual(['e-a-1', 'e-a-2']);
      // What a hook asked for fails: the whole commit fails, the writes of the batch with it.
      failing = true;
      const failed = await Promise.allSettled([things.insert({ id: 'd', email: 'z', n: 1 }, hooks), things.update({ id: 'c' }, { $set: { n: 5 } }, undefined, hooks), things.insert({ id: 'e', email: 'w', n: 1 })]);
      expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      failing = false;
      expect((await things.find({}, { sort: { id: 1 } })).map((d) => `${String(d.id)}:${String(d.n)}`)).toEqual(['a:2', 'c:1']);
      expect(await events.count({})).toBe(3);
      // Outside a write's hooks: an insert of its own.
      await events.insertAtCommit?.(() => ({ id: 'alone' }));
      expect(await events.findOne({ id: 'alone' })).toEqual({ id: 'alone' });
    } finally {
      await store.close();
    }
  });

  it("tells a remove's hooks which ids it removed, inside it: by id, by a list of ids, by any filter; what they ask for commits with it or neither", async () => {
    const store = await createEngineStore({ dir });
    try {
      const things = store.collection('removed');
      const events = store.collection('removeEvents');
      await things.ensureIndex({ field: 'kind' });
      for (const [id, kind] of [['a', 'x'], ['b', 'x'], ['c', 'y'], ['d', 'y'], ['e', 'z'], ['f', 'z']] as const) await things.insert({ id, kind, n: 1 });
      const told: string[][] = [];
      let failing = false;
      const hooks = {
        removed(ids: readonly string[]) {
          told.push([...ids].sort());
          for (const id of ids) {
            void events
              .insertAtCommit?.(() => {
                if (failing) throw new Error('the event cannot be written');
                return { id: `gone-${id}` };
              })
              .catch(() => undefined);
          }
        },
      };
      // By id (with a condition the object fails: nothing removed, an empty list told).
      expect(await things.remove({ id: 'a', kind: 'y' }, undefined, hooks)).toBe(0);
      expect(await things.remove({ id: 'a' }, undefined, hooks)).toBe(1);
      // A list of ids, one of them gone already: the ids removed, not the ids asked for.
      expect(await things.remove({ id: { $in: ['a', 'b', 'c'] } }, undefined, hooks)).toBe(2);
      // A filter the index answers exactly, and one it does not (read, then removed by seq).
      expect(await things.remove({ kind: 'y' }, undefined, hooks)).toBe(1);
      expect(told).toEqual([[], ['a'], ['b', 'c'], ['d']]);
      expect((await events.find({}, { sort: { id: 1 } })).map((d) => d.id)).toEqual(['gone-a', 'gone-b', 'gone-c', 'gone-d']);
      // What a hook asked for fails: the remove fails with it, nothing removed.
      failing = true;
      await expect(things.remove({ kind: 'z', n: { $gte: 1 } }, undefined, hooks)).rejects.toThrow('the event cannot be written');
      failing = false;
      expect((await things.find({}, { sort: { id: 1 } })).map((d) => d.id)).toEqual(['e', 'f']);
      expect(await events.count({})).toBe(4);
      expect(await things.remove({ kind: 'z', n: { $gte: 1 } }, undefined, hooks)).toBe(2);
      expect(told.at(-1)).toEqual(['e', 'f']);
    } finally {
      await store.close();
    }
  });

  it('a write whose hooks add writes to its commit waits one more turn for other writes to join that commit; one without hooks does not', async () => {
    const store = await createEngineStore({ dir });
    try {
      const things = store.collection('gathered');
      await things.insert({ id: 'first' });
      const run = async (hooked: boolean): Promise<string[]> => {
        const order: string[] = [];
        const hooks = hooked ? { stored() {} } : undefined;
        const a = things.insert({ id: `a-${String(hooked)}` }, hooks).then(() => order.push('a committed'));
        let b: Promise<unknown> = Promise.resolve();
        setImmediate(() => {
          order.push('b asked');
          b = things.insert({ id: `b-${String(hooked)}` }).then(() => order.push('b committed'));
        });
        await a;
        await new Promise((resolve) => setImmediate(resolve));
        await b;
        return order;
      };
      // Gathered: b, asked a turn later, is committed with a.
      expect(await run(true)).toEqual(['b asked', 'a committed', 'b committed']);
      expect(await run(false)).toEqual(['a committed', 'b asked', 'b committed']);
    } finally {
      await store.close();
    }
  });

  it('refuses collections once closed', async () => {
    const store = await createEngineStore({ dir });
    await store.close();
    expect(() => store.collection('late')).toThrow(/closed/);
  });
});
