import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, UserCollection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestClient, TestServer } from './helpers/http.js';

// Issue 24: declarative access rules, enforced inside Collection on every REST path, on both stores.

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'dev' };
const q = (query: object): string => `?${encodeURIComponent(JSON.stringify(query))}`;

const userProperties = { role: { type: 'string' as const }, team: { type: 'string' as const }, secret: { type: 'string' as const, read: { id: '@me.id' } } };

function users(store: TestStore): UserCollection {
  return new UserCollection({
    path: '/users',
    properties: userProperties,
    store: store.store.collection('users'),
    passwordCost: 4,
    loginRateLimit: { max: 1000 },
    rules: {
      list: { $or: [{ id: '@me.id' }, { '@me.role': 'admin' }] },
      read: { $or: [{ id: '@me.id' }, { '@me.role': 'admin' }] },
    },
  });
}

function posts(store: TestStore): Collection {
  return new Collection({
    path: '/posts',
    properties: {
      title: { type: 'string' },
      owner: { type: 'string', index: true },
      published: { type: 'boolean' },
      team: { type: 'string' },
      salary: { type: 'number', read: { '@me.role': 'hr' }, write: false },
      notes: { type: 'string', read: { owner: '@me.id' } },
      draftNote: { type: 'string', read: { published: { $ne: true } } },
      score: { type: 'number' },
    },
    store: store.store.collection('posts'),
    publicCount: true,
    meProperties: userProperties,
    rules: {
      list: { $or: [{ published: true }, { owner: '@me.id' }, { team: '@query.teamKey' }] },
      read: { $or: [{ published: true }, { owner: '@me.id' }] },
      create: { '@me.id': { $exists: true }, owner: '@me.id' },
      update: { owner: '@me.id', '@new.owner': '@old.owner' },
      delete: { $or: [{ owner: '@me.id' }, { '@me.role': 'admin' }] },
    },
  });
}

describe.each(storeKinds())('access rules ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let anon: TestClient;
  let alice: TestClient;
  let bob: TestClient;
  let hr: TestClient;
  let admin: TestClient;
  const ids: Record<string, string> = {};
  let aliceDraft: Obj;
  let alicePublished: Obj;
  let bobDraft: Obj;
  let ownerless: Obj;

  async function login(username: string, extra: Record<string, unknown> = {}): Promise<TestClient> {
    const made = await t.request('POST', '/users', { body: { username, password: 'pw', ...extra }, headers: ROOT });
    expect(made.status).toBe(200);
    ids[username] = (made.body as Obj).id;
    const client = t.client();
    expect((await client.request('POST', '/users/login', { body: { username, password: 'pw' } })).status).toBe(200);
    return client;
  }

  beforeAll(async () => {
    store = await kind.make();
    const offers = new Collection({
      path: '/offers',
      properties: { title: { type: 'string' }, until: { type: 'number' } },
      store: store.store.collection('offers'),
      rules: { list: { until: { $gt: '@now' } }, read: { until: { $gt: '@now' } }, create: false, update: false, delete: false },
    });
    t = await startTestServer(store.store, [users(store), posts(store), offers]);
    anon = t.client();
    alice = await login('alice', { role: 'writer', secret: 'alice-s' });
    bob = await login('bob', { role: 'writer', secret: 'bob-s' });
    hr = await login('hanna', { role: 'hr' });
    admin = await login('ada', { role: 'admin' });
    const make = async (client: TestClient, body: Record<string, unknown>): Promise<Obj> => {
      const res = await client.request('POST', '/posts', { body });
      expect(res.status).toBe(200);
      return res.body as Obj;
    };
    aliceDraft = await make(alice, { title: 'a-draft', owner: ids.alice, notes: 'a-notes', score: 1 });
    alicePublished = await make(alice, { title: 'a-pub', owner: ids.alice, published: true, notes: 'a-pub-notes', score: 2, draftNote: 'dn' });
    bobDraft = await make(bob, { title: 'b-draft', owner: ids.bob, notes: 'b-notes', team: 'red', score: 3 });
    // Root bypasses the rules: an object without owner, and one with a salary.
    ownerless = (await t.request('POST', '/posts', { body: { title: 'orphan', salary: 100, score: 4 }, headers: ROOT })).body as Obj;
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await store?.dispose();
  });

  const titles = (res: { body: unknown }): string[] => (res.body as Obj[]).map((p) => p.title as string).sort();

  describe('list', () => {
    it('filters lists by the rule: published or mine', async () => {
      expect(titles(await anon.request('GET', '/posts'))).toEqual(['a-pub']);
      expect(titles(await alice.request('GET', '/posts'))).toEqual(['a-draft', 'a-pub']);
      expect(titles(await bob.request('GET', '/posts'))).toEqual(['a-pub', 'b-draft']);
      expect(titles(await t.request('GET', '/posts', { headers: ROOT }))).toEqual(['a-draft', 'a-pub', 'b-draft', 'orphan']);
    });

    it('pages and counts within the rule', async () => {
      const page = await alice.request('GET', `/posts${q({ $sort: { score: -1 }, $limit: 1, $skip: 1 })}`);
      expect((page.body as Obj[]).map((p) => p.title)).toEqual(['a-draft']);
      expect((await alice.request('GET', '/posts/count')).body).toEqual({ count: 2 });
      expect((await anon.request('GET', '/posts/count')).body).toEqual({ count: 1 });
      expect((await anon.request('GET', `/posts/count${q({ title: 'a-draft' })}`)).body).toEqual({ count: 0 });
      expect((await t.request('GET', '/posts/count', { headers: ROOT })).body).toEqual({ count: 4 });
    });

    it('a filter ANDs with the rule (it never widens it)', async () => {
      expect(titles(await anon.request('GET', `/posts${q({ $or: [{ title: 'a-draft' }, { title: 'a-pub' }] })}`))).toEqual(['a-pub']);
      expect(titles(await anon.request('GET', `/posts${q({ owner: ids.alice })}`))).toEqual(['a-pub']);
    });

    it('@query values are values: an object there is no operator', async () => {
      expect(titles(await anon.request('GET', `/posts${q({ teamKey: 'red' })}`))).toEqual(['a-pub', 'b-draft']);
      expect(titles(await anon.request('GET', `/posts${q({ teamKey: { $ne: 'x' } })}`))).toEqual(['a-pub']);
      expect(titles(await anon.request('GET', `/posts${q({ teamKey: { $exists: true } })}`))).toEqual(['a-pub']);
      expect(titles(await anon.request('GET', `/posts${q({ teamKey: ['red'] })}`))).toEqual(['a-pub']);
    });

    it('an anonymous caller never matches {"owner": "@me.id"}, not even an object without owner', async () => {
      const listed = titles(await anon.request('GET', `/posts${q({ owner: { $exists: false } })}`));
      expect(listed).toEqual([]);
      expect((await anon.request('GET', `/posts/${ownerless.id}`)).status).toBe(404);
    });
  });

  describe('read one', () => {
    it('answers 404 for an object the read rule hides, as for a missing one', async () => {
      const hidden = await anon.request('GET', `/posts/${aliceDraft.id}`);
      const missing = await anon.request('GET', '/posts/nope');
      expect(hidden.status).toBe(404);
      expect(hidden.body).toEqual(missing.body);
      expect((await bob.request('GET', `/posts/${aliceDraft.id}`)).status).toBe(404);
      expect((await alice.request('GET', `/posts/${aliceDraft.id}`)).body).toMatchObject({ title: 'a-draft' });
      expect((await anon.request('GET', `/posts/${alicePublished.id}`)).body).toMatchObject({ title: 'a-pub' });
      expect((await anon.request('GET', `/posts${q({ id: aliceDraft.id })}`)).status).toBe(404);
    });
  });

  describe('create', () => {
    it('refuses an anonymous create with 403 naming the rule', async () => {
      const res = await anon.request('POST', '/posts', { body: { title: 'x' } });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ message: 'forbidden by rules.create' });
    });

    it('refuses creating an object owned by someone else; accepts one of mine', async () => {
      expect((await bob.request('POST', '/posts', { body: { title: 'x', owner: ids.alice } })).status).toBe(403);
      expect((await bob.request('POST', '/posts', { body: { title: 'x' } })).status).toBe(403);
      const mine = await bob.request('POST', '/posts', { body: { title: 'bob-2', owner: ids.bob } });
      expect(mine.status).toBe(200);
      expect((await bob.request('DELETE', `/posts/${(mine.body as Obj).id}`)).status).toBe(204);
    });
  });

  describe('update', () => {
    it('lets the owner change their object, but not its owner', async () => {
      const ok = await alice.request('PUT', `/posts/${alicePublished.id}`, { body: { title: 'a-pub' } });
      expect(ok.status).toBe(200);
      const steal = await alice.request('PUT', `/posts/${alicePublished.id}`, { body: { owner: ids.bob } });
      expect(steal.status).toBe(403);
      expect(steal.body).toMatchObject({ message: 'forbidden by rules.update' });
    });

    it("refuses another user's readable object with 403, and answers a hidden one as missing", async () => {
      const other = await bob.request('PUT', `/posts/${alicePublished.id}`, { body: { title: 'hacked' } });
      expect(other.status).toBe(403);
      const hidden = await bob.request('PUT', `/posts/${aliceDraft.id}`, { body: { title: 'hacked' } });
      const missing = await bob.request('PUT', '/posts/nope', { body: { title: 'hacked' } });
      expect(hidden.status).toBe(400);
      expect(hidden.body).toEqual(missing.body);
      expect((await t.request('GET', `/posts/${aliceDraft.id}`, { headers: ROOT })).body).toMatchObject({ title: 'a-draft' });
    });

    it('a modifier ($inc) is checked like any change', async () => {
      expect((await bob.request('PUT', `/posts/${alicePublished.id}`, { body: { score: { $inc: 1 } } })).status).toBe(403);
      expect((await alice.request('PUT', `/posts/${alicePublished.id}`, { body: { score: { $inc: 1 } } })).body).toMatchObject({ score: 3 });
      expect((await alice.request('PUT', `/posts/${alicePublished.id}`, { body: { score: { $inc: -1 } } })).status).toBe(200);
    });
  });

  describe('delete', () => {
    it('answers 404 for a hidden object, 403 naming the rule for a readable one; the owner and an admin may', async () => {
      const made = (await bob.request('POST', '/posts', { body: { title: 'del', owner: ids.bob, published: true } })).body as Obj;
      const hidden = await anon.request('DELETE', `/posts/${bobDraft.id}`);
      expect(hidden.status).toBe(404);
      const refused = await alice.request('DELETE', `/posts/${made.id}`);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ message: 'forbidden by rules.delete' });
      expect((await admin.request('DELETE', `/posts/${made.id}`)).status).toBe(204);
      expect((await t.request('GET', `/posts/${made.id}`, { headers: ROOT })).status).toBe(404);
    });

    it('a DELETE with a condition deletes only what the delete rule allows', async () => {
      const a = (await alice.request('POST', '/posts', { body: { title: 'bulk', owner: ids.alice, published: true } })).body as Obj;
      const b = (await bob.request('POST', '/posts', { body: { title: 'bulk', owner: ids.bob, published: true } })).body as Obj;
      const res = await alice.request('DELETE', `/posts${q({ id: { $in: [a.id, b.id] } })}`);
      expect(res.status).toBe(204);
      expect((await t.request('GET', `/posts/${a.id}`, { headers: ROOT })).status).toBe(404);
      expect((await t.request('GET', `/posts/${b.id}`, { headers: ROOT })).status).toBe(200);
      // Nothing deletable but something readable: 403; nothing readable: 404.
      expect((await alice.request('DELETE', `/posts${q({ id: { $in: [b.id] } })}`)).status).toBe(403);
      expect((await alice.request('DELETE', `/posts${q({ id: { $in: [bobDraft.id] } })}`)).status).toBe(404);
      expect((await bob.request('DELETE', `/posts/${b.id}`)).status).toBe(204);
    });
  });

  describe('property rules', () => {
    it('drops a property whose read rule the caller fails; root and the allowed role read it', async () => {
      const asAdmin = (await t.request('GET', `/posts/${ownerless.id}`, { headers: ROOT })).body as Obj;
      expect(asAdmin.salary).toBe(100);
      await t.request('PUT', `/posts/${alicePublished.id}`, { body: { salary: 5 }, headers: ROOT });
      expect((await alice.request('GET', `/posts/${alicePublished.id}`)).body).not.toHaveProperty('salary');
      expect((await hr.request('GET', `/posts/${alicePublished.id}`)).body).toMatchObject({ salary: 5 });
      expect((await anon.request('GET', '/posts')).body as Obj[]).toSatisfy((list: Obj[]) => list.every((p) => !('salary' in p)));
    });

    it('a per-object read rule shows the property on the objects it allows only', async () => {
      const mine = (await alice.request('GET', `/posts/${alicePublished.id}`)).body as Obj;
      expect(mine.notes).toBe('a-pub-notes');
      const theirs = (await bob.request('GET', `/posts/${alicePublished.id}`)).body as Obj;
      expect(theirs).not.toHaveProperty('notes');
      const listed = (await bob.request('GET', '/posts')).body as Obj[];
      expect(listed.find((p) => p.id === bobDraft.id)?.notes).toBe('b-notes');
      expect(listed.find((p) => p.id === alicePublished.id)).not.toHaveProperty('notes');
    });

    it('per-object rules are evaluated on the stored object: $fields cannot flip them', async () => {
      // draftNote is readable on unpublished objects only; leaving `published` out of the answer
      // must not make {"published": {"$ne": true}} hold.
      for (const fields of [{ draftNote: 1 }, { published: 0 }, { draftNote: 1, title: 1 }]) {
        for (const url of [`/posts/${alicePublished.id}${q({ $fields: fields })}`, `/posts${q({ id: alicePublished.id, $fields: fields })}`, `/posts${q({ $fields: fields })}`]) {
          const res = await alice.request('GET', url);
          expect(res.status, url).toBe(200);
          expect(res.text, url).not.toContain('"dn"');
        }
      }
      // The owner's unpublished draft shows it (the rule does hold there).
      await t.request('PUT', `/posts/${aliceDraft.id}`, { body: { draftNote: 'dd' }, headers: ROOT });
      expect((await alice.request('GET', `/posts/${aliceDraft.id}${q({ $fields: { draftNote: 1 } })}`)).body).toEqual({ id: aliceDraft.id, draftNote: 'dd' });
      const projected = (await alice.request('GET', `/posts/${alicePublished.id}${q({ $fields: { title: 1, notes: 1 } })}`)).body as Obj;
      expect(projected).toEqual({ id: alicePublished.id, title: 'a-pub', notes: 'a-pub-notes' });
    });

    it('write answers leave out what the caller may not read', async () => {
      const res = await alice.request('PUT', `/posts/${alicePublished.id}`, { body: { title: 'a-pub' } });
      expect(res.body).not.toHaveProperty('salary');
      expect(res.body).toMatchObject({ notes: 'a-pub-notes' });
    });

    it('a write rule refuses the change with 403 naming the property; root may', async () => {
      const res = await alice.request('PUT', `/posts/${alicePublished.id}`, { body: { salary: 1e6 } });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ message: 'forbidden by properties.salary.write', errors: { salary: 'forbidden by properties.salary.write' } });
      expect((await hr.request('POST', '/posts', { body: { title: 'x', owner: ids.hanna, salary: 1 } })).status).toBe(403);
      // Alice may not read the salary: sending its stored value is refused as any other value
      // (issue 38: a 200 told her the guess was right).
      expect((await alice.request('PUT', `/posts/${alicePublished.id}`, { body: { salary: 5, title: 'a-pub' } })).status).toBe(403);
      expect((await alice.request('PUT', `/posts/${alicePublished.id}`, { body: { title: 'a-pub' } })).status).toBe(200);
    });

    it('filters and sorts on a property the caller may not read are refused with 400; $fields leaves it out', async () => {
      const probes: object[] = [
        { salary: 5 },
        { salary: { $gt: 1 } },
        { salary: { $not: { $gt: 1 } } },
        { salary: { $in: [5] } },
        { salary: { $exists: true } },
        { $or: [{ title: 'x' }, { salary: 5 }] },
        { $nor: [{ salary: 5 }] },
        { $and: [{ salary: 5 }] },
        { $sort: { salary: 1 } },
        { notes: { $regex: '^a' } },
        { 'notes.x': 1 },
        { $sort: { notes: -1 } },
      ];
      for (const probe of probes) {
        const res = await alice.request('GET', `/posts${q(probe)}`);
        expect(res.status, JSON.stringify(probe)).toBe(400);
        expect((res.body as { message: string }).message).toMatch(/^(salary|notes) may not be queried$/);
        if (!('$sort' in probe)) expect((await alice.request('GET', `/posts/count${q(probe)}`)).status).toBe(400);
      }
      // $fields reveals nothing: a name the caller may not read is left out of it (issue 38).
      expect((await alice.request('GET', `/posts${q({ $fields: { salary: 1, title: 1 } })}`)).body).toEqual((await alice.request('GET', `/posts${q({ $fields: { title: 1 } })}`)).body);
      // $fields on a per-object readable property is harmless: allowed.
      expect((await alice.request('GET', `/posts${q({ $fields: { notes: 1 } })}`)).status).toBe(200);
      // Preconditions of PUT and DELETE are refused too.
      expect((await alice.request('PUT', `/posts/${alicePublished.id}${q({ salary: 5 })}`, { body: { title: 'a-pub' } })).status).toBe(400);
      expect((await alice.request('DELETE', `/posts/${alicePublished.id}${q({ salary: { $gt: 0 } })}`)).status).toBe(400);
      // The allowed role, and root, may filter.
      expect(titles(await hr.request('GET', `/posts${q({ salary: 5 })}`))).toEqual(['a-pub']);
      expect(titles(await t.request('GET', `/posts${q({ salary: 100 })}`, { headers: ROOT }))).toEqual(['orphan']);
    });
  });

  describe('@now and false', () => {
    it('@now is the request time; false is root only', async () => {
      const later = Date.now() + 3_600_000;
      const live = (await t.request('POST', '/offers', { body: { title: 'live', until: later }, headers: ROOT })).body as Obj;
      const gone = (await t.request('POST', '/offers', { body: { title: 'gone', until: Date.now() - 1000 }, headers: ROOT })).body as Obj;
      expect(titles(await anon.request('GET', '/offers'))).toEqual(['live']);
      expect((await anon.request('GET', `/offers/${gone.id}`)).status).toBe(404);
      expect((await alice.request('GET', `/offers/${live.id}`)).status).toBe(200);
      for (const [method, path, body] of [['POST', '/offers', { title: 'x' }], ['PUT', `/offers/${live.id}`, { title: 'x' }]] as const) {
        const res = await alice.request(method, path, { body });
        expect(res.status).toBe(403);
      }
      expect((await alice.request('DELETE', `/offers/${live.id}`)).body).toMatchObject({ message: 'forbidden by rules.delete' });
      expect((await t.request('DELETE', `/offers/${live.id}`, { headers: ROOT })).status).toBe(204);
    });
  });

  describe('users', () => {
    it('/me answers the user with the properties their read rules allow; the users rule hides others', async () => {
      const me = await alice.request('GET', '/users/me');
      expect(me.body).toMatchObject({ username: 'alice', secret: 'alice-s' });
      expect((await alice.request('GET', `/users/${ids.bob}`)).status).toBe(404);
      expect(((await alice.request('GET', '/users')).body as Obj[]).map((u) => u.username)).toEqual(['alice']);
      const asAdmin = (await admin.request('GET', `/users/${ids.bob}`)).body as Obj;
      expect(asAdmin.username).toBe('bob');
      expect(asAdmin).not.toHaveProperty('secret');
      expect((await anon.request('GET', '/users/me')).status).toBe(204);
      expect((await admin.request('GET', `/users${q({ secret: 'bob-s' })}`)).status).toBe(400);
    });
  });
});
