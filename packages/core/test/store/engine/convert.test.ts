import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Doc } from '../../../src/store/Store.js';
import { createEmbeddedStore } from '../../../src/store/embeddedStore.js';
import { createEngineStore, ENGINE_FILE } from '../../../src/store/embedded/index.js';
import { TS_SOURCES_HOOK } from '../../helpers/tsChild.js';

// Issue 41: an app whose data folder holds the old embedded store's files is converted to the
// engine at its first start on it: resumable after kill -9 at any point, the old files kept until
// the new database is verified (counts and a checksum per collection), then moved aside.

const storeModule = fileURLToPath(new URL('../../../src/store/embedded/index.ts', import.meta.url));

// A child node that opens the engine on a folder (converting it) and closes it (Node strips the
// types; the hook maps `.js` specifiers of our sources to their `.ts` files).
const opener = `${TS_SOURCES_HOOK}const { createEngineStore } = await import(process.env.STORE_MODULE);
const store = await createEngineStore({ dir: process.env.STORE_DIR, warn: () => undefined });
process.stdout.write('opened\\n');
await store.close();
`;

/** Runs the opener; answers the signal it died of (null: it exited) and what it printed. */
function openInChild(dir: string, env: Record<string, string> = {}, killAfterMs?: number): Promise<{ signal: NodeJS.Signals | null; code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', opener], { env: { ...process.env, STORE_MODULE: storeModule, STORE_DIR: dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ signal, code, out });
    });
  });
}

/** Old data files as svc before issue 38 wrote them: raw U+2028/U+2029/NEL, updates, deletes, a torn last line. */
function rawLines(): string {
  const line = (value: unknown): string => JSON.stringify(value);
  return (
    [
      line({ _id: 'p1', title: 'a\u2028b', __svcSeq: 1 }),
      line({ _id: 'p2', title: 'c\u2029d', list: ['\u0085', { deep: 'e\u2028\u2029f' }], at: { $$date: 86_400_000 }, __svcSeq: 2 }),
      line({ _id: 'p3\u2028', ['k\u0085']: 'g\r\nh', __svcSeq: 3 }),
      line({ $$indexCreated: { fieldName: 'title', unique: true, sparse: true } }),
      line({ _id: 'p1', title: 'a\u2028b\u2028updated', __svcSeq: 1 }),
      line({ _id: 'p4', title: 'gone\u2029', __svcSeq: 4 }),
      line({ $$deleted: true, _id: 'p4' }),
      line({ _id: 'p5', n: 5, __svcSeq: 5 }),
    ].join('\n') + '\n{"_id":"p6","tit'
  );
}
const rawExpected: Doc[] = [
  { id: 'p1', title: 'a\u2028b\u2028updated' },
  { id: 'p2', title: 'c\u2029d', list: ['\u0085', { deep: 'e\u2028\u2029f' }], at: new Date(86_400_000) },
  { id: 'p3\u2028', ['k\u0085']: 'g\r\nh' },
  { id: 'p5', n: 5 },
];

describe('conversion of the old embedded store to the engine', () => {
  let root: string;
  let dir: string;
  /** What the old store answered per collection before the conversion. */
  let expected: Map<string, Doc[]>;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-convert-'));
    dir = join(root, 'data');
    const old = await createEmbeddedStore({ dir });
    const todos = old.collection('todos');
    await todos.ensureIndex({ field: 'n' });
    // 12,000 objects: several transactions of the conversion, so that kills land between them.
    for (let i = 0; i < 12_000; i += 500) await Promise.all(Array.from({ length: 500 }, (_, k) => todos.insert({ id: `t${i + k}`, n: (i + k) % 97, title: `todo ${i + k}`, at: new Date(i + k), done: k % 3 === 0 ? true : k % 3 === 1 ? null : 0 })));
    for (let i = 0; i < 200; i++) await todos.update({ id: `t${i * 7}` }, { $set: { n: -1 }, $push: { tags: ['x'] } });
    await todos.remove({ n: 13 });
    await old.collection('shop/orders').insert({ id: 'o1', nested: { deep: { list: [1, 'two', null] } } });
    await old.collection('_sessions').insert({ id: 's1', uid: 'u1' });
    await old.collection('empty').insert({ id: 'e1' });
    await old.collection('empty').remove({});
    expected = new Map();
    for (const name of await old.listCollections?.() ?? []) expected.set(name, await old.collection(name).find({}));
    await old.close();
    await writeFile(join(dir, 'posts.db'), rawLines());
    expected.set('posts', rawExpected);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  const files = async (): Promise<string[]> => (await readdir(dir)).filter((f) => f.endsWith('.db') || f.endsWith('.db~')).sort();

  async function expectConverted(): Promise<void> {
    const warnings: string[] = [];
    const store = await createEngineStore({ dir, warn: (m) => warnings.push(m) });
    try {
      expect(await store.listCollections?.()).toEqual([...expected.keys()].sort());
      for (const [name, docs] of expected) expect(await store.collection(name).find({}), name).toEqual(docs);
      expect(await store.collection('todos').count({ n: -1 })).toBe(200);
      expect(await store.collection('todos').count({ done: null })).toBe(expected.get('todos')?.filter((d) => d.done === null).length);
    } finally {
      await store.close();
    }
    expect(await files()).toEqual([]);
    const aside = (await readdir(dir)).filter((f) => f.startsWith('old-files-'));
    expect(aside).toHaveLength(1);
    expect((await readdir(join(dir, aside[0] as string))).sort()).toEqual(['_sessions.db', 'empty.db', 'posts.db', 'shop.orders.db', 'todos.db']);
    // The raw file is moved as it was, byte for byte.
    expect(await readFile(join(dir, aside[0] as string, 'posts.db'), 'utf8')).toBe(rawLines());
  }

  it('converts every collection at the first open (order, dates, nulls, U+2028 raw, updates, deletes, a torn last line), verified, the old files moved aside', async () => {
    const warnings: string[] = [];
    const store = await createEngineStore({ dir, warn: (m) => warnings.push(m) });
    await store.close();
    expect(warnings.join('\n')).toMatch(/converted 11\d{3} objects of 5 collections .*counts and checksums verified/);
    expect(warnings.join('\n')).toMatch(/left out a torn last line \(\d+ bytes/);
    await expectConverted();
  });

  it('kill -9 at each step and at random moments: every next start goes on, and the end is the same', async () => {
    const before = new Map<string, string>();
    for (const f of await files()) before.set(f, await readFile(join(dir, f), 'utf8'));
    // After a transaction of todos twice (the second after the first resumed: 5,000 then 10,000
    // of its objects in), after all are written, then at random moments.
    for (const step of ['convert:batch:todos', 'convert:batch:todos', 'convert:written']) {
      const run = await openInChild(dir, { SVC_TEST_CRASH_AT: step });
      expect(run.signal, run.out).toBe('SIGKILL');
      // Until it is verified, the old files are there, unchanged, and there is no store.sqlite.
      for (const [f, text] of before) expect(await readFile(join(dir, f), 'utf8')).toBe(text);
      expect((await readdir(dir)).includes(ENGINE_FILE)).toBe(false);
    }
    for (let i = 0; i < 3; i++) await openInChild(dir, {}, 150 + Math.floor(Math.random() * 400));
    if (!(await readdir(dir)).includes(ENGINE_FILE)) {
      const run = await openInChild(dir, { SVC_TEST_CRASH_AT: 'convert:verified' });
      expect(run.signal, run.out).toBe('SIGKILL');
      for (const [f, text] of before) expect(await readFile(join(dir, f), 'utf8')).toBe(text);
      const renamed = await openInChild(dir, { SVC_TEST_CRASH_AT: 'convert:renamed' });
      expect(renamed.signal, renamed.out).toBe('SIGKILL');
      // Renamed into place, the old files not moved yet: the next start moves them.
      expect((await readdir(dir)).includes(ENGINE_FILE)).toBe(true);
      expect((await files()).length).toBe(5);
      const moving = await openInChild(dir, { SVC_TEST_CRASH_AT: 'convert:moved-one' });
      expect(moving.signal, moving.out).toBe('SIGKILL');
    }
    await expectConverted();
  }, 120_000);

  it('a database that does not verify against the old files is not put in place', async () => {
    const run = await openInChild(dir, { SVC_TEST_CRASH_AT: 'convert:written' });
    expect(run.signal, run.out).toBe('SIGKILL');
    // One object changed in the database being converted, behind the conversion's back.
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(join(dir, 'store.sqlite.converting'));
    const tbl = (db.prepare("SELECT tbl FROM svc_collections WHERE name = 'todos'").get() as { tbl: string }).tbl;
    db.prepare(`UPDATE ${tbl} SET doc = json_set(doc, '$.title', 'changed') WHERE id = 't5'`).run();
    db.close();
    await expect(createEngineStore({ dir, warn: () => undefined })).rejects.toThrow(/the conversion of todos\.db does not verify .*remove .*store\.sqlite\.converting/);
    expect((await readdir(dir)).includes(ENGINE_FILE)).toBe(false);
    expect(await files()).toEqual(['_sessions.db', 'empty.db', 'posts.db', 'shop.orders.db', 'todos.db']);
    await rm(join(dir, 'store.sqlite.converting'));
    await createEngineStore({ dir, warn: () => undefined }).then((s) => s.close());
    await expectConverted();
  }, 60_000);

  it('refuses a corrupt line, a folder holding old files beside a database not converted from them, and changed old files; the old store refuses store.sqlite', async () => {
    const copy = join(root, 'copy');
    await cp(dir, copy, { recursive: true });
    // A bad line in the middle: refused, naming it; nothing converted, nothing moved.
    await writeFile(join(dir, 'bad.db'), `${JSON.stringify({ _id: 'a' })}\n{"_id":\n${JSON.stringify({ _id: 'b' })}\n`);
    await expect(createEngineStore({ dir, warn: () => undefined })).rejects.toThrow(/bad\.db: line 2 is corrupt/);
    expect((await readdir(dir)).includes(ENGINE_FILE)).toBe(false);
    await rm(join(dir, 'bad.db'));
    await (await createEngineStore({ dir, warn: () => undefined })).close();
    // An old file that is not one it was converted from.
    await writeFile(join(dir, 'later.db'), `${JSON.stringify({ _id: 'x', __svcSeq: 1 })}\n`);
    await expect(createEngineStore({ dir, warn: () => undefined })).rejects.toThrow(/holds both store\.sqlite .* later\.db is not one of the files/);
    await rm(join(dir, 'later.db'));
    // A converted file put back changed (the app ran on the old files again meanwhile).
    const aside = (await readdir(dir)).find((f) => f.startsWith('old-files-')) as string;
    await writeFile(join(dir, 'todos.db'), `${await readFile(join(dir, aside, 'todos.db'), 'utf8')}${JSON.stringify({ _id: 'late', __svcSeq: 99999 })}\n`);
    await expect(createEngineStore({ dir, warn: () => undefined })).rejects.toThrow(/todos\.db changed after it was converted/);
    await rm(join(dir, 'todos.db'));
    await expect(createEmbeddedStore({ dir })).rejects.toThrow(/holds store\.sqlite, the embedded engine's database/);
    // The untouched copy converts.
    dir = copy;
    await createEngineStore({ dir, warn: () => undefined }).then((s) => s.close());
    await expectConverted();
  }, 60_000);
});
