import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 39: an event script's `svc.<c>.get(...)` is an internal request. It takes its read scope
// from the same function as a REST read (Visibility.scope), and docs/access-rules.md ("What
// bypasses rules") says what that scope is: scripts' own calls are trusted server code, no rule
// applies (list/read rules, per-property read rules, `private`), but they carry the caller's
// session and `me`, and the stored-only password hash never reaches them. These cases read
// through svc.* from an Event script called by an anonymous visitor, a user and root, on the
// embedded store, and check that no answer made for a script (kept texts, splices) reaches a
// client afterwards, nor a client's answer a script.

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'any' };
const ownerOrPublic = (flag: string): object => ({ $or: [{ [flag]: true }, { owner: '@me.id' }] });

const files = {
  'resources/users/config.json': { type: 'UserCollection', properties: { role: { type: 'string' }, pin: { type: 'string', private: true } } },
  'resources/authors/config.json': {
    type: 'Collection',
    publicCount: true,
    properties: {
      name: { type: 'string' },
      owner: { type: 'string' },
      public: { type: 'boolean' },
      pin: { type: 'string', private: true },
      secret: { type: 'string', read: { owner: '@me.id' } },
      account: { type: 'relation', collection: '/users' },
    },
    rules: { list: ownerOrPublic('public'), read: ownerOrPublic('public') },
  },
  'resources/posts/config.json': {
    type: 'Collection',
    properties: {
      title: { type: 'string' },
      owner: { type: 'string' },
      published: { type: 'boolean' },
      note: { type: 'string', private: true },
      salary: { type: 'number', read: { '@me.role': 'hr' } },
      author: { type: 'relation', collection: '/authors' },
    },
    rules: { list: ownerOrPublic('published'), read: ownerOrPublic('published') },
  },
  // The target's On Get sees the caller's `me` and `internal` on a script's call.
  'resources/tags/config.json': {
    type: 'Collection',
    properties: { label: { type: 'string' }, owner: { type: 'string' } },
    rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' } },
  },
  'resources/tags/get.js': 'this.seenBy = me ? me.username : null;\nthis.viaScript = internal;\n',
  'resources/probe/config.json': { type: 'Event' },
  'resources/probe/get.js': [
    'var q = query.find || {};',
    'var c = svc[query.c];',
    'try {',
    "  var out = query.c === 'me' ? await svc.users.me(q) : query.id ? await c.get(query.id, q) : await c.get(q);",
    '  setResult({ out: out, me: me ? me.username : null });',
    '} catch (e) {',
    '  setResult({ error: e });',
    '}',
    '',
  ].join('\n'),
};

describe('svc.* reads from event scripts take the internal read scope (embedded store)', () => {
  let t: AppHandle;
  let uma: AppHandle['request'];
  let anon: AppHandle['request'];
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await runApp(files, { resourceTypes: [(await import('@svc/type-event')).default] });
    const make = async (path: string, body: object): Promise<string> => {
      const res = await t.request('POST', path, body, ROOT);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body as Obj).id;
    };
    ids.uma = await make('/users', { username: 'uma', password: 'pw-uma', role: 'dev', pin: 'u-pin' });
    ids.hr = await make('/users', { username: 'hana', password: 'pw-hana', role: 'hr', pin: 'h-pin' });
    ids.open = await make('/authors', { name: 'open', owner: ids.uma, public: true, pin: 'o-pin', secret: 'o-secret', account: ids.uma });
    ids.shut = await make('/authors', { name: 'shut', owner: ids.uma, public: false, pin: 's-pin', secret: 's-secret', account: ids.hr });
    ids.pub = await make('/posts', { title: 'a-pub', owner: ids.uma, published: true, note: 'n1', salary: 10, author: ids.open });
    ids.draft = await make('/posts', { title: 'b-draft', owner: ids.uma, published: false, note: 'n2', salary: 20, author: ids.shut });
    ids.tag = await make('/tags', { label: 'mine', owner: ids.uma });
    uma = t.client();
    anon = t.client();
    expect((await uma('POST', '/users/login', { username: 'uma', password: 'pw-uma' })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** What the probe's script read through svc.<c>.get([id], q) for the client `as`. */
  async function viaScript(
    as: AppHandle['request'],
    c: string,
    q: object = {},
    id?: string,
    headers?: Record<string, string>,
  ): Promise<{ out?: unknown; error?: { status?: number; message?: string }; me: string | null }> {
    const params = new URLSearchParams({ c, find: JSON.stringify(q), ...(id ? { id } : {}) });
    const res = await as('GET', `/probe?${params.toString()}`, undefined, headers);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { out?: unknown; me: string | null };
  }
  const q = (query: object): string => `?${encodeURIComponent(JSON.stringify(query))}`;
  /** A post as stored, every property (what a script reads), its author by id. */
  const stored = (post: 'pub' | 'draft'): Obj =>
    post === 'pub'
      ? { id: ids.pub as string, title: 'a-pub', owner: ids.uma, published: true, note: 'n1', salary: 10, author: ids.open }
      : { id: ids.draft as string, title: 'b-draft', owner: ids.uma, published: false, note: 'n2', salary: 20, author: ids.shut };

  it('a list bypasses the list rule, private properties and per-property rules, for an anonymous caller', async () => {
    // The same caller's own GET: only the published post, without note, salary.
    expect((await anon('GET', `/posts${q({ $sort: { title: 1 } })}`)).body).toEqual([
      { id: ids.pub, title: 'a-pub', owner: ids.uma, published: true, author: ids.open },
    ]);
    const read = await viaScript(anon, 'posts', { $sort: { title: 1 } });
    expect(read.me).toBeNull();
    expect(read.out).toEqual([stored('pub'), stored('draft')]);
    // A script may filter and sort on what the caller may not name (400 over HTTP).
    expect((await anon('GET', `/posts${q({ note: 'n2' })}`)).status).toBe(400);
    expect((await anon('GET', `/posts${q({ salary: { $gt: 15 } })}`)).status).toBe(400);
    expect(((await viaScript(anon, 'posts', { note: 'n2' })).out as Obj[]).map((p) => p.id)).toEqual([ids.draft]);
    expect(((await viaScript(anon, 'posts', { salary: { $gt: 15 } })).out as Obj[]).map((p) => p.id)).toEqual([ids.draft]);
    expect((await viaScript(anon, 'posts', { $fields: { note: 1 }, $sort: { salary: -1 } })).out as Obj[]).toEqual([
      { id: ids.draft, note: 'n2' },
      { id: ids.pub, note: 'n1' },
    ]);
  });

  it('by id: an object the read rule hides is read whole; a missing one is 404', async () => {
    expect((await anon('GET', `/posts/${ids.draft}`)).status).toBe(404);
    expect((await viaScript(anon, 'posts', {}, ids.draft)).out).toEqual(stored('draft'));
    // The per-object property rule: the owner reads `secret` over HTTP, an anonymous visitor does not; a script does.
    expect((await anon('GET', `/authors/${ids.open}`)).body).toEqual({ id: ids.open, name: 'open', owner: ids.uma, public: true, account: ids.uma });
    expect((await uma('GET', `/authors/${ids.open}`)).body).toEqual({
      id: ids.open,
      name: 'open',
      owner: ids.uma,
      public: true,
      secret: 'o-secret',
      account: ids.uma,
    });
    expect((await viaScript(anon, 'authors', {}, ids.shut)).out).toMatchObject({ pin: 's-pin', secret: 's-secret' });
    expect((await viaScript(anon, 'posts', {}, 'no-such-id')).error).toMatchObject({ status: 404 });
  });

  it("users: never the password hash, even to a script; private properties and the caller's own /me", async () => {
    const listed = (await viaScript(anon, 'users', { $sort: { username: 1 } })).out as Obj[];
    expect(listed.map((u) => u.username)).toEqual(['hana', 'uma']);
    for (const u of listed) {
      expect(Object.keys(u).sort()).toEqual(['id', 'pin', 'role', 'username']);
      expect(JSON.stringify(u)).not.toMatch(/\$2[aby]\$/);
    }
    expect(Object.keys((await viaScript(anon, 'users', {}, ids.hr)).out as Obj).sort()).toEqual(['id', 'pin', 'role', 'username']);
    // svc.users.me() is the caller's own user: the session travels with the call.
    expect(await viaScript(uma, 'me')).toEqual({ out: { id: ids.uma, username: 'uma', role: 'dev', pin: 'u-pin' }, me: 'uma' });
    const none = await viaScript(anon, 'me');
    expect(none.me).toBeNull();
    expect(none.out ?? null).toBeNull();
  });

  it("the target's On Get runs with the caller's me and internal set; its rules do not apply", async () => {
    expect((await anon('GET', `/tags/${ids.tag}`)).status).toBe(404);
    expect((await viaScript(anon, 'tags', {}, ids.tag)).out).toEqual({ id: ids.tag, label: 'mine', owner: ids.uma, seenBy: null, viaScript: true });
    expect((await viaScript(uma, 'tags')).out).toEqual([{ id: ids.tag, label: 'mine', owner: ids.uma, seenBy: 'uma', viaScript: true }]);
    expect((await uma('GET', '/tags')).body).toEqual([{ id: ids.tag, label: 'mine', owner: ids.uma, seenBy: 'uma', viaScript: false }]);
  });

  it('count: the list rule does not apply to a script; the root gate on /count holds as for the caller', async () => {
    expect((await anon('GET', '/authors/count')).body).toEqual({ count: 1 });
    expect((await viaScript(anon, 'authors', {}, 'count')).out).toEqual({ count: 2 });
    expect((await viaScript(anon, 'authors', { pin: 's-pin' }, 'count')).out).toEqual({ count: 1 });
    // /posts/count is root only (no publicCount): a script called without root is refused as its caller is (Deployd: "Must be root to count").
    expect((await viaScript(anon, 'posts', {}, 'count')).error).toMatchObject({ status: 403 });
    expect((await viaScript(uma, 'posts', {}, 'count')).error).toMatchObject({ status: 403 });
    expect((await viaScript(t.client(), 'posts', { note: 'n1' }, 'count', ROOT)).out).toEqual({ count: 1 });
  });

  it('$expand through svc.* reads related objects whole at every level, but never the password hash', async () => {
    const expand = { $expand: ['author.account'], $sort: { title: 1 } };
    const account = (id: string | undefined, username: string, role: string, pin: string): Record<string, unknown> => ({ id, username, role, pin });
    const fromScript = [
      {
        ...stored('pub'),
        author: {
          id: ids.open,
          name: 'open',
          owner: ids.uma,
          public: true,
          pin: 'o-pin',
          secret: 'o-secret',
          account: account(ids.uma, 'uma', 'dev', 'u-pin'),
        },
      },
      {
        ...stored('draft'),
        author: {
          id: ids.shut,
          name: 'shut',
          owner: ids.uma,
          public: false,
          pin: 's-pin',
          secret: 's-secret',
          account: account(ids.hr, 'hana', 'hr', 'h-pin'),
        },
      },
    ];
    const fromAnon = [
      {
        id: ids.pub,
        title: 'a-pub',
        owner: ids.uma,
        published: true,
        author: { id: ids.open, name: 'open', owner: ids.uma, public: true, account: { id: ids.uma, username: 'uma', role: 'dev' } },
      },
    ];
    const oneLevel = { $expand: ['author'], $sort: { title: 1 } };
    const withoutAccounts = fromScript.map((p) => ({ ...p, author: { ...p.author, account: p.author.account.id } }));
    const anonOneLevel = fromAnon.map((p) => ({ ...p, author: { ...p.author, account: p.author.account.id } }));
    // Script first, then the anonymous client, then the script again: neither is answered from what was made for the other.
    for (let round = 0; round < 2; round++) {
      expect((await viaScript(anon, 'posts', expand)).out).toEqual(fromScript);
      expect((await viaScript(anon, 'posts', oneLevel)).out).toEqual(withoutAccounts);
      expect((await anon('GET', `/posts${q(expand)}`)).body).toEqual(fromAnon);
      expect((await anon('GET', `/posts${q(oneLevel)}`)).body).toEqual(anonOneLevel);
      expect((await anon('GET', `/posts/${ids.pub}${q({ $expand: ['author'] })}`)).body).toEqual(anonOneLevel[0]);
    }
    // By id, as docs/relations.md shows it: svc.posts.get({id, $expand}).
    expect((await viaScript(anon, 'posts', { id: ids.draft, $expand: ['author'] })).out).toEqual(withoutAccounts[1]);
    expect((await viaScript(anon, 'posts', { $expand: ['author'] }, ids.draft)).out).toEqual(withoutAccounts[1]);
  });
});
