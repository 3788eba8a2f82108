import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, UserCollection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

type Obj = Record<string, unknown> & { id: string };

// Deployd's router matched resource paths case-sensitively (a RegExp without the i flag): a
// public page under public/Apps/ is served beside a collection `apps`, and no other spelling of a
// resource's path reaches it.
describe.each(storeKinds())('resource paths are case-sensitive ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let publicDir: string;

  beforeAll(async () => {
    store = await kind.make();
    publicDir = await mkdtemp(join(tmpdir(), 'svc-public-'));
    await mkdir(join(publicDir, 'Apps', 'ThankYou'), { recursive: true });
    await writeFile(join(publicDir, 'Apps', 'ThankYou', 'index.html'), '<p>thank you</p>');
    const resources = [
      new Collection({ path: '/apps', properties: { name: { type: 'string' } }, store: store.store.collection('apps') }),
      new Collection({ path: '/todos', properties: { title: { type: 'string' } }, store: store.store.collection('todos') }),
      new UserCollection({ path: '/users', properties: {}, store: store.store.collection('users'), passwordCost: 4 }),
    ];
    t = await startTestServer(store.store, resources, { publicDir });
  });
  afterAll(async () => {
    await t.close();
    await store.dispose();
    await rm(publicDir, { recursive: true, force: true });
  });

  it('GET /Apps/ThankYou/index.html serves the public file although a collection apps exists', async () => {
    const page = await t.request('GET', '/Apps/ThankYou/index.html');
    expect(page.status).toBe(200);
    expect(page.text).toBe('<p>thank you</p>');
    const folder = await t.request('GET', '/Apps/ThankYou/');
    expect(folder.status).toBe(200);
    expect(folder.text).toBe('<p>thank you</p>');
    // The collection keeps its own path.
    const list = await t.request('GET', '/apps');
    expect(list.status).toBe(200);
    expect(list.body).toEqual([]);
  });

  it('another case of a collection path reaches nothing: 404, nothing read, written or deleted', async () => {
    const created = (await t.request('POST', '/todos', { body: { title: 'keep' } })).body as Obj;
    for (const [method, path, body] of [
      ['GET', '/Todos', undefined],
      ['GET', `/TODOS/${created.id}`, undefined],
      ['POST', '/Todos', { title: 'sneaked' }],
      ['PUT', `/Todos/${created.id}`, { title: 'changed' }],
      ['POST', `/todoS/${created.id}`, { title: 'changed' }],
      ['DELETE', `/Todos/${created.id}`, undefined],
      ['GET', `/Todos/count`, undefined],
    ] as const) {
      const res = await t.request(method, path, body === undefined ? {} : { body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body, `${method} ${path}`).toMatchObject({ status: 404 });
    }
    const all = (await t.request('GET', '/todos')).body as Obj[];
    expect(all).toEqual([{ id: created.id, title: 'keep' }]);
  });

  it('/USERS/me and /Users/login are not the user collection: 404, no login, no user', async () => {
    await t.request('POST', '/users', { body: { username: 'casey', password: 'secret' } });
    const c = t.client();
    const wrongLogin = await c.request('POST', '/Users/login', { body: { username: 'casey', password: 'secret' } });
    expect(wrongLogin.status).toBe(404);
    expect((await c.request('GET', '/users/me')).status).toBe(204);
    expect((await c.request('POST', '/users/login', { body: { username: 'casey', password: 'secret' } })).status).toBe(200);
    for (const path of ['/USERS/me', '/Users/me', '/users/../USERS/me']) {
      const res = await c.request('GET', path);
      expect(res.status, path).toBe(404);
      expect(JSON.stringify(res.body), path).not.toContain('casey');
    }
    const me = await c.request('GET', '/users/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ username: 'casey' });
    // A segment after the resource path keeps its case: /users/ME is an id, as in Deployd.
    expect((await c.request('GET', '/users/ME')).status).toBe(404);
  });
});

describe('resource paths differing in case only', () => {
  it('are refused at start, naming both', async () => {
    const kind = storeKinds()[0];
    if (kind === undefined) throw new Error('no store kind');
    const store = await kind.make();
    try {
      const a = new Collection({ path: '/todos', properties: {}, store: store.store.collection('todos') });
      const b = new Collection({ path: '/Todos', properties: {}, store: store.store.collection('todos2') });
      await expect(startTestServer(store.store, [a, b])).rejects.toThrow('two resources at /todos and /Todos (paths differing in case only)');
    } finally {
      await store.dispose();
    }
  });
});
