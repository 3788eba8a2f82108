import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, UserCollection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestClient, TestServer } from './helpers/http.js';

// Issue 41: `$search` over the properties declared `"search": true`: ranked, combinable with a
// filter, $limit and count, the list rule ANDed in, refused (400) to a caller who may not read a
// searchable property (no answer may tell what it holds), bounded (words, length), and its text
// only ever words (no syntax of the store's own gets through).

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'dev' };
const q = (query: object): string => `?${encodeURIComponent(JSON.stringify(query))}`;

describe.each(storeKinds())('$search ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let alice: TestClient;
  let bob: TestClient;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    store = await kind.make();
    const users = new UserCollection({ path: '/users', properties: { role: { type: 'string' } }, store: store.store.collection('users'), passwordCost: 4, loginRateLimit: { max: 1000 } });
    const notes = new Collection({
      path: '/notes',
      properties: {
        title: { type: 'string', search: true },
        tags: { type: 'array', search: true },
        owner: { type: 'string', index: true },
        done: { type: 'boolean' },
        n: { type: 'number' },
      },
      store: store.store.collection('notes'),
      publicCount: true,
      rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' }, create: { owner: '@me.id' } },
    });
    const secrets = new Collection({
      path: '/secrets',
      properties: { title: { type: 'string', search: true }, diagnosis: { type: 'string', search: true, read: { '@me.role': 'doctor' } } },
      store: store.store.collection('secrets'),
      publicCount: true,
    });
    const plain = new Collection({ path: '/plain', properties: { title: { type: 'string' } }, store: store.store.collection('plain') });
    t = await startTestServer(store.store, [users, notes, secrets, plain]);
    const login = async (username: string, role: string): Promise<TestClient> => {
      ids[username] = ((await t.request('POST', '/users', { body: { username, password: 'pw', role }, headers: ROOT })).body as Obj).id;
      const client = t.client();
      expect((await client.request('POST', '/users/login', { body: { username, password: 'pw' } })).status).toBe(200);
      return client;
    };
    alice = await login('alice', 'writer');
    bob = await login('bob', 'doctor');
    const write = async (client: TestClient, body: Record<string, unknown>): Promise<void> => {
      expect((await client.request('POST', '/notes', { body })).status).toBe(200);
    };
    await write(alice, { title: 'Crème brûlée recipe', tags: ['dessert', 'French'], owner: ids.alice, done: false, n: 1 });
    await write(alice, { title: 'Shopping: cream, sugar', tags: ['list'], owner: ids.alice, done: true, n: 2 });
    await write(alice, { title: 'Brulee, creme: crème brûlée, CREME BRULEE again', tags: [], owner: ids.alice, done: false, n: 3 });
    await write(bob, { title: 'Bob creme brulee secret', tags: ['dessert'], owner: ids.bob, done: false, n: 4 });
    await t.request('POST', '/secrets', { body: { title: 'patient one', diagnosis: 'influenza' }, headers: ROOT });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await store?.dispose();
  });

  const titles = (res: { body: unknown }): string[] => (res.body as Obj[]).map((o) => o.title as string);

  it('finds the objects holding every word (case and accents folded), most relevant first, within the list rule', async () => {
    const res = await alice.request('GET', `/notes${q({ $search: 'CREME brulee' })}`);
    expect(res.status).toBe(200);
    // Only alice's (the rule); the one saying it three times first where the store ranks.
    expect(titles(res).sort()).toEqual(['Brulee, creme: crème brûlée, CREME BRULEE again', 'Crème brûlée recipe']);
    // Ranked where the store ranks: the embedded engine (the old store answers in insertion order,
    // FerretDB has no text index).
    if (kind.name !== 'embedded' || store.store.collection('notes').ensureSearch === undefined) return;
    expect(titles(res)[0]).toBe('Brulee, creme: crème brûlée, CREME BRULEE again');
    expect(titles(await alice.request('GET', `/notes${q({ $search: 'creme brulee', $sort: { n: 1 } })}`))).toEqual(['Crème brûlée recipe', 'Brulee, creme: crème brûlée, CREME BRULEE again']);
  });

  it('combines with filters, $limit, count, and array properties; root searches everything', async () => {
    expect(titles(await alice.request('GET', `/notes${q({ $search: 'creme', done: false, n: { $gt: 1 } })}`))).toEqual(['Brulee, creme: crème brûlée, CREME BRULEE again']);
    expect(titles(await alice.request('GET', `/notes${q({ $search: 'dessert' })}`))).toEqual(['Crème brûlée recipe']);
    expect((await alice.request('GET', `/notes${q({ $search: 'creme', $limit: 1 })}`)).body).toHaveLength(1);
    expect((await alice.request('GET', `/notes/count${q({ $search: 'creme brulee' })}`)).body).toEqual({ count: 2 });
    expect((await t.request('GET', `/notes/count${q({ $search: 'creme brulee' })}`, { headers: ROOT })).body).toEqual({ count: 3 });
    expect((await t.request('GET', `/notes${q({ $search: 'nothing-like-this' })}`, { headers: ROOT })).body).toEqual([]);
  });

  it('refuses a search over a property the caller may not read (no oracle), and one without a searchable property', async () => {
    const refused = await alice.request('GET', `/secrets${q({ $search: 'influenza' })}`);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ errors: { diagnosis: 'may not be queried' } });
    expect((await alice.request('GET', `/secrets/count${q({ $search: 'influenza' })}`)).status).toBe(400);
    expect((await alice.request('GET', `/secrets${q({ $or: [{ $search: 'influenza' }, { title: 'x' }] })}`)).status).toBe(400);
    // The doctor may read it: the search works for him.
    expect(titles(await bob.request('GET', `/secrets${q({ $search: 'influenza' })}`))).toEqual(['patient one']);
    expect((await alice.request('GET', `/plain${q({ $search: 'x' })}`)).status).toBe(400);
  });

  it('bounds a search and takes its text as words only', async () => {
    for (const bad of [{ $search: 5 }, { $search: ['a'] }, { $search: 'x'.repeat(300) }, { $search: 'a b c d e f g h i' }, { $search: 'y'.repeat(65) }]) {
      const res = await alice.request('GET', `/notes${q(bad)}`);
      expect(res.status, JSON.stringify(bad).slice(0, 60)).toBe(400);
      expect(res.body).toMatchObject({ status: 400 });
    }
    // FTS5 syntax, MongoDB's $text syntax, quotes: words, nothing else.
    for (const text of ['title: crème*', '"creme" OR -brulee', 'NEAR(creme brulee, 2)', '{title} : creme', 'creme" AND "x']) {
      const res = await alice.request('GET', `/notes${q({ $search: text })}`);
      expect(res.status, text).toBe(200);
    }
    expect((await alice.request('GET', `/notes${q({ $search: '"creme" OR -brulee' })}`)).body).toHaveLength(0);
    expect(titles(await alice.request('GET', `/notes${q({ $search: 'title: crème' })}`))).toEqual([]);
  });
});
