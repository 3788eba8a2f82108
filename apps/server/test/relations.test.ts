import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 25: relation properties (checked on write, onDelete), $expand (forward, back-relations,
// nested, per-relation options), filters across one relation, $total and aggregates, on both
// stores, with real event scripts: every expanded object is read through its own collection's
// read path (private properties, On Get), as a direct read by the same caller.

type Obj = Record<string, unknown> & { id: string };

export const relationFiles = {
  'app.json': { relations: { maxExpanded: 40 }, aggregate: { maxGroups: 6, maxScanned: 60 } },
  'resources/users/config.json': {
    type: 'UserCollection',
    properties: { name: { type: 'string' }, secret: { type: 'string', private: true } },
  },
  // On Get: a ghost is never shown; everyone else gets a computed property (shows the script ran).
  'resources/users/get.js': "if (this.name === 'ghost') cancel('gone', 404);\nthis.initial = (this.name || '?').charAt(0);\n",
  'resources/tags/config.json': { type: 'Collection', properties: { label: { type: 'string' } } },
  'resources/posts/config.json': {
    type: 'Collection',
    properties: {
      title: { type: 'string' },
      author: { type: 'relation', collection: 'users', onDelete: 'restrict' },
      tags: { type: 'relation', collection: 'tags', many: true, onDelete: 'setNull' },
      likes: { type: 'number', index: true },
      status: { type: 'string', index: true },
      notes: { type: 'string', private: true },
    },
  },
  'resources/comments/config.json': {
    type: 'Collection',
    properties: {
      text: { type: 'string' },
      post: { type: 'relation', collection: 'posts', onDelete: 'cascade' },
      author: { type: 'relation', collection: 'users', onDelete: 'setNull' },
    },
  },
  'resources/votes/config.json': {
    type: 'Collection',
    properties: { comment: { type: 'relation', collection: 'comments', onDelete: 'cascade' } },
  },
  // A script reading through svc with $expand: the internal call takes the same path.
  'resources/digests/config.json': { type: 'Collection', properties: { of: { type: 'string' }, by: { type: 'string' }, count: { type: 'number' } } },
  'resources/digests/post.js':
    "var p = await svc.posts.get({ id: this.of, $expand: ['author', 'comments_via_post'] });\nthis.by = p.author ? p.author.name : 'nobody';\nthis.count = p.comments_via_post.length;\n",
};

const q = (path: string, query: object): string => `${path}?${encodeURIComponent(JSON.stringify(query))}`;

/** The start error of an app made of `files`, with the app folder written as <app>; 'started' when it starts. */
async function startOutcome(files: Record<string, string | object>): Promise<string> {
  try {
    const app = await runApp({ 'resources/todos/config.json': { type: 'Collection', properties: {} }, ...files });
    await app.close();
    return 'started';
  } catch (err) {
    return (err as Error).message;
  }
}

describe('relation properties at start', () => {
  it('a relation to a collection the app does not have stops the start, naming the file and the property', async () => {
    const outcome = await startOutcome({ 'resources/posts/config.json': { type: 'Collection', properties: { author: { type: 'relation', collection: 'people' } } } });
    expect(outcome).toContain('resources/posts/config.json: property author is a relation to "people", which is no Collection or UserCollection of this app');
  });

  it('a relation without collection, or with an unknown onDelete, stops the start', async () => {
    expect(await startOutcome({ 'resources/posts/config.json': { type: 'Collection', properties: { author: { type: 'relation' } } } })).toContain('resources/posts/config.json: property author: a relation needs "collection"');
    expect(await startOutcome({ 'resources/posts/config.json': { type: 'Collection', properties: { author: { type: 'relation', collection: 'todos', onDelete: 'explode' } } } })).toContain(
      'property author: "onDelete" must be',
    );
    expect(await startOutcome({ 'resources/posts/config.json': { type: 'Collection', properties: { author: { type: 'relation', collection: 'todos' } } } })).toBe('started');
  });
});

describe('app.json relations.expandDepth', () => {
  it('raises the levels $expand may go, up to the hard cap of 4', async () => {
    expect(await startOutcome({ 'app.json': { relations: { expandDepth: 5 } } })).toContain('relations.expandDepth');
    const t = await runApp({ ...relationFiles, 'app.json': { relations: { expandDepth: 3 } } });
    try {
      const ann = (await t.request('POST', '/users', { username: 'ann', password: 'pw-123456', name: 'ann' })).body as Obj;
      const p = (await t.request('POST', '/posts', { title: 'p', author: ann.id })).body as Obj;
      await t.request('POST', '/comments', { text: 'c', post: p.id, author: ann.id });
      const three = await t.request('GET', q(`/posts/${p.id}`, { $expand: ['comments_via_post.author.posts_via_author'] }));
      expect(three.status).toBe(200);
      const comment = (three.body as { comments_via_post: Obj[] }).comments_via_post[0] as Obj;
      expect(((comment.author as Obj).posts_via_author as Obj[]).map((x) => x.title)).toEqual(['p']);
      expect((await t.request('GET', q(`/posts/${p.id}`, { $expand: ['comments_via_post.author.posts_via_author.author'] }))).status).toBe(400);
    } finally {
      await t.close();
    }
  });
});

describe.each(appStores())('relations (%s store)', { concurrent: true }, (store) => {
  // The stores side by side (their apps are apart); each store's tests one at a time, in order.
  describe('one test at a time', { concurrent: false }, () => {
    let t: AppHandle;
    const root = { 'svc-ssh-key': 'any' };
    const users: Record<string, Obj> = {};
    const tags: Record<string, Obj> = {};
    let post1: Obj;
    let post2: Obj;
    let post3: Obj;

    const post = async (path: string, body: object, headers?: Record<string, string>): Promise<Obj> => {
      const res = await t.request('POST', path, body, headers);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body as Obj;
    };

    beforeAll(async () => {
      t = await runApp(relationFiles, { store });
      for (const name of ['ann', 'bob', 'cal', 'ghost']) users[name] = await post('/users', { username: name, password: 'pw-123456', name, secret: `${name}'s secret` });
      for (const label of ['red', 'blue']) tags[label] = await post('/tags', { label });
      post1 = await post('/posts', { title: 'one', author: users.ann?.id, tags: [tags.red?.id, tags.blue?.id], likes: 3, status: 'draft', notes: 'n1' });
      post2 = await post('/posts', { title: 'two', author: users.ann?.id, tags: [tags.blue?.id], likes: 5, status: 'live' });
      post3 = await post('/posts', { title: 'three', author: users.bob?.id, likes: 7, status: 'live' });
      await post('/comments', { text: 'c1', post: post1.id, author: users.bob?.id });
      await post('/comments', { text: 'c2', post: post1.id, author: users.cal?.id });
      await post('/comments', { text: 'c3', post: post2.id, author: users.ann?.id });
    }, 60_000);
    afterAll(async () => {
      await t?.close();
    });

    describe('on write', () => {
      it('an id that names no object answers 400 naming the property; so does one the writer may not read (On Get hides it)', async () => {
        for (const author of ['0123456789abcdef', users.ghost?.id]) {
          const res = await t.request('POST', '/posts', { title: 'x', author });
          expect(res.status).toBe(400);
          expect(res.body).toEqual({ status: 400, statusCode: 400, errors: { author: 'points to an object that does not exist' } });
        }
      });

      it('a value that is no id (or no array of ids for many) answers 400 naming the property', async () => {
        expect((await t.request('POST', '/posts', { title: 'x', author: 12 })).body).toMatchObject({ errors: { author: 'must be an id' } });
        expect((await t.request('POST', '/posts', { title: 'x', tags: tags.red?.id })).body).toMatchObject({ errors: { tags: 'must be an array of ids' } });
        expect((await t.request('POST', '/posts', { title: 'x', tags: [tags.red?.id, 'nope'] })).body).toMatchObject({ errors: { tags: 'points to an object that does not exist' } });
      });

      it('an update checks the ids it adds; stored ids and null pass', async () => {
        expect((await t.request('PUT', `/posts/${post3.id}`, { author: '0123456789abcdef' })).status).toBe(400);
        expect((await t.request('PUT', `/posts/${post3.id}`, { title: 'three' })).status).toBe(200);
        expect((await t.request('PUT', `/posts/${post3.id}`, { tags: { $push: tags.red?.id } })).body).toMatchObject({ tags: [tags.red?.id] });
        expect((await t.request('PUT', `/posts/${post3.id}`, { tags: { $push: 'fedcba9876543210' } })).status).toBe(400);
        expect((await t.request('PUT', `/posts/${post3.id}`, { tags: null })).status).toBe(200);
      });
    });

    describe('$expand', () => {
      it('expands a relation of an object read by id: the related object as a direct read shows it (On Get ran, no private property)', async () => {
        const res = await t.request('GET', `/posts/${post1.id}?$expand=author,tags`);
        expect(res.status).toBe(200);
        const body = res.body as Obj;
        expect(body.author).toEqual({ id: users.ann?.id, username: 'ann', name: 'ann', initial: 'a' });
        expect((body.tags as Obj[]).map((tag) => tag.label)).toEqual(['red', 'blue']);
        expect(body).not.toHaveProperty('notes');
      });

      it('expands in lists (one read per relation), in the JSON and array forms', async () => {
        const list = (await t.request('GET', q('/posts', { $expand: ['author'], $sort: { likes: 1 } }))).body as Obj[];
        expect(list.map((p) => (p.author as Obj).name)).toEqual(['ann', 'ann', 'bob']);
        expect(list.every((p) => !('secret' in (p.author as Obj)))).toBe(true);
      });

      it('root sees private properties of expanded objects, as in a direct read', async () => {
        const body = (await t.request('GET', `/posts/${post1.id}?$expand=author`, undefined, root)).body as Obj;
        expect((body.author as Obj).secret).toBe("ann's secret");
      });

      it('an object the caller may not read is null (many: left out), never an error', async () => {
        const hidden = await post('/posts', { title: 'by ghost', author: users.cal?.id });
        // Renamed to ghost after the write: On Get hides it from now on.
        expect((await t.request('PUT', `/users/${users.cal?.id}`, { name: 'ghost' }, root)).status).toBe(200);
        try {
          const body = (await t.request('GET', `/posts/${hidden.id}?$expand=author`)).body as Obj;
          expect(body.author).toBeNull();
        } finally {
          await t.request('PUT', `/users/${users.cal?.id}`, { name: 'cal' }, root);
          await t.request('DELETE', `/posts/${hidden.id}`, undefined, root);
        }
      });

      it('back-relations (<collection>_via_<property>) and nested levels', async () => {
        const body = (await t.request('GET', q(`/posts/${post1.id}`, { $expand: ['comments_via_post.author'] }))).body as Obj;
        const comments = body.comments_via_post as Obj[];
        expect(comments.map((c) => c.text).sort()).toEqual(['c1', 'c2']);
        expect(comments.map((c) => (c.author as Obj).name).sort()).toEqual(['bob', 'cal']);
        const list = (await t.request('GET', q('/users', { name: 'ann', $expand: 'posts_via_author' }))).body as Obj[];
        expect((list[0]?.posts_via_author as Obj[]).map((p) => p.title).sort()).toEqual(['one', 'two']);
      });

      it('per-relation $fields, $sort and $limit (object form)', async () => {
        const body = (await t.request('GET', q(`/posts/${post1.id}`, { $expand: { comments_via_post: { $fields: { text: 1 }, $sort: { text: -1 }, $limit: 1 }, author: { $fields: { name: 1 } } } }))).body as Obj;
        expect(body.comments_via_post).toEqual([{ id: expect.any(String), text: 'c2', post: post1.id }]);
        expect(body.author).toEqual({ id: users.ann?.id, name: 'ann', initial: 'a' });
      });

      it('more levels than allowed, an unknown relation or too many objects answer 400/413', async () => {
        const deep = await t.request('GET', q('/posts', { $expand: ['comments_via_post.post.author'] }));
        expect(deep.status).toBe(400);
        expect((deep.body as { message: string }).message).toContain('at most 2');
        expect((await t.request('GET', q('/posts', { $expand: ['title'] }))).status).toBe(400);
        expect((await t.request('GET', q('/posts', { $expand: ['nothing_via_here'] }))).status).toBe(400);
        expect((await t.request('GET', q('/posts', { $expand: 5 }))).status).toBe(400);
      });

      it('@svc/client passes $expand and $total as they are', async () => {
        const { createClient } = await import('@svc/client');
        const svc = createClient(t.url, { resources: [{ path: '/posts', kind: 'collection' }] });
        try {
          const list = (await svc('posts').get({ title: 'one', $expand: ['author', 'comments_via_post'] })) as Obj[];
          expect((list[0]?.author as Obj).name).toBe('ann');
          expect((list[0]?.comments_via_post as Obj[]).length).toBe(2);
        } finally {
          svc.close();
        }
      });

      it('an event script gets expanded objects through svc.<c>.get', async () => {
        const digest = await post('/digests', { of: post1.id });
        expect(digest).toMatchObject({ by: 'ann', count: 2 });
      });
    });

    describe('filters across a relation', () => {
      it('{"author.name": ...} matches through the related collection', async () => {
        const list = (await t.request('GET', q('/posts', { 'author.name': 'ann', $sort: { likes: 1 } }))).body as Obj[];
        expect(list.map((p) => p.title)).toEqual(['one', 'two']);
        const combined = (await t.request('GET', q('/posts', { 'author.name': { $in: ['ann', 'bob'] }, status: 'live', $sort: { likes: 1 } }))).body as Obj[];
        expect(combined.map((p) => p.title)).toEqual(['two', 'three']);
        const tagged = (await t.request('GET', q('/posts', { 'tags.label': 'red' }))).body as Obj[];
        expect(tagged.map((p) => p.title)).toEqual(['one']);
      });

      it('a related property the caller may not filter by answers 400; root may', async () => {
        const res = await t.request('GET', q('/posts', { 'author.secret': "ann's secret" }));
        expect(res.status).toBe(400);
        expect((res.body as { message: string }).message).toBe('author.secret: users has no property secret you may filter by');
        const asRoot = (await t.request('GET', q('/posts', { 'author.secret': "bob's secret" }), undefined, root)).body as Obj[];
        expect(asRoot.map((p) => p.title)).toEqual(['three']);
        expect((await t.request('GET', q('/posts', { 'author.name.first': 'x' }))).status).toBe(400);
      });
    });

    describe('$total and aggregates', () => {
      it('$total: true answers the array and the count before $limit in X-Total-Count', async () => {
        const res = await t.request('GET', q('/posts', { $total: true, $limit: 1, status: 'live' }));
        expect((res.body as Obj[]).length).toBe(1);
        expect(res.headers.get('x-total-count')).toBe('2');
      });

      it('counts, sums, averages, minimums and maximums, grouped by up to 3 properties', async () => {
        const res = await t.request('GET', q('/posts/aggregate', { $group: ['author'], $count: true, $sum: ['likes'], $avg: 'likes', $min: ['likes', 'title'], $max: ['likes'] }));
        expect(res.status).toBe(200);
        const rows = res.body as { group: Record<string, unknown>; count: number; sum: Record<string, number>; avg: Record<string, number> }[];
        const byAuthor = new Map(rows.map((r) => [r.group.author, r]));
        expect(byAuthor.get(users.ann?.id)).toEqual({ group: { author: users.ann?.id }, count: 2, sum: { likes: 8 }, avg: { likes: 4 }, min: { likes: 3, title: 'one' }, max: { likes: 5 } });
        expect(byAuthor.get(users.bob?.id)).toMatchObject({ count: 1, sum: { likes: 7 } });
        const two = (await t.request('GET', q('/posts/aggregate', { $group: 'status,author', status: 'live' }))).body as { group: Record<string, unknown>; count: number }[];
        expect(two.map((r) => [r.group.status, r.count])).toEqual([
          ['live', 1],
          ['live', 1],
        ]);
        const all = (await t.request('GET', q('/posts/aggregate', {}))).body as { group: object; count: number }[];
        expect(all).toEqual([{ group: {}, count: 3 }]);
        const across = (await t.request('GET', q('/posts/aggregate', { 'author.name': 'ann', $sum: 'likes' }))).body;
        expect(across).toEqual([{ group: {}, sum: { likes: 8 } }]);
      });

      it('private properties cannot be grouped or measured, more than 3 groups or a non-number sum answer 400', async () => {
        expect((await t.request('GET', q('/posts/aggregate', { $group: ['notes'] }))).status).toBe(400);
        expect((await t.request('GET', q('/posts/aggregate', { $max: ['notes'] }))).status).toBe(400);
        expect((await t.request('GET', q('/posts/aggregate', { $group: ['title', 'status', 'likes', 'author'] }))).status).toBe(400);
        expect((await t.request('GET', q('/posts/aggregate', { $sum: ['title'] }))).status).toBe(400);
        expect((await t.request('GET', q('/posts/aggregate', { $group: ['notes'] }), undefined, root)).status).toBe(200);
      });

      it('a collection with On Get keeps aggregates and $total for root (On Get may hide what a count reveals)', async () => {
        expect((await t.request('GET', q('/users/aggregate', { $group: 'name' }))).status).toBe(403);
        expect((await t.request('GET', q('/users', { $total: true }))).status).toBe(403);
        const rows = (await t.request('GET', q('/users/aggregate', {}), undefined, root)).body;
        expect(rows).toEqual([{ group: {}, count: 4 }]);
      });

      it('more groups or more objects than allowed answer 413', async () => {
        for (let i = 0; i < 7; i++) await post('/tags', { label: `t${i}` });
        const groups = await t.request('GET', q('/tags/aggregate', { $group: 'label' }));
        expect(groups.status).toBe(413);
        expect((groups.body as { message: string }).message).toContain('more than 6 groups');
        for (let i = 0; i < 55; i++) await post('/tags', { label: 'many' });
        const scanned = await t.request('GET', q('/tags/aggregate', {}));
        expect(scanned.status).toBe(413);
        expect((await t.request('GET', q('/tags/aggregate', { label: 'many' }))).body).toEqual([{ group: {}, count: 55 }]);
        const expanded = await t.request('GET', q('/tags', { $expand: 'posts_via_tags' }));
        expect(expanded.status).toBe(200);
        // One relation reading more than relations.maxExpanded (40 here) objects at one level: 413.
        const many = ((await t.request('GET', q('/tags', { label: 'many' }))).body as Obj[]).map((o) => o.id);
        const wide = await post('/posts', { title: 'wide', author: users.bob?.id, tags: many.slice(0, 41) });
        const tooWide = await t.request('GET', `/posts/${wide.id}?$expand=tags`);
        expect(tooWide.status).toBe(413);
        expect((tooWide.body as { message: string }).message).toContain('more than 40 objects');
        expect((await t.request('PUT', `/posts/${wide.id}`, { tags: many.slice(0, 40) })).status).toBe(200);
        expect(((await t.request('GET', `/posts/${wide.id}?$expand=tags`)).body as Obj).tags).toHaveLength(40);
        expect((await t.request('DELETE', `/posts/${wide.id}`)).status).toBe(204);
        await t.request('DELETE', q('/tags', { id: { $in: ((await t.request('GET', q('/tags', { label: 'many' }))).body as Obj[]).map((o) => o.id) } }), undefined, root);
      });
    });

    describe('onDelete', () => {
      it('restrict: deleting a user with posts answers 409 and deletes nothing', async () => {
        const res = await t.request('DELETE', `/users/${users.bob?.id}`, undefined, root);
        expect(res.status).toBe(409);
        expect((res.body as { message: string }).message).toBe('users: still referred to by posts.author');
        expect((await t.request('GET', `/users/${users.bob?.id}`)).status).toBe(200);
      });

      it('setNull: deleting a tag pulls it from the posts; deleting a commenter clears the comments author', async () => {
        expect((await t.request('DELETE', `/tags/${tags.red?.id}`, undefined, root)).status).toBe(204);
        expect(((await t.request('GET', `/posts/${post1.id}`)).body as Obj).tags).toEqual([tags.blue?.id]);
        const dan = await post('/users', { username: 'dan', password: 'pw-123456', name: 'dan' });
        const comment = await post('/comments', { text: 'by dan', post: post2.id, author: dan.id });
        expect((await t.request('DELETE', `/users/${dan.id}`, undefined, root)).status).toBe(204);
        expect(((await t.request('GET', `/comments/${comment.id}`)).body as Obj).author).toBeNull();
      });

      it('cascade: deleting a post deletes its comments and their votes (nested)', async () => {
        const doomed = await post('/posts', { title: 'doomed', author: users.bob?.id });
        const c = await post('/comments', { text: 'on doomed', post: doomed.id });
        const v = await post('/votes', { comment: c.id });
        expect((await t.request('DELETE', `/posts/${doomed.id}`)).status).toBe(204);
        expect((await t.request('GET', `/comments/${c.id}`)).status).toBe(404);
        expect((await t.request('GET', `/votes/${v.id}`)).status).toBe(404);
        // Other posts' comments stay.
        expect(((await t.request('GET', q('/comments', { post: post1.id }))).body as Obj[]).length).toBe(2);
      });
    });
  });
});
