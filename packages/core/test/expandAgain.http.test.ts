import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection } from '@svc/core';
import type { StoreCollection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import { expandCollections, sameCaller, startPlainTwin, watchedCalls } from './helpers/expandApps.js';
import type { TestClient, TestServer } from './helpers/http.js';

// Issue 25, issue 39: `$expand` of one forward relation asked again and again, for objects with,
// without and with a broken reference, after each kind of change and for each caller. A list is
// spliced from the stored texts (relations/expandTexts.ts: the posts' texts read with the
// relation's values, once per list), and its answer kept with the list's kept rows: asked again
// while nothing it was made of changed, it is answered from there without reading the posts
// (CollectionReads.splicedList, keptAnswerKey). Every answer must be the plain path's (the same
// request to a server over the same store with `fastPaths: false`), byte for byte. Both stores
// (on MongoDB every answer is made from objects).

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'dev' };

/** The posts' store collection, telling the names each findTexts was asked to pick. */
function counted(inner: StoreCollection, picks: string[][]): StoreCollection {
  return watchedCalls(inner, (key, args) => {
    if (key === 'findTexts') picks.push([...(args[2] as string[])]);
  });
}

describe.each(storeKinds())('expand of one relation asked again ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let plain: TestServer;
  let anon: TestClient;
  let root: TestClient;
  const picks: string[][] = [];
  const texts = kind.name === 'embedded';
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    store = await kind.make();
    const c = expandCollections(store.store);
    const resources = (posts: StoreCollection) => [
      // `pay` is private: root reads writers' texts as stored, a visitor gets objects without it.
      c('/writers', { name: { type: 'string' }, pay: { type: 'number', private: true } }),
      c('/people', { name: { type: 'string' } }),
      new Collection({
        path: '/posts',
        properties: { title: { type: 'string' }, n: { type: 'number' }, writer: { type: 'relation', collection: '/writers' }, person: { type: 'relation', collection: '/people' } },
        store: posts,
      }),
    ];
    t = await startTestServer(store.store, resources(counted(store.store.collection('posts'), picks)));
    plain = await startPlainTwin(store.store, () => resources(store.store.collection('posts')));
    anon = t.client();
    root = { sid: undefined, headers: ROOT, request: (method, path, options = {}) => t.request(method, path, { ...options, headers: { ...options.headers, ...ROOT } }) };
    const make = async (path: string, body: object): Promise<string> => {
      const res = await t.request('POST', path, { body, headers: ROOT });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body as Obj).id;
    };
    ids.w0 = await make('/writers', { name: 'wen', pay: 1 });
    ids.w1 = await make('/writers', { name: 'wu "quoted"', pay: 2 });
    ids.ann = await make('/people', { name: 'ann' });
    ids.bob = await make('/people', { name: 'bob é' });
    for (let i = 0; i < 6; i++) ids[`p${i}`] = await make('/posts', { title: `p${i}`, n: i, writer: i % 2 === 0 ? ids.w0 : ids.w1, person: i % 3 === 0 ? ids.ann : ids.bob });
    ids.p6 = await make('/posts', { title: 'p6', n: 6, writer: null, person: null });
    ids.p7 = await make('/posts', { title: 'p7', n: 7 });
    // References the app would refuse, written under it: to nothing, and not an id.
    await store.store.collection('posts').insert({ id: 'p8', title: 'p8', n: 8, writer: 'gone', person: 'gone' });
    await store.store.collection('posts').insert({ id: 'p9', title: 'p9', n: 9, writer: '', person: 7 });
  }, 60_000);
  afterAll(async () => {
    await plain?.close();
    await t?.close();
    await store?.dispose();
  });

  const q = (query: object): string => `/posts?${encodeURIComponent(JSON.stringify(query))}`;

  /** `client`'s answer to `$expand` of `relation`, checked against the plain path's; the names the posts' findTexts calls picked. */
  async function expanded(client: TestClient, relation: string, more: object = {}): Promise<{ posts: Obj[]; picks: string[][] }> {
    const query = { $sort: { n: 1 }, $expand: [relation], ...more };
    picks.length = 0;
    const res = await client.request('GET', q(query));
    const made = [...picks];
    const objects = await sameCaller(plain, client).request('GET', q(query));
    expect(res.status, res.text).toBe(200);
    expect(objects.status, objects.text).toBe(200);
    expect(res.text).toBe(objects.text);
    return { posts: JSON.parse(res.text) as Obj[], picks: made };
  }

  const names = (posts: Obj[], relation: string): unknown[] => posts.map((p) => (p[relation] === null ? null : (p[relation] as Obj | undefined)?.name));
  const put = async (path: string, body: object): Promise<void> => {
    const res = await t.request('PUT', path, { body, headers: ROOT });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  };
  /** Spliced anew: the texts read once, with the relation's values. */
  const spliced = (relation: string): string[][] => [['id', relation]];
  /** Answered from the answer kept with the list: the posts not read. */
  const kept: string[][] = [];

  it('a list asked again is answered from the answer kept with it, for objects with, without and with a broken reference', async () => {
    const first = await expanded(anon, 'person');
    expect(names(first.posts, 'person')).toEqual(['ann', 'bob é', 'bob é', 'ann', 'bob é', 'bob é', null, undefined, null, null]);
    if (texts) expect(first.picks).toEqual(spliced('person'));
    const second = await expanded(anon, 'person');
    expect(second.posts).toEqual(first.posts);
    if (texts) expect(second.picks).toEqual(kept);
    // Another caller whose reads are the same (no rule, nothing private here): the same answer.
    if (texts) expect((await expanded(root, 'person')).picks).toEqual(kept);
    // Other options of the list are another list; another relation another answer, kept instead
    // of the first (one per list).
    if (texts) expect((await expanded(anon, 'person', { $limit: 3 })).picks).toEqual(spliced('person'));
    if (texts) expect((await expanded(root, 'writer')).picks).toEqual(spliced('writer'));
    if (texts) expect((await expanded(anon, 'person')).picks).toEqual(spliced('person'));
    if (texts) expect((await expanded(root, 'person')).picks).toEqual(kept);
  });

  it('one relation, then another, where neither reads anything', async () => {
    // The last four posts name no object either relation could read (null, none, nothing, no id):
    // `person` (p9's 7 made null) after `writer` (p9's '' made null), and back.
    const last = { $skip: 6 };
    // Root: the writers' texts are its to read as stored (a visitor's come from objects).
    for (let i = 0; i < 2; i++) await expanded(root, 'person', last);
    const writers = await expanded(root, 'writer', last);
    expect(writers.posts.map((p) => [p.writer, p.person])).toEqual([[null, null], [undefined, undefined], [null, 'gone'], [null, 7]]);
    expect((await expanded(root, 'writer', last)).posts).toEqual(writers.posts);
  });

  it('a related object changed, or a post pointed elsewhere, shows in the next list', async () => {
    await expanded(anon, 'person');
    await put(`/people/${ids.ann}`, { name: 'ann renamed' });
    const renamed = await expanded(anon, 'person');
    expect(names(renamed.posts, 'person').slice(0, 4)).toEqual(['ann renamed', 'bob é', 'bob é', 'ann renamed']);
    // One read of the texts with the values, as for every list.
    if (texts) expect(renamed.picks).toEqual(spliced('person'));
    await put(`/posts/${ids.p1}`, { person: ids.ann });
    const pointed = await expanded(anon, 'person');
    expect(names(pointed.posts, 'person').slice(0, 2)).toEqual(['ann renamed', 'ann renamed']);
    if (texts) expect(pointed.picks).toEqual(spliced('person'));
  });

  it('a related object removed under the app is null, at once', async () => {
    await expanded(anon, 'person');
    await store.store.collection('people').remove({ id: ids.bob });
    const removed = await expanded(anon, 'person');
    expect(names(removed.posts, 'person')).toEqual(['ann renamed', 'ann renamed', null, 'ann renamed', null, null, null, undefined, null, null]);
    // The people's write moved their generation: spliced anew, then kept.
    if (texts) expect(removed.picks).toEqual(spliced('person'));
    if (texts) expect((await expanded(anon, 'person')).picks).toEqual(kept);
  });

  it('a private property: root\'s answers spliced from the texts, a visitor\'s from objects, neither crossing to the other', async () => {
    let spliceRoot = true;
    for (const client of [root, root, anon, root, anon]) {
      const { posts, picks: made } = await expanded(client, 'writer');
      expect(names(posts, 'writer')).toEqual(['wen', 'wu "quoted"', 'wen', 'wu "quoted"', 'wen', 'wu "quoted"', null, undefined, null, null]);
      expect((posts[0]?.writer as Obj).pay).toBe(client === root ? 1 : undefined);
      // Root's first list spliced, then kept; the visitor's made from objects each time, never the kept one.
      if (texts) expect(made).toEqual(client === root && spliceRoot ? spliced('writer') : kept);
      if (client === root) spliceRoot = false;
    }
    await put(`/writers/${ids.w0}`, { pay: 5 });
    expect(((await expanded(root, 'writer')).posts[0]?.writer as Obj).pay).toBe(5);
    expect(((await expanded(anon, 'writer')).posts[0]?.writer as Obj).pay).toBeUndefined();
  });
});
