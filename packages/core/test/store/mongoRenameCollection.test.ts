import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { createMongoStore } from '../../src/store/mongoStore.js';
import type { Store } from '../../src/store/Store.js';

// renameCollection (issue 21, item 6): the dashboard's rename of a collection in one step on
// MongoDB/FerretDB, only when the new name holds no object; otherwise nothing changes and the
// caller moves the objects itself.

const url = process.env.SVC_TEST_MONGODB_URL;
if (!url) process.stderr.write('mongodb renameCollection test SKIPPED: set SVC_TEST_MONGODB_URL\n');
const dbName = `svc_rename_${randomBytes(5).toString('hex')}`;
const stores: Store[] = [];

afterAll(async () => {
  for (const store of stores) await store.close();
  if (!url) return;
  const client = new MongoClient(url);
  try {
    await client.db(dbName).dropDatabase();
  } finally {
    await client.close();
  }
});

describe.runIf(url)('mongodb store: renameCollection', () => {
  it('renames in one step when the new name is empty (even with an index), refuses when it holds objects', async () => {
    const store = await createMongoStore({ url: `${(url ?? '').replace(/\/$/, '')}/${dbName}` });
    stores.push(store);
    const rename = store.renameCollection?.bind(store);
    expect(rename).toBeDefined();
    if (!rename) return;
    await store.collection('a/b').ensureIndex({ field: 'name', unique: true });
    for (let i = 0; i < 10; i++) await store.collection('a/b').insert({ id: `o${i}`, name: `n${i}` });
    // An empty target with an index of its own (as a collection resource makes at start).
    await store.collection('c').ensureIndex({ field: 'other' });
    expect(await rename('a/b', 'c')).toBe(true);
    expect(await store.collection('a/b').count({})).toBe(0);
    expect(await store.collection('c').count({})).toBe(10);
    // The unique index came along.
    await expect(store.collection('c').insert({ id: 'dup', name: 'n1' })).rejects.toThrow(/duplicate/);
    // A target holding objects is left alone, and so is the source.
    await store.collection('d').insert({ id: 'x', name: 'kept' });
    expect(await rename('c', 'd')).toBe(false);
    expect(await store.collection('c').count({})).toBe(10);
    expect(await store.collection('d').count({})).toBe(1);
    // Nothing to rename: done.
    expect(await rename('missing', 'e')).toBe(true);
    await expect(rename('../x', 'e')).rejects.toThrow(TypeError);
  });
});
