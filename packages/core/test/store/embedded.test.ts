import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '../../src/store/embeddedStore.js';
import { snapshotEmbeddedStore } from '../../src/store/embeddedSnapshot.js';
import { runStoreContract } from './contract.js';
import { OPTIONAL_READS } from './contractTextReads.js';
import { TS_SOURCES_HOOK, writeUntilKilled } from '../helpers/tsChild.js';

runStoreContract(
  'embedded',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-store-'));
    return {
      open: () => createEmbeddedStore({ dir }),
      destroy: () => rm(dir, { recursive: true, force: true }),
    };
  },
  { optionalReads: OPTIONAL_READS, skips: { 'updateMany applies $set, $unset and $rename to each matching object and answers how many matched': 'optional; the files store has none (in the process, one update at a time costs no round trip)' } },
);

const storeModule = fileURLToPath(new URL('../../src/store/embeddedStore.ts', import.meta.url));

// Runs in a child node: Node strips the TypeScript types itself; the hook maps the `.js`
// specifiers of our sources to their `.ts` files. Four writers keep writes always in flight.
const writer = `${TS_SOURCES_HOOK}const { createEmbeddedStore } = await import(process.env.STORE_MODULE);
const store = await createEmbeddedStore({ dir: process.env.STORE_DIR });
const coll = store.collection('crash/test');
await coll.insert({ id: 'counter', n: 0 });
const payload = 'p'.repeat(500);
await Promise.all([0, 1, 2, 3].map(async (w) => {
  for (let i = 0; ; i++) {
    const id = 'w' + w + '-' + i;
    await coll.insert({ id, w, i, payload });
    process.stdout.write('insert ' + id + '\\n');
    const after = await coll.update({ id: 'counter' }, { $inc: { n: 1 }, $push: { seen: [id] } });
    process.stdout.write('inc ' + after.n + '\\n');
  }
}));
`;

describe('embedded store files', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-store-files-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('keeps every acknowledged write when the process is killed with SIGKILL', async () => {
    const { inserted: acknowledged, counter } = await writeUntilKilled(writer, { STORE_MODULE: storeModule, STORE_DIR: dir });
    expect(acknowledged.length).toBeGreaterThanOrEqual(400);

    const store = await createEmbeddedStore({ dir });
    const coll = store.collection('crash/test');
    const stored = new Set((await coll.find({ id: { $ne: 'counter' } }, { fields: { id: 1 } })).map((d) => d.id));
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    const after = await coll.findOne({ id: 'counter' });
    expect(after?.n).toBeGreaterThanOrEqual(counter);
    expect((after?.seen as unknown[]).length).toBe(after?.n);
    await store.close();
  });

  it('names files after collections, nested names included, inside the folder only', async () => {
    const store = await createEmbeddedStore({ dir });
    await store.collection('users').insert({ id: 'u' });
    await store.collection('a/b-c/d_e').insert({ id: 'x' });
    expect(() => store.collection('../outside')).toThrow(TypeError);
    expect(() => store.collection('Users')).toThrow(/only in case/);
    await store.close();
    expect((await readdir(dir)).sort()).toEqual(['a.b-c.d_e.db', 'users.db']);
  });

  it('compacts written collections periodically and on close', async () => {
    const lines = async (file: string): Promise<number> => (await readFile(join(dir, file), 'utf8')).split('\n').filter(Boolean).length;
    const store = await createEmbeddedStore({ dir, compactionIntervalMs: 50 });
    const coll = store.collection('counter');
    await coll.insert({ id: 'c', n: 0 });
    for (let i = 0; i < 200; i++) await coll.update({ id: 'c' }, { $inc: { n: 1 } });
    // One line for the object, one for the insertion-order index.
    await expect.poll(() => lines('counter.db'), { timeout: 5000 }).toBe(2);
    for (let i = 0; i < 50; i++) await coll.update({ id: 'c' }, { $inc: { n: 1 } });
    await store.close();
    expect(await lines('counter.db')).toBe(2);
    const reopened = await createEmbeddedStore({ dir });
    expect(await reopened.collection('counter').findOne({ id: 'c' })).toEqual({ id: 'c', n: 250 });
    await reopened.close();
  });

  it('close() waits for a compaction under way: nothing is written in the folder after it returns', async () => {
    // The timer's compaction writes `<file>~` and renames it over the file; close() used to see
    // the collection clean (the timer's run had taken the flag) and return, unlocking the folder
    // while that write went on.
    const store = await createEmbeddedStore({ dir, compactionIntervalMs: 10 });
    const coll = store.collection('big');
    const payload = 'x'.repeat(200);
    for (let i = 0; i < 40_000; i += 1000) await Promise.all(Array.from({ length: 1000 }, (_, k) => coll.insert({ id: `o${i + k}`, payload })));
    let caught = false;
    for (let attempt = 0; attempt < 200 && !caught; attempt++) {
      await coll.update({ id: 'o1' }, { $set: { n: attempt } });
      const until = Date.now() + 2000;
      while (Date.now() < until && !caught) {
        caught = (await readdir(dir)).some((f) => f.endsWith('~'));
        if (!caught) await new Promise((r) => setImmediate(r));
      }
    }
    expect(caught, 'a compaction was seen under way').toBe(true);
    await store.close();
    const after = (await readdir(dir)).sort();
    expect(after.filter((f) => f.endsWith('~'))).toEqual([]);
    await new Promise((r) => setTimeout(r, 200));
    expect((await readdir(dir)).sort()).toEqual(after);
    const reopened = await createEmbeddedStore({ dir });
    expect(await reopened.collection('big').count({})).toBe(40_000);
    await reopened.close();
  });

  // Issue 38 item 2: svc up to b68f22b appended these characters raw, and nedb's loader split
  // lines on them: one `"a\u2028b"` made the collection "corrupt" at the next start.
  it('loads a data file holding raw U+2028, U+2029 and NEL inside strings with every object intact, and writes them escaped', async () => {
    const raw = (value: unknown): string => JSON.stringify(value);
    const lines = [
      raw({ _id: 'p1', title: 'a\u2028b', __svcSeq: 1 }),
      raw({ _id: 'p2', title: 'c\u2029d', list: ['\u0085', { deep: 'e\u2028\u2029f' }], __svcSeq: 2 }),
      raw({ _id: 'p3\u2028', ['k\u0085']: 'g\r\nh', __svcSeq: 3 }),
      raw({ $$indexCreated: { fieldName: '__svcSeq', unique: false, sparse: false } }),
      raw({ $$indexCreated: { fieldName: 'title', unique: true, sparse: true } }),
      raw({ _id: 'p1', title: 'a\u2028b\u2028updated', __svcSeq: 1 }),
      raw({ _id: 'p4', title: 'gone\u2029', __svcSeq: 4 }),
      raw({ $$deleted: true, _id: 'p4' }),
    ];
    const text = `${lines.join('\n')}\n`;
    expect(text).toMatch(/[\u0085\u2028\u2029]/);
    await writeFile(join(dir, 'posts.db'), text);
    // A backup (snapshot) reads such a file whole too: its lines end at '\n' only.
    const snapshot = await snapshotEmbeddedStore(dir);
    expect(await snapshot.collections[0]?.read()).toEqual([
      { id: 'p1', title: 'a\u2028b\u2028updated' },
      { id: 'p2', title: 'c\u2029d', list: ['\u0085', { deep: 'e\u2028\u2029f' }] },
      { id: 'p3\u2028', ['k\u0085']: 'g\r\nh' },
    ]);
    await snapshot.close();
    const warnings: string[] = [];
    const store = await createEmbeddedStore({ dir, warn: (m) => warnings.push(m) });
    const posts = store.collection('posts');
    const expected = [
      { id: 'p1', title: 'a\u2028b\u2028updated' },
      { id: 'p2', title: 'c\u2029d', list: ['\u0085', { deep: 'e\u2028\u2029f' }] },
      { id: 'p3\u2028', ['k\u0085']: 'g\r\nh' },
    ];
    expect(await posts.find({})).toEqual(expected);
    expect(await posts.findOne({ id: 'p3\u2028' })).toEqual(expected[2]);
    await expect(posts.insert({ id: 'p5', title: 'c\u2029d' })).rejects.toMatchObject({ field: 'title' });
    await posts.insert({ id: 'p6', title: 'new\u2028\u0085' });
    await posts.update({ id: 'p2' }, { $push: { list: ['\u2029'] } });
    // Before the close compacts it, the appended lines are escaped already.
    const appended = (await readFile(join(dir, 'posts.db'), 'utf8')).split('\n').filter(Boolean).slice(-2);
    expect(appended.join('')).not.toMatch(/[\u0085\u2028\u2029]/);
    expect(appended.map((l) => JSON.parse(l) as unknown)).toMatchObject([{ _id: 'p6', title: 'new\u2028\u0085' }, { _id: 'p2' }]);
    await store.close();
    const compacted = await readFile(join(dir, 'posts.db'), 'utf8');
    expect(compacted).not.toMatch(/[\u0085\u2028\u2029]/);
    expect(compacted).toContain('a\\u2028b');
    const again = await createEmbeddedStore({ dir });
    expect(await again.collection('posts').find({})).toEqual([
      expected[0],
      { ...expected[1], list: ['\u0085', { deep: 'e\u2028\u2029f' }, '\u2029'] },
      expected[2],
      { id: 'p6', title: 'new\u2028\u0085' },
    ]);
    await again.close();
    expect(warnings).toEqual([]);
  });

  it('refuses collections once closed', async () => {
    const store = await createEmbeddedStore({ dir });
    await store.close();
    expect(() => store.collection('late')).toThrow(/closed/);
  });
});
