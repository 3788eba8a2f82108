import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, UserCollection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestClient, TestResponse, TestServer } from './helpers/http.js';

// Issue 38 item 4: a write rule answered whether a guess of a hidden value was right. The owner
// may update an object but may neither read nor write `pin`: a PUT sending the stored value
// answered 200 ("no change"), any other value 403. No answer of a write may depend on a value
// the caller may not read: not through "no change", a modifier ($pull, $addUnique, $inc), a
// cleared value, a relation's check or a required property.

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'dev' };

describe.each(storeKinds())('writes tell nothing of values the caller may not read ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let owner: TestClient;
  let ownerId: string;
  let doc: Obj;
  let thingA: Obj;
  let thingB: Obj;

  beforeAll(async () => {
    store = await kind.make();
    const users = new UserCollection({ path: '/users', properties: {}, store: store.store.collection('users'), passwordCost: 4, loginRateLimit: { max: 1000 } });
    const things = new Collection({ path: '/things', properties: { name: { type: 'string' } }, store: store.store.collection('things'), rules: { read: false, list: false } });
    const docs = new Collection({
      path: '/docs',
      store: store.store.collection('docs'),
      properties: {
        title: { type: 'string' },
        owner: { type: 'string' },
        kind: { type: 'string', write: false },
        pin: { type: 'number', read: false, write: false },
        tags: { type: 'array', read: false, write: false },
        code: { type: 'string', read: false },
        list: { type: 'array', read: false },
        link: { type: 'relation', collection: '/things', read: false },
        hiddenRequired: { type: 'string', required: true, read: false },
        note: { type: 'string', private: true, write: false },
      },
      rules: { update: { owner: '@me.id' } },
    });
    t = await startTestServer(store.store, [users, things, docs]);
    ownerId = ((await t.request('POST', '/users', { body: { username: 'owner', password: 'pw' }, headers: ROOT })).body as Obj).id;
    owner = t.client();
    expect((await owner.request('POST', '/users/login', { body: { username: 'owner', password: 'pw' } })).status).toBe(200);
    thingA = (await t.request('POST', '/things', { body: { name: 'a' }, headers: ROOT })).body as Obj;
    thingB = (await t.request('POST', '/things', { body: { name: 'b' }, headers: ROOT })).body as Obj;
    doc = (
      await t.request('POST', '/docs', {
        body: { title: 't', owner: ownerId, kind: 'k', note: 'private note', pin: 1234, tags: ['x', 'y'], code: 'c0de', list: ['p', 'q'], link: thingA.id, hiddenRequired: 'h' },
        headers: ROOT,
      })
    ).body as Obj;
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await store?.dispose();
  });

  const put = (body: object, id = doc.id): Promise<TestResponse> => owner.request('PUT', `/docs/${id}`, { body });
  const same = async (right: object, wrong: object): Promise<TestResponse> => {
    const a = await put(right);
    const b = await put(wrong);
    expect([a.status, a.body], `${JSON.stringify(right)} against ${JSON.stringify(wrong)}`).toEqual([b.status, b.body]);
    return a;
  };

  it('a property the caller may neither read nor write is refused whatever the value sent, the stored one included', async () => {
    expect((await same({ pin: 1234 }, { pin: 1111 })).status).toBe(403);
    // A private property is one the caller may not read (write: false: root only).
    expect((await same({ note: 'private note' }, { note: 'guess' })).status).toBe(403);
    expect((await put({ pin: 1234 })).body).toMatchObject({ message: 'forbidden by properties.pin.write' });
    expect((await same({ tags: ['x', 'y'] }, { tags: ['z'] })).status).toBe(403);
    expect((await same({ pin: { $inc: 0 } }, { pin: { $inc: 1 } })).status).toBe(403);
    // $pull of an element it holds or not, $addUnique of one it holds or not.
    expect((await same({ tags: { $pull: 'nothere' } }, { tags: { $pull: 'x' } })).status).toBe(403);
    expect((await same({ tags: { $addUnique: 'x' } }, { tags: { $addUnique: 'nothere' } })).status).toBe(403);
    expect((await same({ tags: { $pullAll: [] } }, { tags: { $pullAll: ['y'] } })).status).toBe(403);
    // Cleared: the answer does not say whether there was a value.
    const bare = (await t.request('POST', '/docs', { body: { owner: ownerId, hiddenRequired: 'h' }, headers: ROOT })).body as Obj;
    const cleared = await put({ pin: null });
    expect([cleared.status, cleared.body]).toEqual([(await put({ pin: null }, bare.id)).status, (await put({ pin: null }, bare.id)).body]);
    expect(cleared.status).toBe(403);
    expect((await t.request('GET', `/docs/${doc.id}`, { headers: ROOT })).body).toMatchObject({ pin: 1234, tags: ['x', 'y'] });
  });

  it('a property the caller may write but not read answers alike for the stored value and any other', async () => {
    expect((await same({ code: 'c0de' }, { code: 'guess' })).status).toBe(200);
    expect((await put({ code: 'c0de' })).body).not.toHaveProperty('code');
    expect((await same({ list: { $pull: 'nothere' } }, { list: { $pull: 'nothere2' } })).status).toBe(200);
    expect((await t.request('GET', `/docs/${doc.id}`, { headers: ROOT })).body).toMatchObject({ code: 'c0de' });
  });

  it("a relation the caller may not read: the stored id is checked like any other (the caller may not read either object)", async () => {
    const res = await same({ link: thingA.id }, { link: thingB.id });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ errors: { link: 'points to an object that does not exist' } });
    expect((await t.request('GET', `/docs/${doc.id}`, { headers: ROOT })).body).toMatchObject({ link: thingA.id });
    // A PUT that does not name it is not checked on it.
    expect((await put({ title: 'other' })).status).toBe(200);
  });

  it('a required property the caller may not read: a stored object lacking it answers as one holding it', async () => {
    const lacking = await store.store.collection('docs').insert({ id: 'lacking1', owner: ownerId, title: 'legacy' });
    const res = await owner.request('PUT', `/docs/${lacking.id}`, { body: { title: 'changed' } });
    expect([res.status, res.body]).toEqual([200, { id: 'lacking1', owner: ownerId, title: 'changed' }]);
    expect((await put({ title: 'changed' })).status).toBe(200);
    // Sent empty by the caller, it is the caller's own value: refused either way.
    expect((await owner.request('PUT', `/docs/${lacking.id}`, { body: { hiddenRequired: '' } })).body).toMatchObject({ errors: { hiddenRequired: 'is required' } });
    expect((await put({ hiddenRequired: '' })).body).toMatchObject({ errors: { hiddenRequired: 'is required' } });
  });

  it('a property the caller may read but not write: sending its stored value back is no change (whole objects sent back keep working)', async () => {
    const got = (await owner.request('GET', `/docs/${doc.id}`)).body as Obj;
    expect(got).toMatchObject({ kind: 'k' });
    expect(got).not.toHaveProperty('pin');
    expect((await put({ ...got, title: 'back' })).status).toBe(200);
    expect((await put({ kind: 'other' })).body).toMatchObject({ message: 'forbidden by properties.kind.write' });
  });
});
