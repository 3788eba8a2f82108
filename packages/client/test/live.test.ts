import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { createClient } from '@svc/client';
import type { CollectionDef, LiveEvent, ResourceList, SvcClient, Unsubscribe } from '@svc/client';
import { startClientTestServer, until } from './helpers.js';
import type { ClientTestServer } from './helpers.js';

interface Todo {
  id: string;
  title: string;
  done: boolean;
  n?: number;
}
interface Types {
  resources: { todos: CollectionDef<Todo> };
}
const resources: ResourceList = [{ path: '/todos', kind: 'collection' }];

describe('svc.<collection>.subscribe against a real server', () => {
  let t: ClientTestServer;
  const clients: { close(): void }[] = [];
  const client = (): SvcClient<Types> => {
    const c = createClient<Types>(t.url, { resources });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    t = await startClientTestServer();
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await t?.close();
  });

  it('is typed: the query by the item, events and objects as items, an unsubscribe back', () => {
    const svc = createClient<Types>('http://127.0.0.1:1', { resources });
    expectTypeOf(svc.todos.subscribe).parameter(0).toMatchTypeOf<{ done?: unknown; $sort?: { n?: 1 | -1 } }>();
    const stop = svc.todos.subscribe({ done: false }, (event, objects) => {
      expectTypeOf(event).toEqualTypeOf<LiveEvent<Todo>>();
      expectTypeOf(objects).toEqualTypeOf<readonly Todo[]>();
    });
    expectTypeOf(stop).toEqualTypeOf<Unsubscribe>();
    stop();
    svc.close();
  });

  it('keeps an ordered window ($sort, $limit) equal to what a GET answers, through every kind of change', async () => {
    const writer = client();
    for (const n of [5, 1, 9, 3]) await writer.todos.post({ title: `w${n}`, n, done: false });
    const svc = client();
    const query = { done: false, $sort: { n: 1 as const }, $limit: 3 };
    let objects: readonly Todo[] = [];
    const events: LiveEvent<Todo>[] = [];
    const stop = svc.todos.subscribe(query, (event, now) => {
      events.push(event);
      objects = now;
    });
    const titles = (): string[] => objects.map((o) => o.title);
    const expected = async (): Promise<string[]> => (await writer.todos.get(query)).map((o) => o.title);
    await until(() => events.length > 0);
    expect(titles()).toEqual(await expected());
    // In the window, past its end, moving out of it, leaving the filter, deleted from it.
    const two = await writer.todos.post({ title: 'w2', n: 2, done: false });
    await writer.todos.post({ title: 'w10', n: 10, done: false });
    const all = await writer.todos.get({});
    const one = all.find((o) => o.title === 'w1')!;
    await writer.todos.put(one.id, { n: 20 });
    await writer.todos.put(two.id, { done: true });
    const three = all.find((o) => o.title === 'w3')!;
    await writer.todos.del(three.id);
    const want = await expected();
    await until(() => JSON.stringify(titles()) === JSON.stringify(want));
    expect(titles()).toEqual(['w5', 'w9', 'w10']);
    expect(events.map((e) => e.type)).toContain('leave');
    stop();
  });

  it('resumes after the socket reconnects, with the writes it missed and no duplicates', async () => {
    const writer = client();
    const svc = client();
    const events: LiveEvent<Todo>[] = [];
    svc.todos.subscribe({ title: { $regex: '^rc' } }, (event) => events.push(event), { snapshot: false });
    await new Promise<void>((resolve) => svc.socketReady(resolve));
    await new Promise((r) => setTimeout(r, 100));
    await writer.todos.post({ title: 'rc1', done: false });
    await until(() => events.length === 1);
    // The connection drops (a network blip); the client reconnects by itself.
    (svc as unknown as { socket: { io: { engine: { close(): void } } } }).socket.io.engine.close();
    await writer.todos.post({ title: 'rc2', done: false });
    await writer.todos.post({ title: 'rc3', done: false });
    await until(() => events.length === 3, 10_000);
    await writer.todos.post({ title: 'rc4', done: false });
    await until(() => events.length === 4);
    await new Promise((r) => setTimeout(r, 150));
    expect(events.map((e) => (e.type === 'create' ? e.object.title : e.type))).toEqual(['rc1', 'rc2', 'rc3', 'rc4']);
  });

  it('tells the handler when the server refuses the query', async () => {
    const svc = client();
    const events: LiveEvent<Todo>[] = [];
    svc('todos');
    (svc.todos.subscribe as (q: unknown, h: (e: LiveEvent<Todo>) => void) => Unsubscribe)({ $where: 'true' }, (e) => events.push(e));
    await until(() => events.length === 1);
    expect(events[0]).toMatchObject({ type: 'error', error: { status: 400 } });
  });
});
