import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection } from '@svc/core';
import type { Doc, Filter, FindOptions, StoreCollection, StoredTexts } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 25: $expand reads each relation once per level, whatever the number of objects (one
// `$in` query, never one per object), on both stores. The stores are real; the wrapper only
// counts the reads that reach them.

type Obj = Record<string, unknown> & { id: string };

/** A real store collection whose finds (of objects, or of their stored texts) are counted. */
function counted(inner: StoreCollection, reads: { n: number }): StoreCollection {
  return new Proxy(inner, {
    get(target, key, receiver) {
      if (key === 'find') {
        return (filter: Filter, options?: FindOptions): Promise<Doc[]> => {
          reads.n++;
          return target.find(filter, options);
        };
      }
      if (key === 'findTexts' && target.findTexts !== undefined) {
        return (filter: Filter, options: FindOptions, pick: readonly string[]): Promise<StoredTexts> => {
          reads.n++;
          return (target.findTexts as NonNullable<StoreCollection['findTexts']>).call(target, filter, options, pick);
        };
      }
      if (key === 'findTextsOfIdsNow' && target.findTextsOfIdsNow !== undefined) {
        return (ids: readonly string[], pick: readonly string[]): StoredTexts | undefined => {
          // Counted when it answers (undefined: the reader reads with findTexts).
          const found = (target.findTextsOfIdsNow as NonNullable<StoreCollection['findTextsOfIdsNow']>).call(target, ids, pick);
          if (found !== undefined) reads.n++;
          return found;
        };
      }
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A real store collection without its own aggregation (as a third-party store may be). */
function withoutAggregate(inner: StoreCollection): StoreCollection {
  return new Proxy(inner, {
    get(target, key, receiver) {
      if (key === 'aggregate') return undefined;
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe.each(storeKinds())('aggregates in the store and by reading ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  const q = (path: string, query: object): string => `${path}?${encodeURIComponent(JSON.stringify(query))}`;
  const properties = { kind: { type: 'string', index: true }, n: { type: 'number' }, tag: { type: 'string' } } as const;

  beforeAll(async () => {
    store = await kind.make();
    t = await startTestServer(store.store, [
      new Collection({ path: '/own', properties, store: store.store.collection('items') }),
      new Collection({ path: '/read', properties, store: withoutAggregate(store.store.collection('items')) }),
    ]);
    for (let i = 0; i < 30; i++) await t.request('POST', '/own', { body: { kind: `k${i % 3}`, n: i, ...(i % 2 === 0 ? { tag: i % 4 === 0 ? 'x' : 'y' } : {}) } });
  });
  afterAll(async () => {
    await t.close();
    await store.dispose();
  });

  it('the store\'s own aggregation and grouping by reading answer the same', async () => {
    const query = { $group: ['kind', 'tag'], $count: true, $sum: 'n', $avg: 'n', $min: 'n', $max: ['n', 'tag'], n: { $gte: 2 } };
    const own = await t.request('GET', q('/own/aggregate', query));
    const read = await t.request('GET', q('/read/aggregate', query));
    expect(own.status).toBe(200);
    expect(read.body).toEqual(own.body);
    const rows = own.body as { group: { kind: string; tag: string | null }; count: number; sum: { n: number } }[];
    expect(rows.map((r) => [r.group.kind, r.group.tag])).toEqual([
      ['k0', null], ['k0', 'x'], ['k0', 'y'], ['k1', null], ['k1', 'x'], ['k1', 'y'], ['k2', null], ['k2', 'x'], ['k2', 'y'],
    ]);
    expect(rows.reduce((sum, r) => sum + r.count, 0)).toBe(28);
    expect(rows.reduce((sum, r) => sum + r.sum.n, 0)).toBe((29 * 30) / 2 - 1);
    const byKind = (await t.request('GET', q('/own/aggregate', { $group: 'kind', $avg: ['n'] }))).body;
    expect(byKind).toEqual([
      { group: { kind: 'k0' }, avg: { n: 13.5 } },
      { group: { kind: 'k1' }, avg: { n: 14.5 } },
      { group: { kind: 'k2' }, avg: { n: 15.5 } },
    ]);
    expect((await t.request('GET', q('/read/aggregate', { $group: 'kind', $avg: ['n'] }))).body).toEqual(byKind);
  });
});

describe.each(storeKinds())('expand is batched ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  const userReads = { n: 0 };
  const commentReads = { n: 0 };
  const q = (path: string, query: object): string => `${path}?${encodeURIComponent(JSON.stringify(query))}`;

  beforeAll(async () => {
    store = await kind.make();
    t = await startTestServer(store.store, [
      new Collection({ path: '/users', properties: { name: { type: 'string' } }, store: counted(store.store.collection('users'), userReads) }),
      new Collection({ path: '/posts', properties: { title: { type: 'string' }, author: { type: 'relation', collection: '/users' } }, store: store.store.collection('posts') }),
      new Collection({
        path: '/comments',
        properties: { text: { type: 'string' }, post: { type: 'relation', collection: '/posts', onDelete: 'cascade' }, author: { type: 'relation', collection: '/users', onDelete: 'setNull' } },
        store: counted(store.store.collection('comments'), commentReads),
      }),
    ]);
    const users: Obj[] = [];
    for (let i = 0; i < 10; i++) users.push((await t.request('POST', '/users', { body: { name: `u${i}` } })).body as Obj);
    for (let i = 0; i < 30; i++) {
      const post = (await t.request('POST', '/posts', { body: { title: `p${i}`, author: users[i % 10]?.id } })).body as Obj;
      await t.request('POST', '/comments', { body: { text: `c${i}`, post: post.id, author: users[(i + 1) % 10]?.id } });
    }
  });
  afterAll(async () => {
    await t.close();
    await store.dispose();
  });

  it('30 posts with their authors and their comments with their authors: one read of users per level, one of comments', async () => {
    userReads.n = 0;
    commentReads.n = 0;
    const res = await t.request('GET', q('/posts', { $expand: ['author', 'comments_via_post.author'], $sort: { title: 1 } }));
    expect(res.status).toBe(200);
    const posts = res.body as Obj[];
    expect(posts).toHaveLength(30);
    for (const post of posts) {
      const n = Number((post.title as string).slice(1));
      expect((post.author as Obj).name).toBe(`u${n % 10}`);
      const comments = post.comments_via_post as Obj[];
      expect(comments.map((c) => [c.text, (c.author as Obj).name])).toEqual([[`c${n}`, `u${(n + 1) % 10}`]]);
    }
    expect({ userReads: userReads.n, commentReads: commentReads.n }).toEqual({ userReads: 2, commentReads: 1 });
  });

  it('writes racing a cascading delete leave no comment pointing at the deleted post', async () => {
    for (let round = 0; round < 5; round++) {
      const post = (await t.request('POST', '/posts', { body: { title: `racing ${round}` } })).body as Obj;
      const writes = Array.from({ length: 30 }, (_, i) => t.request('POST', '/comments', { body: { text: `r${round}-${i}`, post: post.id } }));
      const removal = t.request('DELETE', `/posts/${post.id}`);
      const statuses = (await Promise.all(writes)).map((r) => r.status);
      expect((await removal).status).toBe(204);
      // Each write either was refused (the post was gone when it checked) or is gone with the post.
      expect(statuses.every((s) => s === 200 || s === 400)).toBe(true);
      expect((await t.request('GET', q('/comments', { post: post.id }))).body).toEqual([]);
    }
  });

  it('$total is a header, exposed to CORS clients; the body stays an array', async () => {
    const res = await t.request('GET', q('/posts', { $total: true, $limit: 5 }), { headers: { origin: 'http://localhost:3000' } });
    expect((res.body as Obj[]).length).toBe(5);
    expect(res.headers.get('x-total-count')).toBe('30');
    expect(res.headers.get('access-control-expose-headers')).toContain('X-Total-Count');
  });
});
