import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runSvc } from './cli.js';
import { createEngineStore, createMongoStore } from '@svc/core';
import { exportToFile, importFile, readExport } from '../src/storeTransfer.js';
import { objectsOf } from './helpers/exportFile.js';

// Issue 23 (7): svc import refuses hostile files naming the line and writes nothing; an import
// MongoDB refuses midway is taken back out. (The moves between stores through the command line:
// reliability/store-transfer.test.ts.)

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-transfer-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function newApp(name: string): Promise<string> {
  const app = join(dir, name);
  expect((await runSvc(['create', app])).code).toBe(0);
  return app;
}

const mongo = process.env.SVC_TEST_MONGODB_URL;
if (!mongo) process.stderr.write('SKIPPED the MongoDB import test of svc export/import: SVC_TEST_MONGODB_URL is not set\n');

describe('svc export / svc import between stores', () => {
  it('refuses hostile or broken files with the line, and writes nothing', { timeout: 120_000 }, async () => {
    const app = await newApp('app');
    const file = join(dir, 'in.jsonl');
    const header = JSON.stringify({ format: 'svc-export', version: 1, store: 'embedded', exportedAt: 'then' });
    const obj = (collection: string, object: unknown): string => JSON.stringify({ collection, object });
    const end = (n: number): string => JSON.stringify({ end: true, objects: n });
    const cases: [string, string[], RegExp][] = [
      ['bad JSON', [header, obj('todos', { id: 'a' }), '{"collection": "todos", "object": {', end(1)], /line 3: not JSON/],
      ['$-key', [header, obj('todos', { id: 'a', where: { $gt: 1 } }), end(1)], /line 2: todos: "a"\.where: property name "\$gt" starts with \$/],
      ['__proto__ key', [header, `{"collection":"todos","object":{"id":"a","x":{"__proto__":{"admin":true}}}}`, end(1)], /line 2: .*"__proto__" cannot be stored/],
      ['__proto__ id', [header, obj('todos', { id: '__proto__' }), end(1)], /line 2: .*"__proto__" cannot be stored/],
      ['dotted key', [header, obj('todos', { id: 'a', 'a.b': 1 }), end(1)], /line 2: .*holds a "\."/],
      ['reserved _id', [header, obj('todos', { id: 'a', _id: 'b' }), end(1)], /line 2: .*_id is reserved/],
      ['same id twice', [header, obj('todos', { id: 'a' }), obj('todos', { id: 'a' }), end(2)], /line 3: todos: id "a" was already on line 2/],
      ['bad collection', [header, obj('../etc', { id: 'a' }), end(1)], /line 2: invalid collection name/],
      ['no id', [header, obj('todos', { title: 'x' }), end(1)], /line 2: .*no id/],
      ['too deep', [header, obj('todos', { id: 'a', x: JSON.parse('['.repeat(150) + ']'.repeat(150)) as unknown }), end(1)], /line 2: .*nested deeper than 100/],
      ['cut short', [header, obj('todos', { id: 'a' })], /without its end line: the export is cut short/],
      ['wrong count', [header, obj('todos', { id: 'a' }), end(2)], /line 3: the end line counts 2 objects, the file holds 1/],
      ['not an export', ['{"hello": 1}'], /line 1: not an svc export/],
      ['newer version', [JSON.stringify({ format: 'svc-export', version: 99 }), end(0)], /version 99 is newer/],
    ];
    for (const [what, lines, expected] of cases) {
      // The bad line comes after good ones: none of them may be written.
      await writeFile(file, `${lines.join('\n')}\n`);
      const message = await importFile(file, { kind: 'embedded', dir: join(app, 'data') }).then(
        () => 'imported',
        (err: unknown) => (err as Error).message,
      );
      expect({ what, message }).toEqual({ what, message: expect.stringMatching(expected) as unknown });
    }
    // Through the command line: one line, exit code 1.
    const cli = await runSvc(['import', app, '--from', file]);
    expect(cli).toMatchObject({ code: 1, stderr: expect.stringMatching(/^svc: .*line 1: export format version 99 is newer/) as unknown });
    await expect(importFile(join(dir, 'missing.jsonl'), { kind: 'embedded', dir: join(app, 'data') })).rejects.toThrow(/missing\.jsonl: no such file$/);
    await expect(importFile(dir, { kind: 'embedded', dir: join(app, 'data') })).rejects.toThrow(/is a folder, not an export file/);
    // A line longer than the cap is refused without being read whole.
    await writeFile(file, `${header}\n{"collection":"todos","object":{"id":"a","x":"${'x'.repeat(18 * 1024 * 1024)}"}}\n${end(1)}\n`);
    await expect(importFile(file, { kind: 'embedded', dir: join(app, 'data') })).rejects.toThrow(/line 2 is longer than \d+ bytes/);
    const empty = join(dir, 'empty.jsonl');
    expect((await runSvc(['export', app, '--out', empty])).code).toBe(0);
    expect(await objectsOf(empty)).toEqual({});
  });

  // Issue 38 item 2: exports wrote NEL, U+2028 and U+2029 raw; files so written still import whole.
  it('writes NEL, U+2028 and U+2029 escaped, and imports files holding them raw with every object', async () => {
    const odd = 'a\u2028b\u2029c\u0085d';
    const docs = [
      { id: `t1${odd}`, title: odd, list: [odd, { deep: odd }] },
      { id: 't2', [`key${odd}`]: 1 },
    ];
    const source = join(dir, 'source');
    const store = await createEngineStore({ dir: source });
    for (const doc of docs) await store.collection('todos').insert(structuredClone(doc));
    await store.close();
    const file = join(dir, 'out.jsonl');
    await exportToFile({ kind: 'embedded', dir: source }, file);
    const text = await readFile(file, 'utf8');
    expect(text).not.toMatch(/[\u0085\u2028\u2029]/);
    expect(text.trim().split(/\r\n|[\n\v\f\r\u0085\u2028\u2029]/)).toHaveLength(4);
    const read = async (f: string): Promise<unknown[]> => {
      const objects: unknown[] = [];
      await readExport(f, (o) => void objects.push(o.doc));
      return objects;
    };
    expect(await read(file)).toEqual(docs);
    // As svc up to b68f22b wrote it: the same lines with the characters raw.
    const raw = join(dir, 'raw.jsonl');
    await writeFile(raw, text.replaceAll('\\u2028', '\u2028').replaceAll('\\u2029', '\u2029').replaceAll('\\u0085', '\u0085'));
    expect(await readFile(raw, 'utf8')).toMatch(/\u2028/);
    const target = join(dir, 'target');
    expect(await importFile(raw, { kind: 'embedded', dir: target })).toMatchObject({ objects: 2 });
    const imported = await createEngineStore({ dir: target });
    expect(await imported.collection('todos').find({})).toEqual(docs);
    await imported.close();
  });

  it.skipIf(!mongo)('an import MongoDB refuses midway is taken back out: the database is as empty as before', { timeout: 60_000 }, async () => {
    const store = await createMongoStore({ url: `${(mongo as string).replace(/\/$/, '')}/svc_transfer_${randomBytes(5).toString('hex')}` });
    try {
      // The app made its unique index before (a server ran on the empty database).
      await store.collection('users').ensureIndex({ field: 'username', unique: true });
      const file = join(dir, 'dup.jsonl');
      const header = JSON.stringify({ format: 'svc-export', version: 1, store: 'embedded', exportedAt: 'then' });
      const lines = [header];
      for (let i = 0; i < 1500; i++) lines.push(JSON.stringify({ collection: 'todos', object: { id: `t${i}`, title: `todo ${i}` } }));
      lines.push(JSON.stringify({ collection: 'users', object: { id: 'u1', username: 'ada' } }));
      lines.push(JSON.stringify({ collection: 'users', object: { id: 'u2', username: 'ada' } }));
      lines.push(JSON.stringify({ end: true, objects: 1502 }));
      await writeFile(file, `${lines.join('\n')}\n`);
      await expect(importFile(file, { kind: 'store', store })).rejects.toThrow(/lines 1502-1503: users: refused: .*; the objects it had written were removed again/);
      expect(await store.collection('todos').count({})).toBe(0);
      expect(await store.collection('users').count({})).toBe(0);
    } finally {
      await store.close();
    }
  });
});
