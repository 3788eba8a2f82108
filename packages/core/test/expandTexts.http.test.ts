import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, UserCollection } from '@svc/core';
import type { StoreCollection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import { expandCollections, sameCaller, startPlainTwin, watchedCalls } from './helpers/expandApps.js';
import type { TestClient, TestServer } from './helpers/http.js';

// Issue 25: a list with `$expand` is written from the stored objects' kept JSON texts (each
// object's text with its related objects' texts spliced in) where every collection it reads shows
// the caller its objects as stored. The answer must be byte for byte the object path's: the same
// request to a twin server over the same store with `fastPaths: false`. Both stores; only the
// embedded store keeps texts, so on MongoDB both requests take the object path.
// The stores are real; the wrapper only counts which of their reads a request made.

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'dev' };

/** A real store collection whose reads are counted by kind (find: objects; findTexts: texts). */
function counted(inner: StoreCollection, reads: Record<string, number>): StoreCollection {
  return watchedCalls(inner, (key) => {
    if (key === 'find' || key === 'findTexts') reads[key] = (reads[key] ?? 0) + 1;
  });
}

describe.each(storeKinds())('expand from stored texts equals the object path ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let plain: TestServer;
  let anon: TestClient;
  let hr: TestClient;
  const postReads: Record<string, number> = {};
  const texts = kind.name === 'embedded';
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    store = await kind.make();
    const c = expandCollections(store.store);
    const resources = (posts: StoreCollection) => [
      new UserCollection({ path: '/users', properties: { name: { type: 'string' }, role: { type: 'string' } }, store: store.store.collection('users'), passwordCost: 4, loginRateLimit: { max: 1000 } }),
      // A list rule: hidden authors are absent (null) for everyone but root.
      c('/authors', { name: { type: 'string' }, bio: { type: 'string' }, meta: { type: 'object' }, hidden: { type: 'boolean' } }, { rules: { list: { hidden: { $ne: true } }, read: { hidden: { $ne: true } } } }),
      c('/editors', { name: { type: 'string' }, pay: { type: 'number', private: true } }),
      c('/reviewers', { name: { type: 'string' }, grade: { type: 'string', read: { '@me.role': 'hr' } } }, { meProperties: { role: { type: 'string' } } }),
      c('/tags', { label: { type: 'string' } }, { rules: { list: { label: { $ne: 'secret' } } } }),
      // A rule per caller: each user lists only their own notes.
      c('/notes', { text: { type: 'string' }, owner: { type: 'string' } }, { rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' } }, meProperties: { role: { type: 'string' } } }),
      new Collection({
        path: '/posts',
        properties: {
          title: { type: 'string' },
          n: { type: 'number' },
          meta: { type: 'object' },
          author: { type: 'relation', collection: '/authors' },
          editor: { type: 'relation', collection: '/editors' },
          reviewer: { type: 'relation', collection: '/reviewers' },
          owner: { type: 'relation', collection: '/users' },
          tags: { type: 'relation', collection: '/tags', many: true },
          note: { type: 'relation', collection: '/notes' },
        },
        store: posts,
      }),
      c('/comments', { text: { type: 'string' }, post: { type: 'relation', collection: '/posts' }, author: { type: 'relation', collection: '/authors' }, editor: { type: 'relation', collection: '/editors' } }),
    ];
    t = await startTestServer(store.store, resources(counted(store.store.collection('posts'), postReads)));
    plain = await startPlainTwin(store.store, () => resources(store.store.collection('posts')));
    anon = t.client();
    const make = async (path: string, body: object): Promise<string> => {
      const res = await t.request('POST', path, { body, headers: ROOT });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body as Obj).id;
    };
    ids.ann = await make('/authors', { name: 'ann "the quill" \\ é 😀', bio: 'line\nbreak', meta: { author: 'a nested key of the same name', list: [1, { x: null }] } });
    ids.bob = await make('/authors', { name: 'bob', bio: '"author":"not a key"' });
    ids.hid = await make('/authors', { name: 'hidden one', hidden: true });
    ids.ed = await make('/editors', { name: 'ed', pay: 100 });
    ids.rev = await make('/reviewers', { name: 'rev', grade: 'A' });
    ids.red = await make('/tags', { label: 'red' });
    ids.blue = await make('/tags', { label: 'blue' });
    ids.secret = await make('/tags', { label: 'secret' });
    ids.user = await make('/users', { username: 'uma', password: 'pw', name: 'uma', role: 'hr' });
    hr = t.client();
    expect((await hr.request('POST', '/users/login', { body: { username: 'uma', password: 'pw' } })).status).toBe(200);
    ids.umasNote = await make('/notes', { text: "uma's", owner: ids.user });
    ids.otherNote = await make('/notes', { text: 'someone else\'s', owner: 'someone' });
    const authors = [ids.ann, ids.bob, ids.hid, undefined];
    for (let i = 0; i < 12; i++) {
      const author = authors[i % 4];
      const post = await make('/posts', {
        title: `p${i} "quoted"`,
        n: i,
        ...(i === 11 ? { author: ids.bob } : author === undefined ? (i % 8 === 3 ? { author: null } : {}) : { author }),
        editor: ids.ed,
        reviewer: ids.rev,
        note: i % 2 === 0 ? ids.umasNote : ids.otherNote,
        owner: ids.user,
        tags: i % 3 === 0 ? [ids.blue, ids.secret, ids.red, ids.blue] : i % 3 === 1 ? [] : [ids.red],
        // A nested object whose key is a relation's name: where the relation's value is cannot be told by a search.
        ...(i === 11 ? { meta: { author: ids.bob } } : { meta: { memo: 'n' } }),
      });
      ids[`p${i}`] = post;
      if (i % 2 === 0) {
        await make('/comments', { text: `c${i}a`, post, author: ids.bob, editor: ids.ed });
        await make('/comments', { text: `c${i}b`, post, author: ids.hid });
      }
    }
  }, 60_000);
  afterAll(async () => {
    await plain?.close();
    await t?.close();
    await store?.dispose();
  });

  const q = (path: string, query: object): string => `${path}?${encodeURIComponent(JSON.stringify(query))}`;

  /** The answer to `query` on /posts, and the object path's answer to it; which store reads the first made. */
  async function both(client: TestClient, query: Record<string, unknown>, path = '/posts'): Promise<{ text: string; objects: string; reads: Record<string, number> }> {
    for (const key of Object.keys(postReads)) delete postReads[key];
    const res = await client.request('GET', q(path, query));
    const reads = { ...postReads };
    const objects = await sameCaller(plain, client).request('GET', q(path, query));
    expect(res.status, res.text).toBe(200);
    expect(objects.status, objects.text).toBe(200);
    expect(res.headers.get('content-type')).toBe(objects.headers.get('content-type'));
    return { text: res.text, objects: objects.text, reads };
  }

  const firstTwelve = { title: { $regex: '^p(\\d|10) ' }, $sort: { n: 1 } };

  it('forward relations, one and many, with null, absent, hidden and unreadable targets: the same bytes, from the texts', async () => {
    const { text, objects, reads } = await both(anon, { ...firstTwelve, $expand: ['author', 'tags'] });
    expect(text).toBe(objects);
    if (texts) expect(reads).toEqual({ findTexts: 1 });
    const posts = JSON.parse(text) as Obj[];
    expect(posts).toHaveLength(11);
    expect((posts[0]?.author as Obj).name).toBe('ann "the quill" \\ é 😀');
    expect(posts[2]?.author).toBeNull();
    expect(posts[3]?.author).toBeNull();
    expect(posts[7]?.author).toBeUndefined();
    expect((posts[0]?.tags as Obj[]).map((tag) => tag.label)).toEqual(['blue', 'red', 'blue']);
    expect(posts[1]?.tags).toEqual([]);
  });

  it('per-relation $sort and $limit, nested relations, back-relations, $skip and $limit of the list', async () => {
    for (const expand of [
      { tags: { $sort: { label: 1 }, $limit: 2 } },
      ['comments_via_post.author'],
      ['author.posts_via_author', 'comments_via_post'],
      { comments_via_post: { $sort: { text: -1 }, $limit: 1, $expand: { author: true, post: true } }, author: true },
    ]) {
      const { text, objects, reads } = await both(anon, { ...firstTwelve, $expand: expand, $skip: 1, $limit: 8 });
      expect(text, JSON.stringify(expand)).toBe(objects);
      // (A nested read of posts is counted too.)
      if (texts) expect(reads.find).toBeUndefined();
    }
    const nested = JSON.parse((await anon.request('GET', q('/posts', { ...firstTwelve, $expand: ['comments_via_post.author'] }))).text) as Obj[];
    expect((nested[0]?.comments_via_post as Obj[]).map((c) => [c.text, (c.author as Obj | null)?.name ?? null])).toEqual([['c0a', 'bob'], ['c0b', null]]);
  });

  it('a list rule per caller applies to each expanded object: each user reads only their own notes, from the texts', async () => {
    for (const client of [anon, hr]) {
      const { text, objects, reads } = await both(client, { ...firstTwelve, $expand: ['note'] });
      expect(text).toBe(objects);
      // One read of the posts' texts; the notes, rule-limited, read by id at once (issue 39).
      if (texts) expect(reads).toEqual({ findTexts: 1 });
    }
    const asUma = JSON.parse((await hr.request('GET', q('/posts', { ...firstTwelve, $expand: ['note'] }))).text) as Obj[];
    expect(asUma.slice(0, 2).map((p) => p.note)).toEqual([{ id: ids.umasNote, text: "uma's", owner: ids.user }, null]);
    const asAnon = JSON.parse((await anon.request('GET', q('/posts', { ...firstTwelve, $expand: ['note'] }))).text) as Obj[];
    expect(asAnon.every((p) => p.note === null)).toBe(true);
  });

  it('root sees hidden authors and private properties, from the texts', async () => {
    const { text, objects, reads } = await both(rootClient(), { ...firstTwelve, $expand: ['author', 'editor', 'reviewer'] });
    expect(text).toBe(objects);
    if (texts) expect(reads).toEqual({ findTexts: 1 });
    const posts = JSON.parse(text) as Obj[];
    expect((posts[2]?.author as Obj).name).toBe('hidden one');
    expect((posts[0]?.editor as Obj).pay).toBe(100);
  });

  /** A client that sends the root key with every request. */
  function rootClient(): TestClient {
    return {
      sid: undefined,
      headers: ROOT,
      request: (method, path, options = {}) => t.request(method, path, { ...options, headers: { ...options.headers, ...ROOT } }),
    };
  }

  it('what a caller may not see as stored (a private property, a property read rule, a user\'s password hash, per-relation $fields) is answered from objects, the same as before', async () => {
    for (const [client, expand] of [
      [anon, ['editor']],
      [anon, ['reviewer']],
      [hr, ['reviewer']],
      [anon, ['owner']],
      [anon, { author: { $fields: { name: 1 } } }],
      [anon, ['comments_via_post.editor']],
    ] as const) {
      const { text, objects, reads } = await both(client, { ...firstTwelve, $expand: expand });
      expect(text, JSON.stringify(expand)).toBe(objects);
      expect(reads.findTexts ?? 0).toBe(0);
    }
    const posts = JSON.parse((await anon.request('GET', q('/posts', { ...firstTwelve, $expand: ['editor', 'reviewer'] }))).text) as Obj[];
    expect(posts[0]?.editor).toEqual({ id: ids.ed, name: 'ed' });
    expect(posts[0]?.reviewer).toEqual({ id: ids.rev, name: 'rev' });
    const asHr = JSON.parse((await hr.request('GET', q('/posts', { ...firstTwelve, $expand: ['reviewer'] }))).text) as Obj[];
    expect((asHr[0]?.reviewer as Obj).grade).toBe('A');
    const rooted = JSON.parse((await rootClient().request('GET', q('/posts', { ...firstTwelve, $expand: ['editor'] }))).text) as Obj[];
    expect((rooted[0]?.editor as Obj).pay).toBe(100);
  });

  it('a text whose relation value cannot be found by a search (a nested key of the same name) is answered from objects', async () => {
    const { text, objects, reads } = await both(anon, { $sort: { n: 1 }, $expand: ['author'] });
    expect(text).toBe(objects);
    const posts = JSON.parse(text) as Obj[];
    expect(posts).toHaveLength(12);
    expect((posts[11]?.meta as Obj).author).toBe(ids.bob);
    expect((posts[11]?.author as Obj).name).toBe('bob');
    // The texts read once, then the objects.
    if (texts) expect(reads).toEqual({ findTexts: 1, find: 1 });
  });

  it('GET by id with $expand, $total, an empty list and an unknown relation answer as before', async () => {
    const one = await both(anon, { $expand: ['author', 'comments_via_post'] }, `/posts/${ids.p0}`);
    expect(one.text).toBe(one.objects);
    const total = await anon.request('GET', q('/posts', { ...firstTwelve, $expand: ['author'], $total: true, $limit: 2 }));
    expect(total.headers.get('x-total-count')).toBe('11');
    expect((total.body as Obj[]).length).toBe(2);
    const none = await both(anon, { title: 'nothing', $expand: ['author', 'nosuch'] });
    expect(none.text).toBe('[]');
    const unknown = await anon.request('GET', q('/posts', { $expand: ['nosuch'] }));
    expect(unknown.status).toBe(400);
    expect((unknown.body as { message: string }).message).toBe('$expand: posts has no relation nosuch');
  });
});
