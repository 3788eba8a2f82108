import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { SvcPromise, createClient } from '@svc/client';
import type { CollectionDef, CustomDef, ResourceList, SessionInfo, SvcClient, SvcErrorBody, UserCollectionDef } from '@svc/client';
import { startClientTestServer, until } from './helpers.js';
import type { ClientTestServer, Echo } from './helpers.js';

interface Todo {
  id: string;
  title: string;
  done: boolean;
  n?: number;
  tags?: unknown[];
}
interface User {
  id: string;
  username: string;
  name?: string;
}
interface Types {
  resources: {
    todos: CollectionDef<Todo>;
    users: UserCollectionDef<User>;
    addfollower: CustomDef<'shout'>;
    'a/b': CollectionDef<{ id: string; x?: number }>;
  };
}
const resources: ResourceList = [
  { path: '/todos', kind: 'collection' },
  { path: '/users', kind: 'users' },
  { path: '/add-follower', kind: 'custom', methods: { shout: { method: 'POST', func: 'shout' } } },
  { path: '/a/b', kind: 'collection' },
];

describe('@svc/client in Node against a real server', () => {
  let t: ClientTestServer;
  const clients: { close(): void }[] = [];
  const client = (): SvcClient<Types> => {
    const c = createClient<Types>(t.url, { resources });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    t = await startClientTestServer();
    const root = createClient(t.url, { headers: { 'svc-ssh-key': 'dev' } });
    for (const username of ['ann', 'ben']) await root('users').post({ username, password: 'pw' });
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await t.close();
  });

  it('Collection shorthands: post, get(id), get(query), get(), put forms, post(id), del forms', async () => {
    const svc = client();
    const a = await svc.todos.post({ title: 'a', done: false, n: 1 });
    expectTypeOf(a).toEqualTypeOf<Todo>();
    expect(a).toMatchObject({ title: 'a', done: false, n: 1 });
    const b = await svc.todos.post({ title: 'b', done: true, n: 2, tags: ['x'] });
    expect(await svc.todos.get(a.id)).toEqual(a);
    expect((await svc.todos.get({ n: { $gt: 1 } })).map((x) => x.title)).toEqual(['b']);
    expect((await svc.todos.get({ tags: 'x' })).map((x) => x.title)).toEqual(['b']);
    expect((await svc.todos.get({ $sort: { n: -1 } })).map((x) => x.title)).toEqual(['b', 'a']);
    expect((await svc.todos.get()).length).toBe(2);
    expect(await svc.todos.put(a.id, { title: 'a2' })).toMatchObject({ id: a.id, title: 'a2' });
    expect(await svc.todos.put({ id: a.id, n: { $inc: 5 } })).toMatchObject({ n: 6 });
    expect(await svc.todos.put({ id: a.id, done: false }, { title: 'a3' })).toMatchObject({ title: 'a3' });
    await expect(svc.todos.put({ id: a.id, done: true }, { title: 'never' })).rejects.toMatchObject({ status: 400, message: 'No object exists that matches that query' });
    expect(await svc.todos.post(b.id, { title: 'b2' })).toMatchObject({ id: b.id, title: 'b2' });
    expect(await svc.todos.del(a.id)).toBeNull();
    expect(await svc.todos.del({ id: b.id })).toBeNull();
    expect(await svc.todos.get()).toEqual([]);
  });

  it('callbacks run asynchronously with (result) or (null, error); promises have fail(), also after then()', async () => {
    const svc = client();
    let sync = true;
    const ok = await new Promise<[unknown, unknown, boolean]>((resolve) => {
      void svc.todos.post({ title: 'cb', done: false }, (result, error) => resolve([result, error, sync]));
      sync = false;
    });
    expect(ok[0]).toMatchObject({ title: 'cb' });
    expect(ok[1]).toBeUndefined();
    expect(ok[2]).toBe(false);
    const failed = await new Promise<[unknown, SvcErrorBody | undefined]>((resolve) => {
      svc.todos.post({ done: true } as never, (result, error) => resolve([result, error])).fail(() => undefined);
    });
    expect(failed[0]).toBeNull();
    expect(failed[1]).toMatchObject({ status: 400, errors: { title: expect.any(String) as unknown } });
    const promise = svc.todos.get('no-such-id');
    expect(promise).toBeInstanceOf(SvcPromise);
    const chained = promise.then(() => 'found');
    expect(typeof chained.fail).toBe('function');
    expect(await chained.fail((e) => (e as SvcErrorBody).status)).toBe(404);
  });

  it('login keeps the session cookie between calls (Node), me and logout; bad credentials are 401', async () => {
    const svc = client();
    await expect(svc.users.login({ username: 'ann', password: 'nope' })).rejects.toMatchObject({ status: 401, statusCode: 401, message: 'bad credentials' });
    const session = await svc.users.login({ username: 'ann', password: 'pw' });
    expectTypeOf(session).toEqualTypeOf<SessionInfo>();
    expect(session).toMatchObject({ path: '/users', uid: expect.any(String) as unknown });
    const me = await svc.users.me();
    expect(me).toMatchObject({ username: 'ann', id: session.uid });
    expect(me).not.toHaveProperty('password');
    expect(await svc.users.logout()).toBeNull();
    expect(await svc.users.me()).toBeNull();
  });

  it("svc('<name>') gives get/post/put/del/exec: login through exec, me through get", async () => {
    const svc = client();
    const users = svc('users');
    expect(Object.keys(users).sort()).toEqual(['del', 'exec', 'get', 'post', 'put']);
    await users.exec('login', { username: 'ben', password: 'pw' });
    expect(await users.get('me')).toMatchObject({ username: 'ben' });
    await users.exec('logout');
    expect(await users.get('me')).toBeNull();
  });

  it('custom resources: dashes removed (svc.addfollower), methods, generic calls, ajax.headers', async () => {
    const svc = client();
    const echo = (await svc.addfollower.get('f', 'p', { a: 1, b: { $gt: 2 } })) as Echo;
    expect(echo).toMatchObject({ method: 'GET', url: '/f/p', query: { a: '1', b: { $gt: 2 } }, isRoot: false });
    expect(await svc.addfollower.shout('p', { loud: true })).toMatchObject({ method: 'POST', url: '/shout/p', body: { loud: true } });
    expect(await svc.addfollower.put('p', { n: 1 }, { v: 2 })).toMatchObject({ method: 'PUT', url: '/p', query: { n: 1 }, body: { v: 2 } });
    expect(await svc.addfollower.del('p', { n: 1 })).toMatchObject({ method: 'DELETE', url: '/p', query: { n: 1 } });
    expect(await svc('add-follower').exec('f', 'p', { v: 1 })).toMatchObject({ method: 'POST', url: '/f/p', body: { v: 1 } });
    svc.ajax.headers['svc-ssh-key'] = 'any key works in development';
    expect(await svc.addfollower.get()).toMatchObject({ isRoot: true });
  });

  it("nested resources through svc('a/b'); an untyped client maps any name to its path", async () => {
    const svc = client();
    const made = (await svc('a/b').post({ x: 3 })) as { id: string };
    expect(await svc('/a/b/').get(made.id)).toMatchObject({ x: 3 });
    const loose = createClient(t.url);
    clients.push(loose);
    expect(await loose.todos!.get({ title: 'none' })).toEqual([]);
    expect(await Promise.resolve(loose)).toBe(loose); // not a thenable
  });

  it('setBaseUrl sends later calls, and the socket with its listeners, to another server', async () => {
    const other = await startClientTestServer();
    try {
      const svc = client();
      const root = { headers: { 'svc-ssh-key': 'dev' } };
      await createClient(other.url, root)('todos').post({ title: 'on the other server' });
      const got: unknown[] = [];
      svc.on('moved', (d) => got.push(d));
      await new Promise<void>((resolve) => svc.socketReady(resolve));
      expect((await svc.todos.get()).map((x) => x.title)).not.toContain('on the other server');
      svc.setBaseUrl(`${other.url}/`);
      expect((await svc.todos.get()).map((x) => x.title)).toEqual(['on the other server']);
      await new Promise<void>((resolve) => svc.socketReady(resolve));
      other.realtime.emit('moved', 'from B');
      t.realtime.emit('moved', 'from A');
      await until(() => got.length >= 1);
      await new Promise((r) => setTimeout(r, 100));
      expect(got).toEqual(['from B']);
    } finally {
      await other.close();
    }
  });

  it('realtime: socketReady, on/once/off, collection-namespaced names', async () => {
    const svc = client();
    await new Promise<void>((resolve) => svc.socketReady(resolve));
    let immediate = false;
    svc.socketReady(() => (immediate = true));
    expect(immediate).toBe(true);
    const all: unknown[] = [];
    const once: unknown[] = [];
    const removed: unknown[] = [];
    const created: unknown[] = [];
    const gone = (d: unknown) => removed.push(d);
    svc.on('ping', (d) => all.push(d));
    svc.once('ping', (d) => once.push(d));
    svc.on('ping', gone);
    svc.off('ping', gone);
    svc.todos.on('create', (d) => created.push(d));
    t.realtime.emit('ping', 1);
    t.realtime.emit('ping', 2);
    t.realtime.emit('todos:create', { title: 'x' });
    await until(() => all.length === 2 && created.length === 1);
    expect([all, once, removed, created]).toEqual([[1, 2], [1], [], [{ title: 'x' }]]);
    svc.off('ping');
    svc.todos.off('create');
    t.realtime.emit('ping', 3);
    t.realtime.emit('todos:create', {});
    await new Promise((r) => setTimeout(r, 150));
    expect([all.length, created.length]).toEqual([2, 1]);
  });

  it('a user-targeted emit reaches the client whose user matches, after its login, and no other', async () => {
    const [ann, ben, anon] = [client(), client(), client()];
    for (const c of [ann, ben, anon]) await new Promise<void>((resolve) => c.socketReady(resolve));
    await ann.users.login({ username: 'ann', password: 'pw' });
    await ben.users.login({ username: 'ben', password: 'pw' });
    const got = [ann, ben, anon].map((c) => {
      const list: unknown[] = [];
      c.on('dm', (d) => list.push(d));
      return list;
    });
    await t.realtime.emitToUsers('/users', { username: 'ann' }, 'dm', 'for ann');
    await until(() => got[0]!.length === 1);
    await new Promise((r) => setTimeout(r, 150));
    expect(got).toEqual([['for ann'], [], []]);
    await ann.users.logout();
    await t.realtime.emitToUsers('/users', { username: 'ann' }, 'dm', 'after logout');
    await new Promise((r) => setTimeout(r, 150));
    expect(got[0]).toEqual(['for ann']);
  });
});
