import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 25, attacks: a caller tries to read through $expand, filters across relations and
// aggregates what a direct read would not show it: private properties, objects On Get hides,
// private relations, ordering by hidden values, and work beyond the limits. Each answer must
// tell no more than the direct reads of the same caller.

type Obj = Record<string, unknown> & { id: string };

const files = {
  'resources/users/config.json': {
    type: 'UserCollection',
    properties: { name: { type: 'string' }, salary: { type: 'number', private: true }, role: { type: 'string' } },
  },
  'resources/users/get.js': "if (this.role === 'hidden') cancel('not found', 404);\n",
  'resources/posts/config.json': {
    type: 'Collection',
    properties: {
      title: { type: 'string' },
      author: { type: 'relation', collection: 'users' },
      reviewer: { type: 'relation', collection: 'users', private: true },
      score: { type: 'number', private: true },
    },
  },
  'resources/notes/config.json': {
    type: 'Collection',
    properties: { text: { type: 'string' }, owner: { type: 'relation', collection: 'users', private: true } },
  },
};

const q = (path: string, query: object): string => `${path}?${encodeURIComponent(JSON.stringify(query))}`;

describe.each(appStores())('relations attacks (%s store)', (store) => {
  let t: AppHandle;
  const root = { 'svc-ssh-key': 'any' };
  let ann: Obj;
  let boss: Obj;
  let hidden: Obj;

  const make = async (path: string, body: object): Promise<Obj> => {
    const res = await t.request('POST', path, body, root);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Obj;
  };

  beforeAll(async () => {
    t = await runApp(files, { store });
    ann = await make('/users', { username: 'ann', password: 'pw-123456', name: 'ann', salary: 10, role: 'staff' });
    boss = await make('/users', { username: 'boss', password: 'pw-123456', name: 'boss', salary: 900, role: 'staff' });
    hidden = await make('/users', { username: 'spy', password: 'pw-123456', name: 'spy', salary: 500, role: 'staff' });
    await make('/posts', { title: 'a1', author: ann.id, reviewer: boss.id, score: 1 });
    await make('/posts', { title: 'a2', author: ann.id, reviewer: hidden.id, score: 9 });
    await make('/posts', { title: 'h1', author: hidden.id, score: 5 });
    // Hidden from now on: On Get cancels it for everyone (root too), the references stay.
    expect((await t.request('PUT', `/users/${hidden.id}`, { role: 'hidden' }, root)).status).toBe(200);
    await make('/notes', { text: 'about ann', owner: ann.id });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('expanded objects never carry private properties, whatever $fields asks', async () => {
    for (const expand of [['author'], { author: { $fields: { salary: 1 } } }, { author: { $fields: { name: 0 } } }]) {
      const list = (await t.request('GET', q('/posts', { $expand: expand }))).body as Obj[];
      expect(list.length).toBe(3);
      for (const post of list) if (post.author !== null) expect(post.author).not.toHaveProperty('salary');
    }
  });

  it('an object On Get hides is null when expanded, as a direct read of it is a 404', async () => {
    expect((await t.request('GET', `/users/${hidden.id}`)).status).toBe(404);
    const post = ((await t.request('GET', q('/posts', { title: 'h1', $expand: ['author'] }))).body as Obj[])[0];
    expect(post?.author).toBeNull();
    const users = (await t.request('GET', q('/users', { $expand: ['posts_via_author'] }))).body as Obj[];
    expect(users.map((u) => u.name).sort()).toEqual(['ann', 'boss']);
  });

  it('a private relation cannot be expanded, nor followed backwards, nor filtered across: the same answers as a relation that does not exist', async () => {
    const none = await t.request('GET', q('/posts', { $expand: ['nothing'] }));
    const priv = await t.request('GET', q('/posts', { $expand: ['reviewer'] }));
    expect(priv.status).toBe(400);
    expect((priv.body as { message: string }).message).toBe((none.body as { message: string }).message.replace('nothing', 'reviewer'));
    expect((await t.request('GET', q('/users', { $expand: ['notes_via_owner'] }))).status).toBe(400);
    const all = ((await t.request('GET', '/posts')).body as Obj[]).map((p) => p.title).sort();
    // Ignored like a filter on any private property: probing tells nothing.
    expect(((await t.request('GET', q('/posts', { 'reviewer.name': 'boss' }))).body as Obj[]).map((p) => p.title).sort()).toEqual(all);
    expect(((await t.request('GET', q('/posts', { 'reviewer.id': boss.id }))).body as Obj[]).map((p) => p.title).sort()).toEqual(all);
    // Root reads them all.
    const asRoot = ((await t.request('GET', q('/posts', { title: 'a1', $expand: ['reviewer'] }), undefined, root)).body as Obj[])[0];
    expect((asRoot?.reviewer as Obj).salary).toBe(900);
  });

  it('a filter across a relation cannot test a private property, nor match objects On Get hides', async () => {
    for (const query of [{ 'author.salary': { $gt: 100 } }, { 'author.salary': 900 }, { 'author.password': { $exists: true } }]) {
      const res = await t.request('GET', q('/posts', query));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ status: 400, statusCode: 400, message: expect.stringMatching(/^author\.\w+: users has no property \w+ you may filter by$/) });
    }
    expect((await t.request('GET', q('/posts', { 'author.role': 'hidden' }))).body).toEqual([]);
    expect((await t.request('GET', q('/posts', { 'author.id': hidden.id }))).body).toEqual([]);
    expect((await t.request('GET', q('/posts', { 'author.name': { $regex: '^s' } }))).body).toEqual([]);
    // Inside $or the key is no property: it filters nothing (no probing either).
    expect(((await t.request('GET', q('/posts', { $or: [{ 'author.salary': 900 }] }))).body as Obj[]).length).toBe(3);
  });

  it('a private property does not order expanded objects', async () => {
    const order = async (direction: 1 | -1): Promise<unknown[]> => {
      const users = (await t.request('GET', q('/users', { name: 'ann', $expand: { posts_via_author: { $sort: { score: direction } } } }))).body as Obj[];
      return (users[0]?.posts_via_author as Obj[]).map((p) => p.title);
    };
    expect(await order(1)).toEqual(await order(-1));
  });

  it('aggregates: private properties cannot be grouped, measured or filtered; a collection with On Get is root-only', async () => {
    for (const query of [{ $group: ['score'] }, { $sum: ['score'] }, { $max: 'score' }, { $group: ['reviewer'] }, { $min: ['reviewer'] }]) {
      const res = await t.request('GET', q('/posts/aggregate', query));
      expect(res.status).toBe(400);
    }
    // A filter on a private property is ignored: it cannot probe scores by counting.
    expect((await t.request('GET', q('/posts/aggregate', { score: { $gt: 4 } }))).body).toEqual([{ group: {}, count: 3 }]);
    expect((await t.request('GET', q('/posts/aggregate', { score: { $gt: 4 } }), undefined, root)).body).toEqual([{ group: {}, count: 2 }]);
    // On Get hides a user: a count by role would reveal it, so only root may count users.
    expect((await t.request('GET', q('/users/aggregate', { $group: 'role' }))).status).toBe(403);
    expect((await t.request('GET', q('/users', { $total: true }))).status).toBe(403);
    expect((await t.request('GET', q('/users/count', {}))).status).toBe(403);
  });

  it('writing a reference to an object the writer may not read answers as for one that does not exist', async () => {
    const missing = await t.request('POST', '/posts', { title: 'x', author: '0123456789abcdef' });
    const hiddenRef = await t.request('POST', '/posts', { title: 'x', author: hidden.id });
    expect(hiddenRef.status).toBe(400);
    expect(hiddenRef.body).toEqual(missing.body);
  });

  it('deep or wide $expand is refused before any read', async () => {
    expect((await t.request('GET', q('/posts', { $expand: { author: { $expand: { posts_via_author: { $expand: { author: true } } } } } }))).status).toBe(400);
    const wide = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`r${i}`, true]));
    expect((await t.request('GET', q('/posts', { $expand: wide }))).status).toBe(400);
    expect((await t.request('GET', q('/posts', { $expand: ['author.__proto__'] }))).status).toBe(400);
    expect((await t.request('GET', q('/posts/count', { $expand: ['author'] }), undefined, root)).status).toBe(400);
  });
});
