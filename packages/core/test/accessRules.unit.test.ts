import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessRules, Collection, RuleError, createRequestScope } from '@svc/core';
import type { Context, Doc, PropertyDef, RuleVariables } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';

// Issue 24: the rule engine on objects in hand (type confusion in variables, folding) and the
// shared contract's entry points (accessFilter, readAs, showTo, queryableFor, explainAccess).

const properties: Record<string, PropertyDef> = {
  title: { type: 'string' },
  owner: { type: 'string' },
  editors: { type: 'array' },
  score: { type: 'number' },
  published: { type: 'boolean' },
  meta: { type: 'object' },
};
const me = { id: { type: 'string' as const }, role: { type: 'string' as const }, teams: { type: 'array' as const }, profile: { type: 'object' as const } };

function rules(source: unknown): AccessRules {
  return AccessRules.parse({ rules: { read: source }, properties, file: 'resources/t/config.json', me });
}
function vars(over: Partial<RuleVariables> = {}): RuleVariables {
  return { me: null, root: false, query: {}, now: 1000, ...over };
}
const mine = { id: 'p1', owner: 'u1', title: 't', editors: ['u2', 'u3'], score: 5, meta: { owner: 'u1' } };
const ownerless: Record<string, unknown> = { id: 'p2', title: 't' };

describe('rule engine', () => {
  it('an owner rule is a filter on the owner, nothing when anonymous (not even an object without owner)', () => {
    const r = rules({ owner: '@me.id' });
    expect(r.compile('read', vars({ me: { id: 'u1' } }))).toEqual({ owner: 'u1' });
    expect(r.compile('read', vars())).toBe(false);
    expect(r.allows('read', vars(), ownerless)).toBe(false);
    expect(r.allows('read', vars({ me: { id: 'u1' } }), mine)).toBe(true);
    expect(r.allows('read', vars({ me: {} }), ownerless)).toBe(false);
  });

  it('a variable never becomes an operator: me.id as an object or array matches nothing', () => {
    const r = rules({ owner: '@me.id' });
    for (const id of [{ $ne: null }, { $exists: true }, ['u1'], [{ $gt: '' }], { $regex: '.*' }]) {
      expect(r.compile('read', vars({ me: { id } }))).toBe(false);
      expect(r.allows('read', vars({ me: { id } }), mine)).toBe(false);
      expect(r.allows('read', vars({ me: { id } }), ownerless)).toBe(false);
    }
    // Nor through @query, nor in $in lists, nor inside an object property.
    const q = rules({ $or: [{ title: '@query.t' }, { owner: { $in: '@me.teams' } }, { meta: '@me.profile' }] });
    expect(q.compile('read', vars({ query: { t: { $ne: 'x' } } }))).toBe(false);
    expect(q.compile('read', vars({ me: { id: 'x', teams: [{ $ne: null }] } }))).toBe(false);
    expect(q.compile('read', vars({ me: { id: 'x', profile: { owner: { $exists: true } } } }))).toBe(false);
    expect(q.compile('read', vars({ me: { id: 'x', profile: { owner: 'u1' } } }))).toEqual({ meta: { $eq: { owner: 'u1' } } });
    expect(q.compile('read', vars({ me: { id: 'x', teams: ['u1', 'u9'] } }))).toEqual({ owner: { $in: ['u1', 'u9'] } });
    expect(q.allows('read', vars({ me: { id: 'x', profile: { owner: 'u1' } } }), mine)).toBe(true);
  });

  it('variables only read own properties', () => {
    const r = rules({ owner: '@me.id' });
    expect(r.compile('read', vars({ me: Object.create({ id: 'u1' }) as Record<string, unknown> }))).toBe(false);
  });

  it('query-string text is coerced by the property type; a wrong type matches nothing', () => {
    const r = rules({ score: { $gte: '@query.min' } });
    expect(r.compile('read', vars({ query: { min: '3' } }))).toEqual({ score: { $gte: 3 } });
    expect(r.compile('read', vars({ query: { min: 'x' } }))).toBe(false);
    expect(r.compile('read', vars({ query: {} }))).toBe(false);
  });

  it('folds variable-only parts: roles, login checks, @now, @root', () => {
    const r = rules({ $or: [{ '@me.role': 'admin' }, { published: true }] });
    expect(r.compile('read', vars({ me: { id: 'a', role: 'admin' } }))).toBe(true);
    expect(r.compile('read', vars({ me: { id: 'a', role: 'user' } }))).toEqual({ published: true });
    expect(rules({ '@me': { $ne: null } }).compile('read', vars())).toBe(false);
    expect(rules({ '@me': { $ne: null } }).compile('read', vars({ me: { id: 'a' } }))).toBe(true);
    expect(rules({ '@me.id': { $exists: true } }).compile('read', vars())).toBe(false);
    expect(rules({ '@me.id': { $exists: false } }).compile('read', vars())).toBe(true);
    expect(rules({ '@now': { $gt: 500 } }).compile('read', vars())).toBe(true);
    expect(rules({ '@root': true }).compile('read', vars())).toBe(false);
    // An undefined variable compared in any way but $exists matches nothing, $ne included.
    expect(rules({ '@me.role': { $ne: 'admin' } }).compile('read', vars())).toBe(false);
    expect(rules({ $nor: [{ '@me.role': 'admin' }] }).compile('read', vars())).toBe(true);
  });

  it('$literal keeps a value that starts with @', () => {
    const r = rules({ title: { $literal: '@home' } });
    expect(r.compile('read', vars())).toEqual({ title: '@home' });
  });

  it('@new and @old compare the values of a write', () => {
    const r = AccessRules.parse({ rules: { update: { owner: '@me.id', '@new.owner': '@old.owner' } }, properties, file: 'f', me });
    const stored = { id: 'p', owner: 'u1' };
    expect(r.allows('update', vars({ me: { id: 'u1' }, old: stored, new: { ...stored, title: 'x' } }), stored)).toBe(true);
    expect(r.allows('update', vars({ me: { id: 'u1' }, old: stored, new: { ...stored, owner: 'u2' } }), stored)).toBe(false);
    expect(r.allows('update', vars({ me: { id: 'u2' }, old: stored, new: stored }), stored)).toBe(false);
  });

  it('a write rule can allow setting a property once (the docs recipe)', () => {
    const r = AccessRules.parse({ rules: {}, properties: { ...properties, owner: { type: 'string', write: { '@old.owner': { $exists: false } } } }, file: 'f', me });
    const created = { owner: 'u1' };
    expect(r.refusedWrite(vars({ new: created }), created, ['owner'])).toBeUndefined();
    const stored = { id: 'p', owner: 'u1' };
    expect(r.refusedWrite(vars({ old: stored, new: { ...stored, owner: 'u2' } }), stored, ['owner'])).toBe('owner');
    expect(r.refusedWrite(vars({ old: { id: 'q' }, new: { id: 'q', owner: 'u2' } }), { id: 'q' }, ['owner'])).toBeUndefined();
  });

  it('refuses bad rules with a RuleError naming the file and the rule', () => {
    expect(() => rules({ nope: 1 })).toThrow(RuleError);
    expect(() => rules({ nope: 1 })).toThrow('resources/t/config.json: rules.read: unknown property "nope"');
    expect(() => rules({ owner: { $gt: { $where: 1 } } })).toThrow('operator $where is not allowed inside a value');
    expect(() => rules({ 'meta.owner': '@me.id', 'title.x': 1 })).toThrow('unknown property "title.x"');
    expect(() => rules({ '@me.role.x': 'a' })).toThrow('role is a string, it has no properties');
    expect(() => rules({ '@query': 1 })).toThrow('name a property of @query');
  });
});

function ctxOf(user: Doc | undefined, extra: Partial<Context> = {}): Context {
  return {
    method: 'GET',
    originalMethod: 'GET',
    url: '/',
    parts: [],
    query: {},
    body: undefined,
    bodyKind: 'none',
    headers: {},
    session: { id: 's', isNew: false, uid: user?.id },
    me: user,
    isRoot: false,
    internal: false,
    scope: createRequestScope('127.0.0.1'),
    ...extra,
  };
}

describe.each(storeKinds())('the shared contract with rules ($name store)', (kind) => {
  let store: TestStore;
  let posts: Collection;
  const alice = { id: 'alice', role: 'writer' };
  const hr = { id: 'hanna', role: 'hr' };
  let docs: Doc[];

  beforeAll(async () => {
    store = await kind.make();
    posts = new Collection({
      path: '/posts',
      properties: { ...properties, salary: { type: 'number', read: { '@me.role': 'hr' }, write: false }, notes: { type: 'string', read: { owner: '@me.id' } } },
      store: store.store.collection('posts'),
      meProperties: me,
      rules: {
        list: { $or: [{ published: true }, { owner: '@me.id' }] },
        read: { $or: [{ published: true }, { owner: '@me.id' }] },
        update: { owner: '@me.id' },
        delete: false,
      },
    });
    await posts.init();
    const col = store.store.collection('posts');
    docs = [
      await col.insert({ id: 'a1', title: 'a-draft', owner: 'alice', published: false, salary: 1, notes: 'n1' }),
      await col.insert({ id: 'a2', title: 'a-pub', owner: 'alice', published: true, salary: 2, notes: 'n2' }),
      await col.insert({ id: 'b1', title: 'b-draft', owner: 'bob', published: false, salary: 3, notes: 'n3' }),
    ];
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('accessFilter is the rule compiled for the caller ({} for root and scripts)', () => {
    expect(posts.accessFilter(ctxOf(alice), 'list')).toEqual({ $or: [{ published: true }, { owner: 'alice' }] });
    expect(posts.accessFilter(ctxOf(undefined), 'read')).toEqual({ published: true });
    expect(posts.accessFilter(ctxOf(undefined, { isRoot: true }), 'list')).toEqual({});
    expect(posts.accessFilter(ctxOf(undefined, { internal: true }), 'list')).toEqual({});
  });

  it('readAs applies the list rule and the property read rules', async () => {
    const seen = await posts.readAs(ctxOf(alice), { $sort: { title: 1 } });
    expect(seen).toEqual([
      { id: 'a1', title: 'a-draft', owner: 'alice', published: false, notes: 'n1' },
      { id: 'a2', title: 'a-pub', owner: 'alice', published: true, notes: 'n2' },
    ]);
    expect((await posts.readAs(ctxOf(hr), {})).map((d) => [d.id, d.salary, d.notes])).toEqual([['a2', 2, undefined]]);
    await expect(posts.readAs(ctxOf(alice), { salary: 2 })).rejects.toMatchObject({ status: 400 });
  });

  it('showTo evaluates the read rule per object: null where a GET would 404', async () => {
    const shown = await posts.showTo(ctxOf(undefined), docs);
    expect(shown).toEqual([null, { id: 'a2', title: 'a-pub', owner: 'alice', published: true }, null]);
    const toBob = await posts.showTo(ctxOf({ id: 'bob', role: 'hr' }), docs);
    expect(toBob).toEqual([null, { id: 'a2', title: 'a-pub', owner: 'alice', published: true, salary: 2 }, { id: 'b1', title: 'b-draft', owner: 'bob', published: false, salary: 3, notes: 'n3' }]);
  });

  it('queryableFor leaves out what the caller may not filter on', () => {
    expect(Object.keys(posts.queryableFor(ctxOf(alice)))).not.toContain('salary');
    expect(Object.keys(posts.queryableFor(ctxOf(alice)))).not.toContain('notes');
    expect(Object.keys(posts.queryableFor(ctxOf(hr)))).toContain('salary');
    expect(Object.keys(posts.queryableFor(ctxOf(undefined, { isRoot: true })))).toContain('notes');
  });

  it('explainAccess answers each action and property for a user on an object', () => {
    const a1 = docs[0] as Doc;
    expect(posts.explainAccess(ctxOf(alice), a1)).toEqual({
      list: { allowed: true, rule: 'rules.list' },
      read: { allowed: true, rule: 'rules.read' },
      update: { allowed: true, rule: 'rules.update' },
      delete: { allowed: false, rule: 'rules.delete' },
      properties: expect.objectContaining({ salary: { read: false, write: false }, notes: { read: true, write: true }, title: { read: true, write: true } }) as unknown,
    });
    const asBob = posts.explainAccess(ctxOf({ id: 'bob' }), a1);
    expect([asBob.read.allowed, asBob.update.allowed, asBob.properties.notes?.read]).toEqual([false, false, false]);
    expect(posts.explainAccess(ctxOf(undefined, { isRoot: true }), a1).delete).toEqual({ allowed: true, rule: 'root' });
  });
});
