import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 12: behaviours of Deployd 1.2 that apps rely on, on both stores.

type Obj = Record<string, unknown> & { id: string };

const files = {
  'app.json': { passwordCost: 4 },
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'resources/items/config.json': { type: 'Collection', properties: { name: { type: 'string' }, n: { type: 'number' } } },
  'resources/guarded/config.json': { type: 'Collection', properties: { name: { type: 'string' } } },
  'resources/guarded/delete.js': "cancelIf(this.name === 'keep', 'cannot delete ' + this.name, 403);\n",
};

describe.each(appStores())('Deployd 1.2 compatibility (%s store)', (store) => {
  let t: AppHandle;
  const root = { 'svc-ssh-key': 'any' };

  beforeAll(async () => {
    t = await runApp(files, { store });
  }, 30_000);
  afterAll(async () => {
    await t?.close();
  });

  async function post(path: string, body: object): Promise<Obj> {
    const res = await t.request('POST', path, body);
    expect(res.status).toBe(200);
    return res.body as Obj;
  }
  const q = (query: object) => `?${encodeURIComponent(JSON.stringify(query))}`;

  it('GET filters with an operator on id ($in, $ne, $nin)', async () => {
    const [a, b, c] = [await post('/items', { name: 'a' }), await post('/items', { name: 'b' }), await post('/items', { name: 'c' })];
    const names = (res: { body: unknown }) => (res.body as Obj[]).map((o) => o.name).sort();
    expect(names(await t.request('GET', `/items${q({ id: { $in: [a.id, c.id] } })}`))).toEqual(['a', 'c']);
    expect(names(await t.request('GET', `/items${q({ id: { $ne: b.id }, name: { $in: ['a', 'b', 'c'] } })}`))).toEqual(['a', 'c']);
    expect(names(await t.request('GET', `/items${q({ id: { $nin: [a.id, b.id] }, name: { $in: ['a', 'b', 'c'] } })}`))).toEqual(['c']);
    // A plain id still answers the object itself, and a non-string id in a write is still refused.
    expect((await t.request('GET', `/items${q({ id: a.id })}`)).body).toMatchObject({ name: 'a' });
    expect((await t.request('PUT', '/items', { id: { $ne: null }, name: 'x' })).status).toBe(400);
  });

  it('DELETE with an operator on id deletes every match', async () => {
    const made = [await post('/items', { name: 'del', n: 1 }), await post('/items', { name: 'del', n: 2 }), await post('/items', { name: 'stay', n: 3 })];
    const res = await t.request('DELETE', `/items${q({ id: { $in: [made[0]!.id, made[1]!.id] } })}`);
    expect(res.status).toBe(204);
    expect(((await t.request('GET', `/items${q({ name: { $in: ['del', 'stay'] } })}`)).body as Obj[]).map((o) => o.name)).toEqual(['stay']);
    expect((await t.request('DELETE', `/items${q({ id: { $in: ['nope'] } })}`)).status).toBe(404);
  });

  it('DELETE with {"id": {"$ne": null}} runs On Delete per object; a cancel keeps only its own object', async () => {
    for (const name of ['keep', 'go1', 'go2']) await post('/guarded', { name });
    const res = await t.request('DELETE', `/guarded${q({ id: { $ne: null } })}`);
    expect(res.status).toBe(204);
    expect(((await t.request('GET', '/guarded')).body as Obj[]).map((o) => o.name)).toEqual(['keep']);
    // Only the cancelled object left: its error is the answer.
    const again = await t.request('DELETE', `/guarded${q({ id: { $ne: null } })}`);
    expect(again.status).toBe(403);
    expect(again.body).toMatchObject({ message: 'cannot delete keep' });
    // Root skipping events deletes it.
    expect((await t.request('DELETE', `/guarded${q({ id: { $ne: null }, $skipEvents: true })}`, undefined, root)).status).toBe(204);
    expect((await t.request('GET', '/guarded')).body).toEqual([]);
  });

  it('POST /users {} reports both username and password', async () => {
    const res = await t.request('POST', '/users', {});
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ errors: { username: 'is required', password: 'is required' } });
    const onlyPassword = await t.request('POST', '/users', { username: 'ann' });
    expect((onlyPassword.body as { errors: object }).errors).toEqual({ password: 'is required' });
  });

  it('session ids are 128 hex characters (64 random bytes), anonymous and logged in', async () => {
    const anon = await fetch(`${t.url}/items`);
    expect(anon.headers.getSetCookie()[0]).toMatch(/^sid=[0-9a-f]{128};/);
    await post('/users', { username: 'sid-user', password: 'pw' });
    const login = await t.request('POST', '/users/login', { username: 'sid-user', password: 'pw' });
    expect(login.status).toBe(200);
    expect((login.body as { id: string }).id).toMatch(/^[0-9a-f]{128}$/);
  });
});
