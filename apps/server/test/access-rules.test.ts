import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 24: access rules in config.json, checked at load (errors name the file, the rule and the
// bad part) and enforced with the app's scripts: On Get runs after the rules; scripts' own svc.*
// calls are trusted server code and bypass them.

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'any' };

const users = { type: 'UserCollection', properties: { role: { type: 'string' }, tags: { type: 'array' } } };
const posts = (rules: unknown, extra: Record<string, unknown> = {}): object => ({
  type: 'Collection',
  properties: { title: { type: 'string' }, owner: { type: 'string', index: true }, score: { type: 'number' }, published: { type: 'boolean' }, ...extra },
  rules,
});

describe('rules are checked when the app loads', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['unknown property', { 'resources/posts/config.json': posts({ read: { ownr: '@me.id' } }) }, 'resources/posts/config.json: rules.read: unknown property "ownr"'],
    ['unknown variable', { 'resources/posts/config.json': posts({ read: { owner: '@you.id' } }) }, 'resources/posts/config.json: rules.read: unknown variable @you.id'],
    ['@old outside update', { 'resources/posts/config.json': posts({ list: { owner: '@old.owner' } }) }, 'resources/posts/config.json: rules.list: @old.owner is not available in this rule'],
    ['type mismatch with me', { 'resources/posts/config.json': posts({ read: { score: '@me.id' } }) }, 'resources/posts/config.json: rules.read: score is a number, @me.id is a string'],
    ['type mismatch with a literal', { 'resources/posts/config.json': posts({ list: { published: 'yes' } }) }, 'resources/posts/config.json: rules.list: published is a boolean, "yes" is a string'],
    ['unknown property of me', { 'resources/posts/config.json': posts({ read: { owner: '@me.nickname' } }) }, 'resources/posts/config.json: rules.read: @me.nickname names no property of the user collection'],
    ["the user's password", { 'resources/posts/config.json': posts({ read: { owner: '@me.password' } }) }, 'rules.read: @me.password names no property of the user collection'],
    ['bad operator', { 'resources/posts/config.json': posts({ read: { owner: { $where: 'true' } } }) }, 'resources/posts/config.json: rules.read: owner: unknown operator $where'],
    ['bad top-level operator', { 'resources/posts/config.json': posts({ read: { $where: 'true' } }) }, 'rules.read: unknown operator $where'],
    ['unknown action', { 'resources/posts/config.json': posts({ view: true }) }, 'resources/posts/config.json: unknown rule "view" (rules are list, read, create, update, delete)'],
    ['not a rule', { 'resources/posts/config.json': posts({ read: 'owner' }) }, 'rules.read: a rule is true, false or a query object, not a string'],
    ['a variable regex', { 'resources/posts/config.json': posts({ list: { title: { $regex: '@query.q' } } }) }, 'rules.list: title: $regex takes a literal string (no variables)'],
    ['$in of a string', { 'resources/posts/config.json': posts({ list: { owner: { $in: '@me.role' } } }) }, 'rules.list: owner: $in needs an array, @me.role is a string'],
    ['a property rule', { 'resources/posts/config.json': posts(undefined, { secret: { type: 'string', read: { nope: 1 } } }) }, 'resources/posts/config.json: properties.secret.read: unknown property "nope"'],
    ['password rules', { 'resources/users/config.json': { ...users, properties: { ...users.properties, password: { type: 'string', read: true } } } }, 'resources/users/config.json: properties.password: the password takes no read or write rule'],
  ];
  it.each(cases)('%s', async (_name, files, message) => {
    const outcome = await runApp({ 'resources/users/config.json': users, ...files }).then(
      async (t) => {
        await t.close();
        return 'loaded';
      },
      (err: Error) => err.message,
    );
    expect(outcome).toContain(message);
  });

  it('accepts the recipes of docs/access-rules.md', async () => {
    const t = await runApp({
      'resources/users/config.json': users,
      'resources/posts/config.json': posts(
        {
          list: { $or: [{ published: true }, { owner: '@me.id' }] },
          read: { $or: [{ published: true }, { owner: '@me.id' }, { '@me.tags': 'editor' }] },
          create: { '@me': { $ne: null }, owner: '@me.id' },
          update: { owner: '@me.id', '@new.owner': '@old.owner', '@now': { $gt: 0 } },
          delete: { $or: [{ owner: '@me.id' }, { '@me.role': { $in: ['admin', 'moderator'] } }] },
        },
        { salary: { type: 'number', read: { '@me.role': 'hr' }, write: false }, code: { type: 'string', read: { title: { $literal: '@open' } } } },
      ),
    });
    await t.close();
  });
});

describe.each(appStores())('rules with scripts (%s store)', (store) => {
  let t: AppHandle;
  let alice: AppHandle['request'];
  let aliceId: string;
  let draft: Obj;

  beforeAll(async () => {
    t = await runApp(
      {
        'resources/users/config.json': users,
        'resources/posts/config.json': posts({ list: { $or: [{ published: true }, { owner: '@me.id' }] }, read: { $or: [{ published: true }, { owner: '@me.id' }] }, create: { owner: '@me.id' } }),
        // On Get runs after the rules, on the objects they let through only.
        'resources/posts/get.js': "this.seenBy = me ? me.username : 'nobody';\n",
        // Scripts' own calls are trusted: this one reads a draft the caller may not read.
        'resources/peek/config.json': { type: 'Collection', properties: { of: { type: 'string' }, title: { type: 'string' } } },
        'resources/peek/post.js': 'var post = await svc.posts.get(this.of);\nthis.title = post ? post.title : null;\n',
      },
      { store },
    );
    aliceId = ((await t.request('POST', '/users', { username: 'alice', password: 'pw' })).body as Obj).id;
    alice = t.client();
    await alice('POST', '/users/login', { username: 'alice', password: 'pw' });
    draft = (await alice('POST', '/posts', { title: 'draft', owner: aliceId })).body as Obj;
  }, 30_000);
  afterAll(async () => {
    await t?.close();
  });

  it('On Get runs after the rules', async () => {
    expect((await alice('GET', `/posts/${draft.id}`)).body).toMatchObject({ title: 'draft', seenBy: 'alice' });
    const anon = t.client();
    expect((await anon('GET', '/posts')).body).toEqual([]);
    expect((await anon('GET', `/posts/${draft.id}`)).status).toBe(404);
  });

  it("scripts' svc.* calls bypass the rules; root does too", async () => {
    const anon = t.client();
    const made = await anon('POST', '/peek', { of: draft.id });
    expect(made.body).toMatchObject({ title: 'draft' });
    expect((await t.request('GET', `/posts/${draft.id}`, undefined, ROOT)).body).toMatchObject({ title: 'draft', seenBy: 'nobody' });
    const created = await t.request('POST', '/posts', { title: 'by root' }, ROOT);
    expect(created.status).toBe(200);
  });
});
