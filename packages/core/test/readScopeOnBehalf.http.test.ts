import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Collection, UserCollection, createRequestScope } from '@svc/core';
import type { PropertyDef } from '@svc/core';
import { AccessRules } from '../src/access/AccessRules.js';
import { CollectionAccess } from '../src/access/CollectionAccess.js';
import { Visibility } from '../src/access/Visibility.js';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestClient, TestServer } from './helpers/http.js';

// Issue 39: reads made on a caller's behalf take the read scope from the one function
// (Visibility.scope), made once per request for each collection they read: `$expand` into other
// collections at every level, and the dashboard's "try as this user". What a per-property rule
// or `private` hides is hidden the same way on every one of these paths as on a GET.

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'dev' };

describe.each(storeKinds())('reads on a caller\'s behalf take the request\'s read scope ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let cols: Record<string, Collection>;
  let uma: TestClient;
  let vic: TestClient;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    store = await kind.make();
    const c = (path: string, properties: Collection['properties'], rules?: Record<string, unknown>): Collection =>
      new Collection({ path, properties, store: store.store.collection(path.slice(1)), ...(rules ? { rules } : {}) });
    cols = {
      // Two levels: posts -> authors -> orgs. Each hides `pin` (private) and `secret` (its owner only).
      orgs: c('/orgs', { name: { type: 'string' }, owner: { type: 'string' }, pin: { type: 'string', private: true }, secret: { type: 'string', read: { owner: '@me.id' } } }),
      authors: c('/authors', {
        name: { type: 'string' },
        owner: { type: 'string' },
        pin: { type: 'string', private: true },
        secret: { type: 'string', read: { owner: '@me.id' } },
        org: { type: 'relation', collection: '/orgs' },
      }),
      // Only their owner may read a closed author (an expand into what the caller may not read).
      closed: c('/closed', { name: { type: 'string' }, owner: { type: 'string' } }, { read: { owner: '@me.id' }, list: { owner: '@me.id' } }),
      posts: c('/posts', {
        title: { type: 'string' },
        author: { type: 'relation', collection: '/authors' },
        shut: { type: 'relation', collection: '/closed' },
      }),
    };
    const users = new UserCollection({ path: '/users', properties: { name: { type: 'string' } }, store: store.store.collection('users'), passwordCost: 4, loginRateLimit: { max: 1000 } });
    t = await startTestServer(store.store, [users, ...Object.values(cols)]);
    const make = async (path: string, body: object): Promise<string> => {
      const res = await t.request('POST', path, { body, headers: ROOT });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body as Obj).id;
    };
    ids.uma = await make('/users', { username: 'uma', password: 'pw' });
    ids.vic = await make('/users', { username: 'vic', password: 'pw' });
    uma = t.client();
    vic = t.client();
    expect((await uma.request('POST', '/users/login', { body: { username: 'uma', password: 'pw' } })).status).toBe(200);
    expect((await vic.request('POST', '/users/login', { body: { username: 'vic', password: 'pw' } })).status).toBe(200);
    ids.org = await make('/orgs', { name: 'acme', owner: ids.uma, pin: 'o-pin', secret: 'o-secret' });
    ids.author = await make('/authors', { name: 'ann', owner: ids.uma, pin: 'a-pin', secret: 'a-secret', org: ids.org });
    ids.closed = await make('/closed', { name: 'shut', owner: ids.uma });
    ids.post = await make('/posts', { title: 'p', author: ids.author, shut: ids.closed });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await store?.dispose();
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** How many read scopes answering `run` made, per collection path. */
  async function scopesOf(run: () => Promise<unknown>): Promise<Record<string, number>> {
    const made = vi.spyOn(Visibility.prototype, 'newScope');
    await run();
    const counts: Record<string, number> = {};
    for (const self of made.mock.contexts) {
      const path = Object.entries(cols).find(([, col]) => (col as unknown as { visibility: unknown }).visibility === self)?.[0] ?? 'other';
      counts[path] = (counts[path] ?? 0) + 1;
    }
    made.mockRestore();
    return counts;
  }

  const q = (query: object): string => `/posts?${encodeURIComponent(JSON.stringify(query))}`;

  for (const [label, path] of [
    ['a list', () => q({ $expand: ['author.org', 'shut'] })],
    ['one object', () => `/posts/${ids.post}?${encodeURIComponent(JSON.stringify({ $expand: ['author.org', 'shut'] }))}`],
  ] as const) {
    it(`$expand two levels deep (${label}): one scope per collection read, for every caller`, async () => {
      for (const client of [uma, vic, t.client()]) {
        let status = 0;
        const counts = await scopesOf(async () => (status = (await client.request('GET', path())).status));
        expect(status).toBe(200);
        expect(counts).toEqual({ posts: 1, authors: 1, orgs: 1, closed: 1 });
      }
    });
  }

  it('what private and per-property rules hide is hidden the same way through GET, /count and $expand at one and two levels', async () => {
    for (const [client, sees] of [
      [uma, true],
      [vic, false],
      [t.client(), false],
    ] as const) {
      const author = (await client.request('GET', `/authors/${ids.author}`)).body as Obj;
      const org = (await client.request('GET', `/orgs/${ids.org}`)).body as Obj;
      expect(author.pin).toBeUndefined();
      expect(org.pin).toBeUndefined();
      expect(author.secret).toBe(sees ? 'a-secret' : undefined);
      expect(org.secret).toBe(sees ? 'o-secret' : undefined);
      const [one] = (await client.request('GET', q({ $expand: ['author'] }))).body as Obj[];
      expect(one?.author).toEqual(author);
      const [two] = (await client.request('GET', q({ $expand: ['author.org'] }))).body as Obj[];
      expect(two?.author).toEqual({ ...author, org });
      // Naming a hidden property in a filter of the expanded collection is refused as on a GET.
      expect((await client.request('GET', `/authors?${encodeURIComponent(JSON.stringify({ pin: 'a-pin' }))}`)).status).toBe(400);
      const count = await client.request('GET', `/authors/count?${encodeURIComponent(JSON.stringify({ secret: 'a-secret' }))}`, { headers: ROOT });
      expect(count.status).toBe(200);
    }
  });

  it('an expand into an object the caller may not read shows it as absent (its owner sees it)', async () => {
    const [mine] = (await uma.request('GET', q({ $expand: ['shut'] }))).body as Obj[];
    expect((mine?.shut as Obj | null)?.name).toBe('shut');
    for (const client of [vic, t.client()]) {
      const [theirs] = (await client.request('GET', q({ $expand: ['shut'] }))).body as Obj[];
      expect(theirs?.shut ?? null).toBeNull();
      expect((await client.request('GET', `/closed/${ids.closed}`)).status).toBe(404);
    }
  });

  it('the dashboard\'s "try as this user" reads what that user\'s GET shows, from the same scope', async () => {
    const umaDoc = (await t.request('GET', `/users/${ids.uma}`, { headers: ROOT })).body as Obj;
    const vicDoc = (await t.request('GET', `/users/${ids.vic}`, { headers: ROOT })).body as Obj;
    const stored = (await t.request('GET', `/authors/${ids.author}`, { headers: ROOT })).body as Obj;
    for (const [me, client] of [
      [umaDoc, uma],
      [vicDoc, vic],
    ] as const) {
      const ctx = {
        method: 'GET', originalMethod: 'GET', url: `/${ids.author}`, parts: [ids.author as string], query: {}, body: undefined, bodyKind: 'none' as const, headers: {},
        session: { id: 'try', uid: me.id, path: '/users', isNew: true }, me, isRoot: false, internal: false, scope: createRequestScope('test'),
      };
      const explained = cols.authors!.explainAccess(ctx as never, stored);
      const shown = (await client.request('GET', `/authors/${ids.author}`)).body as Obj;
      for (const [name, decision] of Object.entries(explained.properties)) expect(decision.read, `${me.username as string}: ${name}`).toBe(Object.hasOwn(shown, name));
      expect(explained.properties.pin?.read).toBe(false);
    }
  });
});

describe('a read scope kept for a reader serves only the caller it was made for', () => {
  const properties: Record<string, PropertyDef> = { owner: { type: 'string' }, pin: { type: 'string', private: true }, note: { type: 'string', read: { owner: '@me.id' } } };
  const visibility = new Visibility(new CollectionAccess(AccessRules.parse({ rules: undefined, properties, file: 'notes/config.json' })), properties);
  const reader = {};
  const caller = (me: Record<string, unknown> | undefined, extra: object = {}): Parameters<Visibility['scope']>[0] => ({
    method: 'GET', originalMethod: 'GET', url: '/', parts: [], query: QUERY, body: undefined, bodyKind: 'none', headers: {},
    session: { id: 's1', uid: me?.id as string | undefined, isNew: false }, me: me as never, isRoot: false, internal: false, scope: createRequestScope('test'), reader, ...extra,
  });
  const QUERY = {};
  const uma = { id: 'uma' };
  const stored = { id: 'n1', owner: 'uma', pin: '1', note: 'mine' };

  it('the same caller on a new context (a live query\'s next event) gets the same scope', () => {
    expect(visibility.scope(caller(uma))).toBe(visibility.scope(caller(uma)));
  });

  it('another user, root, a script, another session or another query sharing the reader get their own', () => {
    const first = visibility.scope(caller(uma));
    expect(first.finish({ ...stored }, stored)).toEqual({ id: 'n1', owner: 'uma', note: 'mine' });
    for (const other of [caller({ id: 'vic' }), caller(undefined), caller(uma, { isRoot: true }), caller(uma, { internal: true }), caller(uma, { query: { id: 'x' } }), caller(uma, { session: { id: 's2', uid: 'uma', isNew: false } })]) {
      const scope = visibility.scope(other);
      expect(scope).not.toBe(first);
      const shown = scope.finish({ ...stored }, stored);
      if (other.isRoot || other.internal) expect(shown).toEqual(stored);
      else if (other.me === uma) expect(shown).toEqual({ id: 'n1', owner: 'uma', note: 'mine' });
      else expect(shown).toEqual({ id: 'n1', owner: 'uma' });
    }
  });

  it('a login on the same context (the session object changed in place) makes a new one', () => {
    const ctx = caller(undefined);
    const before = visibility.scope(ctx);
    (ctx.session as { uid?: string }).uid = 'uma';
    ctx.me = uma as never;
    expect(visibility.scope(ctx)).not.toBe(before);
    expect(visibility.scope(ctx).finish({ ...stored }, stored)).toEqual({ id: 'n1', owner: 'uma', note: 'mine' });
  });

  // The scope is kept on the reader itself (no WeakMap entry per request: GC, see Visibility.made).
  it('kept per reader and per Visibility; a context copied with {...ctx} makes its own; a frozen reader works', () => {
    const ctx = caller(uma, { reader: undefined });
    const made = visibility.scope(ctx);
    expect(visibility.scope(ctx)).toBe(made);
    // A symbol: nothing of it shows in the context's keys (nor in JSON).
    expect(Object.keys(ctx)).not.toContain(expect.stringMatching(/scope/i));
    // A copy carries the property, but the scope there is its parent's: the copy is another reader.
    const copy = { ...ctx };
    const copied = visibility.scope(copy);
    expect(copied).not.toBe(made);
    expect(copied.reader).toBe(copy);
    expect(visibility.scope(copy)).toBe(copied);
    expect(visibility.scope(ctx)).toBe(made);
    // The same for a copy made for another caller: never the parent's scope.
    const forVic = { ...ctx, me: { id: 'vic' } as never, session: { ...ctx.session, uid: 'vic' } };
    expect(visibility.scope(forVic)).not.toBe(made);
    const other = new Visibility(visibility.access, properties);
    expect(other.scope(ctx)).not.toBe(made);
    expect(other.scope(ctx)).toBe(other.scope(ctx));
    expect(visibility.scope(ctx)).toBe(made);
    const frozen = Object.freeze({});
    const first = visibility.scope(caller(uma, { reader: frozen }));
    expect(visibility.scope(caller(uma, { reader: frozen }))).toBe(first);
    expect(visibility.scope(caller({ id: 'vic' }, { reader: frozen }))).not.toBe(first);
  });
});
