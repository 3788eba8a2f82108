import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection } from '@svc/core';
import type { Doc, Filter, FindOptions, StoreCollection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 25: $expand reads each relation once per level, whatever the number of objects (one
// `$in` query, never one per object), on both stores. The stores are real; the wrapper only
// counts the reads that reach them.

type Obj = Record<string, unknown> & { id: string };

/** A real store collection whose finds are counted. */
function counted(inner: StoreCollection, reads: { n: number }): StoreCollection {
  return new Proxy(inner, {
    get(target, key, receiver) {
      if (key === 'find') {
        return (filter: Filter, options?: FindOptions): Promise<Doc[]> => {
          reads.n++;
          return target.find(filter, options);
        };
      }
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

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

  it('$total is a header, exposed to CORS clients; the body stays an array', async () => {
    const res = await t.request('GET', q('/posts', { $total: true, $limit: 5 }), { headers: { origin: 'http://localhost:3000' } });
    expect((res.body as Obj[]).length).toBe(5);
    expect(res.headers.get('x-total-count')).toBe('30');
    expect(res.headers.get('access-control-expose-headers')).toContain('X-Total-Count');
  });
});
