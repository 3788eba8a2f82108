import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, UserCollection, etagOf } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 42 item 1: ETag on GET by id, If-None-Match (304), If-Match on PUT and DELETE (412 with
// the object as the caller may read it), If-None-Match: * on POST (a create at a client's id).
// ETags are made from what the caller reads: a hidden property's change must not move them.

const ROOT = { 'svc-ssh-key': 'dev' };

describe.each(storeKinds())('conditional requests ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;

  beforeAll(async () => {
    store = await kind.make();
    const notes = new Collection({
      path: '/notes',
      store: store.store.collection('notes'),
      properties: { title: { type: 'string' }, n: { type: 'number' }, secret: { type: 'string', read: false }, parent: { type: 'string' } },
    });
    const users = new UserCollection({ path: '/users', store: store.store.collection('users'), properties: {}, passwordCost: 4 });
    t = await startTestServer(store.store, [notes, users]);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await store?.dispose();
  });

  const create = async (body: Record<string, unknown>): Promise<string> => {
    const res = await t.request('POST', '/notes', { body, headers: ROOT });
    expect(res.status).toBe(200);
    return (res.body as { id: string }).id;
  };

  it('GET by id answers an ETag of its body; If-None-Match with it answers 304, a change a new one', async () => {
    const id = await create({ title: 'a', n: 1 });
    const anon = t.client();
    const first = await anon.request('GET', `/notes/${id}`);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag');
    expect(etag).toBe(etagOf(first.text));
    // The at-once path (an anonymous visitor, no query) and the usual one (root) agree.
    const again = await anon.request('GET', `/notes/${id}`);
    expect(again.headers.get('etag')).toBe(etag);
    expect((await t.request('GET', `/notes/${id}?title=a`)).headers.get('etag')).toBe(etag);
    const cached = await anon.request('GET', `/notes/${id}`, { headers: { 'if-none-match': etag as string } });
    expect(cached.status).toBe(304);
    expect(cached.text).toBe('');
    expect(cached.headers.get('etag')).toBe(etag);
    expect((await anon.request('GET', `/notes/${id}`, { headers: { 'if-none-match': `"x", W/${etag}` } })).status).toBe(304);
    await t.request('PUT', `/notes/${id}`, { body: { n: 2 }, headers: ROOT });
    const changed = await anon.request('GET', `/notes/${id}`, { headers: { 'if-none-match': etag as string } });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ id, title: 'a', n: 2 });
    expect(changed.headers.get('etag')).not.toBe(etag);
  });

  it('GET /users/me revalidated by a browser (If-None-Match of its ETag) answers 304, not 204 "nobody signed in"', async () => {
    // Chromium keeps /users/me in its HTTP cache and sends If-None-Match on the next read: a 204
    // there told every other read of a signed-in page that its user had signed out.
    const user = t.client();
    expect((await user.request('POST', '/users', { body: { username: 'etag-me', password: 'pass-word-1' } })).status).toBe(200);
    expect((await user.request('POST', '/users/login', { body: { username: 'etag-me', password: 'pass-word-1' } })).status).toBe(200);
    const first = await user.request('GET', '/users/me');
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag') as string;
    expect(etag).toBe(etagOf(first.text));
    const cached = await user.request('GET', '/users/me', { headers: { 'if-none-match': etag } });
    expect(cached.status).toBe(304);
    expect(cached.headers.get('etag')).toBe(etag);
    // Another user's ETag, or none signed in, never answers 304.
    const other = t.client();
    expect((await other.request('POST', '/users', { body: { username: 'etag-other', password: 'pass-word-1' } })).status).toBe(200);
    expect((await other.request('POST', '/users/login', { body: { username: 'etag-other', password: 'pass-word-1' } })).status).toBe(200);
    expect((await other.request('GET', '/users/me', { headers: { 'if-none-match': etag } })).status).toBe(200);
    expect((await t.client().request('GET', '/users/me', { headers: { 'if-none-match': etag } })).status).toBe(204);
  });

  it('requests without conditional headers answer as before: no revision in any answer', async () => {
    const id = await create({ title: 'plain' });
    await t.request('PUT', `/notes/${id}`, { body: { title: 'plain 2' } });
    const one = await t.request('GET', `/notes/${id}`);
    expect(one.body).toEqual({ id, title: 'plain 2' });
    const list = (await t.request('GET', '/notes', { headers: ROOT })).text;
    expect(list).not.toContain('__svc');
    expect((await t.request('DELETE', `/notes/${id}`)).status).toBe(204);
  });

  it('PUT with If-Match: the current ETag applies, an old one answers 412 with the object as it is now', async () => {
    const id = await create({ title: 'b', n: 1 });
    const etag = (await t.request('GET', `/notes/${id}`)).headers.get('etag') as string;
    const ok = await t.request('PUT', `/notes/${id}`, { body: { n: 2 }, headers: { 'if-match': etag } });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ id, title: 'b', n: 2 });
    const stale = await t.request('PUT', `/notes/${id}`, { body: { n: 3 }, headers: { 'if-match': etag } });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ status: 412, current: { id, title: 'b', n: 2 } });
    expect(stale.headers.get('etag')).toBe(etagOf(JSON.stringify({ id, title: 'b', n: 2 })));
    expect((await t.request('GET', `/notes/${id}`)).body).toEqual({ id, title: 'b', n: 2 });
    expect((await t.request('PUT', `/notes/${id}`, { body: { n: 4 }, headers: { 'if-match': '*' } })).status).toBe(200);
    expect((await t.request('PUT', '/notes/nosuchobject0000', { body: { n: 4 }, headers: { 'if-match': etag } })).status).toBe(400);
  });

  it('DELETE with If-Match: an old ETag answers 412 and keeps the object, the current one deletes it', async () => {
    const id = await create({ title: 'c' });
    const etag = (await t.request('GET', `/notes/${id}`)).headers.get('etag') as string;
    await t.request('PUT', `/notes/${id}`, { body: { title: 'c2' } });
    const stale = await t.request('DELETE', `/notes/${id}`, { headers: { 'if-match': etag } });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ current: { id, title: 'c2' } });
    const now = (await t.request('GET', `/notes/${id}`)).headers.get('etag') as string;
    expect((await t.request('DELETE', `/notes/${id}`, { headers: { 'if-match': now } })).status).toBe(204);
    expect((await t.request('GET', `/notes/${id}`)).status).toBe(404);
  });

  it('a change of a property the caller may not read moves neither its ETag nor its If-Match, and 412 shows nothing of it', async () => {
    const id = await create({ title: 'd', secret: 's1' });
    const anon = t.client();
    const etag = (await anon.request('GET', `/notes/${id}`)).headers.get('etag') as string;
    await t.request('PUT', `/notes/${id}`, { body: { secret: 's2' }, headers: ROOT });
    const after = await anon.request('GET', `/notes/${id}`);
    expect(after.headers.get('etag')).toBe(etag);
    expect((await anon.request('GET', `/notes/${id}`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    // The revision moved (root's write); the caller's view did not: the write applies.
    expect((await anon.request('PUT', `/notes/${id}`, { body: { n: 1 }, headers: { 'if-match': etag } })).status).toBe(200);
    const stale = await anon.request('PUT', `/notes/${id}`, { body: { n: 2 }, headers: { 'if-match': etag } });
    expect(stale.status).toBe(412);
    expect(stale.text).not.toContain('s2');
    expect(stale.body).toMatchObject({ current: { id, title: 'd', n: 1 } });
    expect(((await t.request('GET', `/notes/${id}`, { headers: ROOT })).body as { secret: string }).secret).toBe('s2');
  });

  it('POST with If-None-Match: * creates at the id the client chose, and refuses one in use (412), never overwriting', async () => {
    const id = `client${Date.now().toString(36)}abcdefghij`.slice(0, 24);
    const made = await t.request('POST', '/notes', { body: { id, title: 'offline' }, headers: { 'if-none-match': '*' } });
    expect(made.status).toBe(200);
    expect(made.body).toEqual({ id, title: 'offline' });
    const again = await t.request('POST', '/notes', { body: { id, title: 'other' }, headers: { 'if-none-match': '*' } });
    expect(again.status).toBe(412);
    expect((await t.request('GET', `/notes/${id}`)).body).toEqual({ id, title: 'offline' });
    // A relation to it, made in the same offline batch, holds.
    const child = await t.request('POST', '/notes', { body: { id: `${id}-child`, parent: id }, headers: { 'if-none-match': '*' } });
    expect(child.status).toBe(200);
    for (const bad of ['short', 'has space in it 1234', '__proto__', 'x'.repeat(65)]) {
      const res = await t.request('POST', '/notes', { body: { id: bad, title: 'x' }, headers: { 'if-none-match': '*' } });
      expect(res.status).toBe(400);
    }
    // Without the header a POST naming an id updates it, as in Deployd.
    expect((await t.request('POST', '/notes', { body: { id, title: 'updated' } })).body).toEqual({ id, title: 'updated' });
  });

  it.skipIf(kind.name !== 'embedded')('of parallel PUTs with one If-Match, exactly one applies (compare-and-set)', async () => {
    const id = await create({ n: 0 });
    const etag = (await t.request('GET', `/notes/${id}`)).headers.get('etag') as string;
    const answers = await Promise.all(Array.from({ length: 10 }, (_v, i) => t.request('PUT', `/notes/${id}`, { body: { n: i + 1 }, headers: { 'if-match': etag } })));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 412)).toHaveLength(9);
    const winner = answers.find((a) => a.status === 200)?.body;
    expect((await t.request('GET', `/notes/${id}`)).body).toEqual(winner);
  });
});

// The ETag is a contract with @svc/client (its offline writes name a version by it): the values of
// the first implementation, pinned, whatever makes them faster.
describe('etagOf', () => {
  it('gives the same tags as ever (the client computes the same)', () => {
    expect(etagOf('')).toBe('"488bdcb81aee8d83"');
    expect(etagOf('{}')).toBe('"f6bbc27f5a56d1e7"');
    expect(etagOf('{"id":"bd5c6bd8c7260d63","title":"todo 0001","done":false,"n":5}')).toBe('"572a107a49b181ca"');
    expect(etagOf('{"t":"é€😀\\u2028"}')).toBe('"c3ffb81b9b68c499"');
    expect(etagOf('x'.repeat(1000))).toBe('"819a7942aee5273b"');
  });
});
