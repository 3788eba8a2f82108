import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserCollection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import { expandCollections, sameCaller, startPlainTwin } from './helpers/expandApps.js';
import type { TestClient, TestServer } from './helpers/http.js';

// Issue 25: a list with `$expand` is spliced from the stored texts (relations/expandTexts.ts), with
// the related texts each caller's own read gives. Nothing of it may outlive a write nor cross from
// one caller to another: after every write below (the author changed, hidden by its rule, shown
// again, deleted; the post pointed elsewhere; a many relation changed) each caller's answer is the
// one its direct read gives, byte for byte the object path's (the same request to a twin server
// over the same store with `fastPaths: false`, which never splices texts). The lists are read
// twice before each write, as any kept text (the store's) would be when the write comes. Both
// stores (only the embedded store keeps texts; on MongoDB both answers are made from objects and
// must agree all the same).

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'dev' };

describe.each(storeKinds())('$expand answers after writes, per caller ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let plain: TestServer;
  let anon: TestClient;
  let uma: TestClient;
  let root: TestClient;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    store = await kind.make();
    const c = expandCollections(store.store);
    const resources = () => [
      new UserCollection({ path: '/users', properties: { name: { type: 'string' } }, store: store.store.collection('users'), passwordCost: 4, loginRateLimit: { max: 1000 } }),
      // Hidden authors are listed to their owner only (and root).
      c('/authors', { name: { type: 'string' }, hidden: { type: 'boolean' }, owner: { type: 'string' } }, {
        rules: { list: { $or: [{ hidden: { $ne: true } }, { owner: '@me.id' }] }, read: { $or: [{ hidden: { $ne: true } }, { owner: '@me.id' }] } },
      }),
      c('/tags', { label: { type: 'string' } }),
      // `pay` is private: root's answers are spliced from the texts, everyone else's made from objects.
      c('/editors', { name: { type: 'string' }, pay: { type: 'number', private: true } }),
      c('/posts', {
        title: { type: 'string' },
        n: { type: 'number' },
        author: { type: 'relation', collection: '/authors', onDelete: 'setNull' },
        tags: { type: 'relation', collection: '/tags', many: true, onDelete: 'setNull' },
        editor: { type: 'relation', collection: '/editors', onDelete: 'setNull' },
      }),
    ];
    t = await startTestServer(store.store, resources());
    plain = await startPlainTwin(store.store, resources);
    const make = async (path: string, body: object): Promise<string> => {
      const res = await t.request('POST', path, { body, headers: ROOT });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body as Obj).id;
    };
    ids.uma = await make('/users', { username: 'uma', password: 'pw', name: 'uma' });
    anon = t.client();
    uma = t.client();
    expect((await uma.request('POST', '/users/login', { body: { username: 'uma', password: 'pw' } })).status).toBe(200);
    root = { sid: undefined, headers: ROOT, request: (method, path, options = {}) => t.request(method, path, { ...options, headers: { ...options.headers, ...ROOT } }) };
    ids.ann = await make('/authors', { name: 'ann', owner: ids.uma });
    ids.bob = await make('/authors', { name: 'bob', owner: 'someone' });
    ids.cat = await make('/authors', { name: 'cat', owner: ids.uma, hidden: true });
    ids.ed = await make('/editors', { name: 'ed', pay: 10 });
    ids.red = await make('/tags', { label: 'red' });
    ids.blue = await make('/tags', { label: 'blue' });
    for (let i = 0; i < 6; i++) ids[`p${i}`] = await make('/posts', { title: `p${i}`, n: i, author: i % 2 === 0 ? ids.ann : ids.bob, tags: i % 3 === 0 ? [ids.red, ids.blue] : [ids.blue], editor: ids.ed });
    // One more, by the hidden author: its owner and root see her, a visitor sees null.
    ids.p6 = await make('/posts', { title: 'p6', n: 6, author: ids.cat });
  }, 60_000);
  afterAll(async () => {
    await plain?.close();
    await t?.close();
    await store?.dispose();
  });

  const q = (query: object): string => `/posts?${encodeURIComponent(JSON.stringify(query))}`;
  const EXPAND = { $sort: { n: 1 }, $expand: ['author', 'tags'] };

  /** The expanded list `client` gets (asked twice: the second answer must be the first's), checked against its object path. */
  async function expanded(client: TestClient): Promise<Obj[]> {
    const first = await client.request('GET', q(EXPAND));
    const again = await client.request('GET', q(EXPAND));
    const objects = await sameCaller(plain, client).request('GET', q(EXPAND));
    expect(first.status, first.text).toBe(200);
    expect(objects.status, objects.text).toBe(200);
    expect(again.text).toBe(first.text);
    expect(first.text).toBe(objects.text);
    return JSON.parse(first.text) as Obj[];
  }

  const names = (posts: Obj[]): unknown[] => posts.map((p) => (p.author === null ? null : (p.author as Obj | undefined)?.name));
  const put = async (path: string, body: object): Promise<void> => {
    const res = await t.request('PUT', path, { body, headers: ROOT });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  };

  it('each caller gets what its direct read shows, whoever read the list before', async () => {
    // Root, then a visitor, then the owner, then root again: each answer is that caller's.
    for (const client of [root, anon, uma, root, anon, uma]) {
      const posts = await expanded(client);
      expect(names(posts)).toEqual(['ann', 'bob', 'ann', 'bob', 'ann', 'bob', client === anon ? null : 'cat']);
    }
    // A private property: root's, never carried over to the others' answers.
    const withEditor = { $sort: { n: 1 }, $expand: ['editor'] };
    for (const client of [root, anon, uma, root, anon]) {
      const res = await client.request('GET', q(withEditor));
      expect(res.text).toBe((await sameCaller(plain, client).request('GET', q(withEditor))).text);
      expect(((res.body as Obj[])[0]?.editor as Obj).pay).toBe(client === root ? 10 : undefined);
    }
  });

  it('an author renamed appears renamed in the next list, for every caller', async () => {
    for (const client of [root, anon, uma]) await expanded(client);
    await put(`/authors/${ids.ann}`, { name: 'ann renamed' });
    for (const client of [root, anon, uma]) expect(names(await expanded(client)).slice(0, 6)).toEqual(['ann renamed', 'bob', 'ann renamed', 'bob', 'ann renamed', 'bob']);
  });

  it('an author the rule comes to hide is null to those it hides from, and back once shown again', async () => {
    for (const client of [root, anon, uma]) await expanded(client);
    await put(`/authors/${ids.ann}`, { hidden: true });
    expect(names(await expanded(anon))).toEqual([null, 'bob', null, 'bob', null, 'bob', null]);
    // Its owner and root still see it, with `hidden` now in the text.
    const asUma = await expanded(uma);
    expect(names(asUma)).toEqual(['ann renamed', 'bob', 'ann renamed', 'bob', 'ann renamed', 'bob', 'cat']);
    expect((asUma[0]?.author as Obj).hidden).toBe(true);
    expect(names(await expanded(root))).toEqual(names(asUma));
    expect(names(await expanded(anon))).toEqual([null, 'bob', null, 'bob', null, 'bob', null]);
    await put(`/authors/${ids.ann}`, { hidden: false });
    for (const client of [anon, uma, root]) expect(names(await expanded(client)).slice(0, 6)).toEqual(['ann renamed', 'bob', 'ann renamed', 'bob', 'ann renamed', 'bob']);
  });

  it('a post pointed at another author, and a many relation changed, appear changed', async () => {
    for (const client of [root, anon]) await expanded(client);
    await put(`/posts/${ids.p0}`, { author: ids.bob, tags: [ids.blue, ids.red] });
    for (const client of [root, anon]) {
      const posts = await expanded(client);
      expect(names(posts)[0]).toBe('bob');
      expect((posts[0]?.tags as Obj[]).map((tag) => tag.label)).toEqual(['blue', 'red']);
    }
    await put(`/tags/${ids.blue}`, { label: 'navy' });
    expect(((await expanded(anon))[0]?.tags as Obj[]).map((tag) => tag.label)).toEqual(['navy', 'red']);
  });

  it('an author deleted is gone from every list (setNull), and one removed under the store is null', async () => {
    for (const client of [root, anon]) await expanded(client);
    const res = await t.request('DELETE', `/authors/${ids.bob}`, { headers: ROOT });
    expect(res.status, res.text).toBe(204);
    for (const client of [root, anon]) expect(names(await expanded(client)).slice(0, 6)).toEqual([null, null, 'ann renamed', null, 'ann renamed', null]);
    // A reference left pointing at nothing (the store written to directly): null, as a direct read finds nothing.
    await put(`/posts/${ids.p1}`, { author: ids.ann });
    for (const client of [root, anon]) await expanded(client);
    await store.store.collection('authors').remove({ id: ids.ann });
    for (const client of [root, anon, uma]) expect(names(await expanded(client))).toEqual([null, null, null, null, null, null, client === anon ? null : 'cat']);
  });
});
