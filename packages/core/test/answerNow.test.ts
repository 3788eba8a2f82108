import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, createEmbeddedStore, UserCollection } from '@svc/core';
import type { CollectionEventRunner, Store } from '@svc/core';

/** What the server tells answerNow of an anonymous visitor's plain GET. */
const plainGet = (): { plainAnonymous: boolean; plan: string | undefined } => ({ plainAnonymous: true, plan: undefined });

// Issue 14: Collection.answerNow is the server's synchronous answer to GET /<c>/<id> (no context,
// no promise turns). It gives the stored JSON text only when nothing could change the answer, and
// undefined otherwise (the HTTP equivalence is in apps/server/test/get-by-id-now.test.ts).

let dir: string;
let store: Store;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-now-'));
  store = await createEmbeddedStore({ dir });
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** Events that only say which scripts exist (answerNow never runs one: it steps aside). */
const eventsFor = (names: string[]): CollectionEventRunner => ({
  has: (event) => names.includes(event),
  run: () => Promise.reject(new Error('answerNow ran a script')),
  runGetBatch: () => Promise.reject(new Error('answerNow ran a script')),
});

describe('Collection.answerNow', () => {
  it('answers the stored JSON text of an object by id, the same text findOneJson gives', async () => {
    const coll = store.collection('plain');
    const todos = new Collection({ path: '/plain', properties: { title: { type: 'string' } }, store: coll });
    const stored = await coll.insert({ id: 'a1', title: 'x "quoted" ü' });
    const text = todos.answerNow(['a1'], plainGet());
    expect(text).toBe(await coll.findOneJson?.('a1'));
    expect(JSON.parse(text as string)).toEqual(stored);
  });

  it('tests a read rule on the text as for an anonymous visitor; steps aside for property read rules (issue 24)', async () => {
    const coll = store.collection('ruled');
    const props = { title: { type: 'string' as const }, published: { type: 'boolean' as const }, owner: { type: 'string' as const } };
    await coll.insert({ id: 'pub', title: 'p', published: true, owner: 'u1' });
    await coll.insert({ id: 'draft', title: 'd', published: false, owner: 'u1' });
    const published = new Collection({ path: '/ruled', properties: props, store: coll, rules: { read: { $or: [{ published: true }, { owner: '@me.id' }] } } });
    expect(published.answerNow(['pub'], plainGet())).toBe(await coll.findOneJson?.('pub'));
    expect(published.answerNow(['draft'], plainGet())).toBeUndefined();
    const owned = new Collection({ path: '/ruled', properties: props, store: coll, rules: { read: { owner: '@me.id' } } });
    expect(owned.answerNow(['pub'], plainGet())).toBeUndefined();
    const queried = new Collection({ path: '/ruled', properties: props, store: coll, rules: { read: { id: '@query.id' } } });
    expect(queried.answerNow(['pub'], plainGet())).toBe(await coll.findOneJson?.('pub'));
    const propertyRule = new Collection({ path: '/ruled', properties: { ...props, owner: { type: 'string', read: false } }, store: coll });
    expect(propertyRule.answerNow(['pub'], plainGet())).toBeUndefined();
  });

  it('steps aside for anything but one existing id: the list, count, empty, deeper paths, unknown ids', async () => {
    const coll = store.collection('aside');
    const todos = new Collection({ path: '/aside', properties: { title: { type: 'string' } }, store: coll });
    await coll.insert({ id: 'count', title: 'shadowed by /count' });
    await coll.insert({ id: 'b1', title: 'b' });
    for (const parts of [[], [''], ['count'], ['b1', 'x'], ['missing'], ['__proto__'], ['constructor']]) {
      expect(todos.answerNow(parts, plainGet())).toBeUndefined();
    }
  });

  it('steps aside when a script would run (On Get, On BeforeRequest), for private properties and for users', async () => {
    const coll = store.collection('scripted');
    await coll.insert({ id: 'c1', title: 'c' });
    const properties = { title: { type: 'string' as const } };
    expect(new Collection({ path: '/s', properties, store: coll, events: eventsFor(['get']) }).answerNow(['c1'], plainGet())).toBeUndefined();
    expect(new Collection({ path: '/s', properties, store: coll, events: eventsFor(['beforerequest']) }).answerNow(['c1'], plainGet())).toBeUndefined();
    expect(new Collection({ path: '/s', properties, store: coll, events: eventsFor(['post', 'put', 'validate']) }).answerNow(['c1'], plainGet())).toBeDefined();
    const withPrivate = { title: { type: 'string' as const }, plans: { type: 'string' as const, private: true } };
    expect(new Collection({ path: '/s', properties: withPrivate, store: coll }).answerNow(['c1'], plainGet())).toBeUndefined();
    const users = store.collection('users');
    await users.insert({ id: 'u1', username: 'ann', password: 'hash' });
    expect(new UserCollection({ path: '/users', properties: {}, store: users, passwordCost: 4 }).answerNow(['u1'], plainGet())).toBeUndefined();
  });
});
