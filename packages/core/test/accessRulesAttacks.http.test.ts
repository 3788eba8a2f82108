import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, UserCollection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestClient, TestServer } from './helpers/http.js';

// Issue 24: an attack suite modelled on Parse Server's advisories, where protected data leaked
// through a side path the rules did not cover: query constraints on protected fields (every
// operator, $or, dotted paths, sort order, count), /me, $fields, write modifiers, preconditions,
// type confusion in request variables, and telling hidden objects from missing ones.

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'dev' };
const q = (query: object): string => `?${encodeURIComponent(JSON.stringify(query))}`;

describe.each(storeKinds())('access rules attacks ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let mallory: TestClient;
  let anon: TestClient;
  let victimId: string;
  let malloryId: string;
  let doc: Obj;
  let hidden: Obj;

  beforeAll(async () => {
    store = await kind.make();
    const userProps = {
      username: { type: 'string' as const, write: false },
      email: { type: 'string' as const, read: { id: '@me.id' } },
      role: { type: 'string' as const, write: { '@me.role': 'admin' } },
    };
    const users = new UserCollection({ path: '/users', properties: userProps, store: store.store.collection('users'), passwordCost: 4, loginRateLimit: { max: 1000 } });
    const docs = new Collection({
      path: '/docs',
      store: store.store.collection('docs'),
      publicCount: true,
      meProperties: userProps,
      properties: {
        title: { type: 'string' },
        owner: { type: 'string' },
        shared: { type: 'boolean' },
        secret: { type: 'string', read: false, write: false },
        pin: { type: 'number', read: false },
        tags: { type: 'array', read: { owner: '@me.id' }, write: { owner: '@me.id' } },
        meta: { type: 'object', read: false },
      },
      rules: { list: { shared: true }, read: { $or: [{ shared: true }, { owner: '@me.id' }] }, update: { owner: '@me.id' } },
    });
    t = await startTestServer(store.store, [users, docs]);
    const signUp = async (username: string, extra: Record<string, unknown>): Promise<string> =>
      ((await t.request('POST', '/users', { body: { username, password: 'pw', ...extra }, headers: ROOT })).body as Obj).id;
    victimId = await signUp('victim', { email: 'victim@example.com', role: 'admin' });
    malloryId = await signUp('mallory', { email: 'm@example.com', role: 'user' });
    mallory = t.client();
    await mallory.request('POST', '/users/login', { body: { username: 'mallory', password: 'pw' } });
    anon = t.client();
    await anon.request('GET', '/docs');
    doc = (await t.request('POST', '/docs', { body: { title: 'public', owner: victimId, shared: true, secret: 's3cr3t', pin: 1234, tags: ['x', 'y'], meta: { k: 'v' } }, headers: ROOT })).body as Obj;
    hidden = (await t.request('POST', '/docs', { body: { title: 'private', owner: victimId, shared: false, secret: 'other' }, headers: ROOT })).body as Obj;
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await store?.dispose();
  });

  it('no operator, logical branch, dotted path or sort tests a property the caller may not read', async () => {
    const probes: object[] = [
      { secret: 's3cr3t' },
      { secret: { $regex: '^s' } },
      { secret: { $regex: '^s', $options: 'i' } },
      { secret: { $ne: 'x' } },
      { secret: { $in: ['s3cr3t'] } },
      { secret: { $nin: ['x'] } },
      { secret: { $gt: 'r' } },
      { secret: { $lte: 't' } },
      { secret: { $exists: true } },
      { secret: { $not: { $regex: '^x' } } },
      { pin: { $gte: 1000 } },
      { pin: { $size: 0 } },
      { tags: { $all: ['x'] } },
      { tags: { $size: 2 } },
      { tags: { $elemMatch: { $eq: 'x' } } },
      { tags: 'x' },
      { 'meta.k': 'v' },
      { 'meta.k': { $exists: true } },
      { meta: { k: 'v' } },
      { $or: [{ title: 'nothing' }, { secret: 's3cr3t' }] },
      { $and: [{ title: 'public' }, { secret: 's3cr3t' }] },
      { $nor: [{ secret: 'x' }] },
      { $or: [{ $and: [{ pin: 1234 }] }] },
      { $sort: { pin: 1 } },
      { $sort: { 'meta.k': -1 } },
    ];
    for (const probe of probes) {
      for (const client of [anon, mallory]) {
        const res = await client.request('GET', `/docs${q(probe)}`);
        expect(res.status, JSON.stringify(probe)).toBe(400);
        expect(res.text).not.toContain('s3cr3t');
      }
      if (!('$sort' in probe)) {
        expect((await mallory.request('GET', `/docs/count${q(probe)}`)).status, JSON.stringify(probe)).toBe(400);
        // Preconditions of writes: no "did it match" answer either.
        expect((await mallory.request('PUT', `/docs/${doc.id}${q(probe)}`, { body: { title: 'x' } })).status, JSON.stringify(probe)).toBe(400);
        expect((await mallory.request('DELETE', `/docs/${doc.id}${q(probe)}`)).status, JSON.stringify(probe)).toBe(400);
      }
    }
    // Also on a GET by id, where the query is a condition on the one object.
    expect((await mallory.request('GET', `/docs/${doc.id}${q({ secret: 's3cr3t' })}`)).status).toBe(400);
    expect((await t.request('GET', `/docs/${doc.id}`)).status).toBe(200);
  });

  it('answers never hold an unreadable property, whatever the path', async () => {
    const answers = [
      await anon.request('GET', '/docs'),
      await anon.request('GET', `/docs/${doc.id}`),
      await mallory.request('GET', `/docs${q({ id: doc.id })}`),
      await mallory.request('GET', `/docs${q({ $fields: { title: 1 } })}`),
      await mallory.request('GET', `/docs${q({ $fields: { title: 0 } })}`),
      // $fields naming what the caller may not read: answered as without it (issue 38).
      await anon.request('GET', `/docs${q({ $fields: { secret: 1 } })}`),
      await mallory.request('GET', `/docs${q({ $fields: { meta: 1, title: 1 } })}`),
      await mallory.request('GET', `/docs/${doc.id}${q({ $fields: { secret: 1, pin: 1, 'meta.k': 1 } })}`),
    ];
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.text).not.toMatch(/s3cr3t|1234|"meta"|"tags"/);
    }
    // The owner reads tags (a per-object rule), root reads all.
    const victim = t.client();
    await victim.request('POST', '/users/login', { body: { username: 'victim', password: 'pw' } });
    expect((await victim.request('GET', `/docs/${doc.id}`)).body).toMatchObject({ tags: ['x', 'y'] });
    expect((await victim.request('GET', `/docs/${doc.id}`)).body).not.toHaveProperty('secret');
    expect((await t.request('GET', `/docs/${doc.id}`, { headers: ROOT })).body).toMatchObject({ secret: 's3cr3t', pin: 1234 });
  });

  it('a hidden object answers exactly as a missing one on every path', async () => {
    const pairs: [string, string, object | undefined][] = [
      ['GET', `/docs/${hidden.id}`, undefined],
      ['GET', `/docs${q({ id: hidden.id })}`, undefined],
      ['PUT', `/docs/${hidden.id}`, { title: 'x' }],
      ['POST', `/docs/${hidden.id}`, { title: 'x' }],
      ['PUT', '/docs', { id: hidden.id, title: 'x' }],
      ['DELETE', `/docs/${hidden.id}`, undefined],
      ['DELETE', `/docs${q({ id: hidden.id })}`, undefined],
    ];
    for (const [method, path, body] of pairs) {
      const res = await mallory.request(method, path, body === undefined ? {} : { body });
      const missingPath = path.replace(hidden.id, 'f'.repeat(hidden.id.length));
      const missing = await mallory.request(method, missingPath, body === undefined ? {} : { body: 'id' in body ? { ...body, id: 'f'.repeat(hidden.id.length) } : body });
      expect([res.status, res.body], `${method} ${path}`).toEqual([missing.status, missing.body]);
    }
    expect((await t.request('GET', `/docs/${hidden.id}`, { headers: ROOT })).body).toMatchObject({ title: 'private' });
  });

  it('write rules hold against modifiers and the values of other properties', async () => {
    const victim = t.client();
    await victim.request('POST', '/users/login', { body: { username: 'victim', password: 'pw' } });
    for (const body of [{ secret: 'x' }, { secret: null }, { tags: { $push: 'z' } }, { tags: ['z'] }]) {
      const res = await mallory.request('PUT', `/docs/${doc.id}`, { body });
      expect(res.status, JSON.stringify(body)).toBe(403);
    }
    // The owner may push tags but not set the secret (write: false is root only).
    expect((await victim.request('PUT', `/docs/${doc.id}`, { body: { tags: { $push: 'z' } } })).body).toMatchObject({ tags: ['x', 'y', 'z'] });
    const secret = await victim.request('PUT', `/docs/${doc.id}`, { body: { secret: 'mine' } });
    expect(secret.status).toBe(403);
    expect(secret.body).toMatchObject({ message: 'forbidden by properties.secret.write' });
    // Promoting oneself: the role's write rule needs an admin.
    const promote = await mallory.request('PUT', `/users/${malloryId}`, { body: { role: 'admin' } });
    expect(promote.status).toBe(403);
    expect((await t.request('GET', `/users/${malloryId}`, { headers: ROOT })).body).toMatchObject({ role: 'user' });
    // username keeps its own write rule (a UserCollection fixes only its type and index).
    expect((await mallory.request('PUT', `/users/${malloryId}`, { body: { username: 'victim2' } })).body).toMatchObject({ message: 'forbidden by properties.username.write' });
    expect((await mallory.request('PUT', `/users/${malloryId}`, { body: { email: 'm@example.com' } })).status).toBe(200);
  });

  it('/me shows the own email; no other user answer or filter reveals one', async () => {
    expect((await mallory.request('GET', '/users/me')).body).toMatchObject({ email: 'm@example.com' });
    expect((await mallory.request('GET', `/users/${victimId}`)).body).not.toHaveProperty('email');
    expect((await mallory.request('GET', '/users')).text).not.toContain('victim@example.com');
    for (const probe of [{ email: 'victim@example.com' }, { email: { $regex: '^v' } }, { $sort: { email: 1 } }]) {
      expect((await mallory.request('GET', `/users${q(probe)}`)).status).toBe(400);
    }
    // /me with a query: the same refusal (answered as "no user", 204, as any bad /me query).
    expect((await mallory.request('GET', `/users/me${q({ email: { $regex: '^m' } })}`)).status).toBe(204);
  });

  it('a logged-out caller is no owner of objects without owner', async () => {
    const orphan = (await t.request('POST', '/docs', { body: { title: 'orphan', shared: false }, headers: ROOT })).body as Obj;
    expect((await anon.request('GET', `/docs/${orphan.id}`)).status).toBe(404);
    expect((await anon.request('PUT', `/docs/${orphan.id}`, { body: { title: 'x' } })).status).toBe(400);
  });
});
