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

  it('expanded objects never carry private properties; asking for one in $fields answers as in a direct read (without it)', async () => {
    for (const expand of [['author'], { author: { $fields: { name: 0 } } }]) {
      const list = (await t.request('GET', q('/posts', { $expand: expand }))).body as Obj[];
      expect(list.length).toBe(3);
      for (const post of list) if (post.author !== null) expect(post.author).not.toHaveProperty('salary');
    }
    const direct = await t.request('GET', q('/users', { $fields: { salary: 1 } }));
    const expanded = await t.request('GET', q('/posts', { $expand: { author: { $fields: { salary: 1 } } } }));
    expect([direct.status, direct.body]).toEqual([200, (await t.request('GET', '/users')).body]);
    expect(expanded.body).toEqual((await t.request('GET', q('/posts', { $expand: ['author'] }))).body);
    expect(JSON.stringify(expanded.body)).not.toContain('salary');
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
    // Refused like a filter on any private property (the same answer as for `reviewer` itself).
    const direct = await t.request('GET', q('/posts', { reviewer: boss.id }));
    expect(direct.status).toBe(400);
    expect((await t.request('GET', q('/posts', { 'reviewer.name': 'boss' }))).body).toEqual(direct.body);
    expect((await t.request('GET', q('/posts', { 'reviewer.id': boss.id }))).body).toEqual(direct.body);
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

  it('a private property cannot order expanded objects (refused, as a direct sort on it is)', async () => {
    const direct = await t.request('GET', q('/posts', { $sort: { score: 1 } }));
    expect(direct.status).toBe(400);
    const expanded = await t.request('GET', q('/users', { name: 'ann', $expand: { posts_via_author: { $sort: { score: 1 } } } }));
    expect(expanded.body).toEqual(direct.body);
  });

  it('aggregates: private properties cannot be grouped, measured or filtered; a collection with On Get is root-only', async () => {
    for (const query of [{ $group: ['score'] }, { $sum: ['score'] }, { $max: 'score' }, { $group: ['reviewer'] }, { $min: ['reviewer'] }]) {
      const res = await t.request('GET', q('/posts/aggregate', query));
      expect(res.status).toBe(400);
    }
    // A filter on a private property is refused: it cannot probe scores by counting.
    expect((await t.request('GET', q('/posts/aggregate', { score: { $gt: 4 } }))).status).toBe(400);
    expect((await t.request('GET', q('/posts', { score: { $gt: 4 }, $total: true }))).status).toBe(400);
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

// The same attacks once access rules (issue 24) decide who reads what: every expanded object,
// every filter across a relation and every aggregate sees only what the caller's own direct
// reads would, because they all go through the related collection's readAs/accessFilter/queryableFor.
const ruleFiles = {
  'resources/users/config.json': {
    type: 'UserCollection',
    properties: { name: { type: 'string' }, role: { type: 'string' }, salary: { type: 'number', read: { '@me.role': 'hr' } } },
  },
  'resources/docs/config.json': {
    type: 'Collection',
    properties: { title: { type: 'string' }, owner: { type: 'relation', collection: 'users' }, words: { type: 'number' } },
    rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' } },
  },
  'resources/comments/config.json': {
    type: 'Collection',
    properties: { text: { type: 'string' }, doc: { type: 'relation', collection: 'docs', onDelete: 'cascade' }, author: { type: 'relation', collection: 'users' } },
  },
};

describe.each(appStores())('relations attacks under access rules (%s store)', (store) => {
  let t: AppHandle;
  const root = { 'svc-ssh-key': 'any' };
  let ann: Obj;
  let bob: Obj;
  let annDoc: Obj;
  let bobDoc: Obj;
  let asAnn: AppHandle['request'];
  let asBob: AppHandle['request'];
  let asHr: AppHandle['request'];

  const make = async (path: string, body: object): Promise<Obj> => {
    const res = await t.request('POST', path, body, root);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Obj;
  };
  const login = async (username: string): Promise<AppHandle['request']> => {
    const request = t.client();
    expect((await request('POST', '/users/login', { username, password: 'pw-123456' })).status).toBe(200);
    return request;
  };

  beforeAll(async () => {
    t = await runApp(ruleFiles, { store });
    ann = await make('/users', { username: 'ann', password: 'pw-123456', name: 'ann', role: 'staff', salary: 100 });
    bob = await make('/users', { username: 'bob', password: 'pw-123456', name: 'bob', role: 'staff', salary: 200 });
    await make('/users', { username: 'hr', password: 'pw-123456', name: 'hr', role: 'hr', salary: 300 });
    annDoc = await make('/docs', { title: 'ann secret plan', owner: ann.id, words: 10 });
    await make('/docs', { title: 'ann other plan', owner: ann.id, words: 20 });
    bobDoc = await make('/docs', { title: 'bob notes', owner: bob.id, words: 5 });
    await make('/comments', { text: 'on ann', doc: annDoc.id, author: bob.id });
    await make('/comments', { text: 'on bob', doc: bobDoc.id, author: ann.id });
    asAnn = await login('ann');
    asBob = await login('bob');
    asHr = await login('hr');
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('an expanded object the read rules hide is null; back-relations hold only what the rules let through', async () => {
    const comments = (await asBob('GET', q('/comments', { $expand: ['doc'], $sort: { text: 1 } }))).body as Obj[];
    expect(comments.map((c) => [c.text, c.doc === null ? null : (c.doc as Obj).title])).toEqual([
      ['on ann', null],
      ['on bob', 'bob notes'],
    ]);
    const users = (await asBob('GET', q('/users', { $expand: ['docs_via_owner'], $sort: { name: 1 } }))).body as Obj[];
    expect(users.map((u) => [u.name, (u.docs_via_owner as Obj[]).map((d) => d.title)])).toEqual([
      ['ann', []],
      ['bob', ['bob notes']],
      ['hr', []],
    ]);
    const own = (await asAnn('GET', q(`/users/${ann.id}`, { $expand: ['docs_via_owner'] }))).body as Obj;
    expect((own.docs_via_owner as Obj[]).map((d) => d.title).sort()).toEqual(['ann other plan', 'ann secret plan']);
  });

  it('a property read rule applies to expanded objects: salary only for hr', async () => {
    const forBob = (await asBob('GET', q('/comments', { $expand: ['author'] }))).body as Obj[];
    for (const c of forBob) expect(c.author).not.toHaveProperty('salary');
    const forHr = (await asHr('GET', q('/comments', { $expand: ['author'], $sort: { text: 1 } }))).body as Obj[];
    expect(forHr.map((c) => (c.author as Obj).salary)).toEqual([200, 100]);
    // Asking for it in the expansion's $fields: as without it (issue 38), no salary.
    const asked = await asBob('GET', q('/comments', { $expand: { author: { $fields: { salary: 1 } } } }));
    expect(asked.body).toEqual(forBob);
  });

  it('a filter across a relation matches only related objects the caller may read, and no property it may not', async () => {
    expect((await asBob('GET', q('/comments', { 'doc.title': 'ann secret plan' }))).body).toEqual([]);
    expect((await asBob('GET', q('/comments', { 'doc.title': { $regex: '^ann' } }))).body).toEqual([]);
    expect(((await asAnn('GET', q('/comments', { 'doc.title': 'ann secret plan' }))).body as Obj[]).map((c) => c.text)).toEqual(['on ann']);
    const salary = await asBob('GET', q('/comments', { 'author.salary': { $gt: 150 } }));
    expect(salary.status).toBe(400);
    expect((salary.body as { message: string }).message).toBe('author.salary: users has no property salary you may filter by');
    expect(((await asHr('GET', q('/comments', { 'author.salary': { $gt: 150 } }))).body as Obj[]).map((c) => c.text)).toEqual(['on ann']);
  });

  it('aggregates and $total count only the objects the list rule lets through, and measure no property the caller may not read', async () => {
    expect((await asBob('GET', q('/docs/aggregate', { $group: 'owner', $sum: 'words' }))).body).toEqual([{ group: { owner: bob.id }, sum: { words: 5 } }]);
    expect((await asBob('GET', q('/docs/aggregate', {}))).body).toEqual([{ group: {}, count: 1 }]);
    expect((await asAnn('GET', q('/docs/aggregate', {}))).body).toEqual([{ group: {}, count: 2 }]);
    const total = await asBob('GET', q('/docs', { $total: true, $limit: 0 }));
    expect(total.headers.get('x-total-count')).toBe('1');
    expect((await t.request('GET', q('/docs/aggregate', {}))).body).toEqual([{ group: {}, count: 0 }]);
    expect((await asBob('GET', q('/users/aggregate', { $sum: 'salary' }))).status).toBe(400);
    expect((await asBob('GET', q('/users/aggregate', { $group: 'salary' }))).status).toBe(400);
    expect((await asBob('GET', q('/users/aggregate', { salary: { $gt: 150 } }))).status).toBe(400);
    expect((await asHr('GET', q('/users/aggregate', { $sum: 'salary' }))).body).toEqual([{ group: {}, sum: { salary: 600 } }]);
  });

  it('a write may not point at an object the writer may not read (the answer of a missing one)', async () => {
    const hidden = await asBob('POST', '/comments', { text: 'x', doc: annDoc.id });
    const missing = await asBob('POST', '/comments', { text: 'x', doc: '0123456789abcdef' });
    expect(hidden.status).toBe(400);
    expect(hidden.body).toEqual(missing.body);
    expect((await asAnn('POST', '/comments', { text: 'mine', doc: annDoc.id })).status).toBe(200);
  });
});
