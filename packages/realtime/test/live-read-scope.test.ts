import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Socket } from 'socket.io-client';
import { Collection, UserCollection } from '@svc/core';
import type { LiveMessage } from '@svc/realtime';
import { HttpClient, collect, makeStore, serveWithRealtime, settle, signUpAndLogin, until } from './helpers.js';
import type { RtServer, SharedStore } from './helpers.js';
import { rootRequest, subscribe } from './liveHelpers.js';

// Issue 39: a live query's snapshot and events, and an emit of objects, are shown through the
// read scope of the one function (Visibility.scope): made once per subscription, made anew when
// its user changes (a rule that reads `me`) or its collection's rules do; a session that ends
// stops receiving. What a per-property rule or `private` hides is hidden as a GET of the same
// caller hides it.

type Obj = Record<string, unknown> & { id: string };

const TODO_PROPERTIES = {
  title: { type: 'string' },
  owner: { type: 'string' },
  rank: { type: 'number' },
  secret: { type: 'string', private: true },
  note: { type: 'string', read: { owner: '@me.id' } },
  salary: { type: 'number', read: { '@me.role': 'hr' } },
} as const;

describe('live queries and emits take the subscription\'s read scope', () => {
  let shared: SharedStore;
  let rt: RtServer;
  let users: UserCollection;
  let todos: Collection;
  const sockets: Socket[] = [];
  let uma: HttpClient;
  let umaId: string;
  let vic: HttpClient;
  let n = 0;

  const makeTodos = (properties: Collection['properties']): Collection => new Collection({ path: '/todos', properties, store: shared.store.collection('todos') });

  beforeAll(async () => {
    shared = await makeStore();
    users = new UserCollection({ path: '/users', properties: { name: { type: 'string' }, role: { type: 'string' } }, store: shared.store.collection('users'), passwordCost: 4 });
    todos = makeTodos(TODO_PROPERTIES as unknown as Collection['properties']);
    rt = await serveWithRealtime(shared.store, [users, todos]);
    uma = new HttpClient(rt.url);
    umaId = await signUpAndLogin(uma, 'uma');
    vic = new HttpClient(rt.url);
    await signUpAndLogin(vic, 'vic');
  }, 60_000);
  afterAll(async () => {
    for (const s of sockets) s.close();
    await rt?.close();
    await shared?.dispose();
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  async function socketOf(client: HttpClient): Promise<Socket> {
    const socket = await client.socket();
    sockets.push(socket);
    return socket;
  }

  async function create(body: Record<string, unknown>): Promise<Obj> {
    const res = await rootRequest(rt.url, 'POST', '/todos', { title: `t${++n}`, owner: umaId, secret: 's', note: 'n', salary: 100, rank: n, ...body });
    expect(res.status).toBe(200);
    return res.body as Obj;
  }

  /** A script's emit of a todo, as `emit('news', this)` in an event script makes it. */
  async function emitTodos(stored: Obj): Promise<void> {
    if (rt.realtime.emitObjects === undefined) throw new Error('this transport emits no objects');
    await rt.realtime.emitObjects('/todos', 'news', stored);
  }

  /** The objects of the messages that carry one, by id. */
  const objects = (messages: readonly LiveMessage[]): Obj[] => messages.flatMap((m) => ('object' in m && m.object ? [m.object as Obj] : 'objects' in m ? (m.objects as Obj[]) : []));

  it('one read scope for a subscription\'s snapshot and all its events', async () => {
    await create({});
    const socket = await socketOf(uma);
    const visibility = (rt.server.resources.find((r) => r.path === '/todos') as unknown as { visibility: object }).visibility;
    const made = vi.spyOn(Object.getPrototypeOf(visibility) as { newScope: (ctx: unknown) => unknown }, 'newScope');
    const { answer, messages } = await subscribe(socket, { id: 'once', path: '/todos', query: { owner: umaId }, snapshot: true });
    expect(answer.ok).toBe(true);
    for (let i = 0; i < 3; i++) await create({});
    await until(() => messages.length === 4);
    // The subscription's contexts are realtime's (showing); the root writes make their own.
    const mine = made.mock.calls.filter(([ctx], i) => made.mock.contexts[i] === visibility && (ctx as { showing?: boolean }).showing === true).length;
    expect(mine).toBe(1);
  });

  it('hides what a GET of the same caller hides: snapshot, events and emits (private, owner rule, a rule on @me.role)', async () => {
    const made = await create({});
    for (const client of [uma, vic]) {
      const socket = await socketOf(client);
      const news = collect(socket, 'news');
      const { messages } = await subscribe(socket, { id: `hide-${n}`, path: '/todos', query: { id: made.id }, snapshot: true });
      await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { rank: 1000 });
      await until(() => messages.length === 2);
      const shown = (await client.request('GET', `/todos/${made.id}`)).body as Obj;
      expect(shown.secret).toBeUndefined();
      expect(shown.salary).toBeUndefined();
      expect(shown.note).toBe(client === uma ? 'n' : undefined);
      const [snapshot, event] = objects(messages);
      expect({ ...snapshot, rank: 1000 }).toEqual(shown);
      expect(event).toEqual(shown);
      const stored = (await rootRequest(rt.url, 'GET', `/todos/${made.id}`)).body as Obj;
      await emitTodos(stored);
      await until(() => news.length === 1);
      expect(news[0]).toEqual(shown);
    }
  });

  it('a rule that reads @me applies as soon as the user changes, mid-subscription', async () => {
    const made = await create({});
    const socket = await socketOf(uma);
    const { messages } = await subscribe(socket, { id: 'me-rule', path: '/todos', query: { id: made.id } });
    await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { rank: 1 });
    await until(() => objects(messages).length === 1);
    expect(objects(messages)[0]?.salary).toBeUndefined();
    // Uma becomes hr: her subscription sees salaries from now on (a fresh snapshot tells so too).
    expect((await rootRequest(rt.url, 'PUT', `/users/${umaId}`, { role: 'hr' })).status).toBe(200);
    await until(() => messages.some((m) => m.type === 'snapshot'));
    await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { rank: 2 });
    await until(() => objects(messages).some((o) => o.rank === 2));
    expect(objects(messages).find((o) => o.rank === 2)?.salary).toBe(100);
    // And back: no longer hr, no salary.
    expect((await rootRequest(rt.url, 'PUT', `/users/${umaId}`, { role: 'dev' })).status).toBe(200);
    await until(() => messages.filter((m) => m.type === 'snapshot').length === 2);
    await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { rank: 3 });
    await until(() => objects(messages).some((o) => o.rank === 3));
    expect(objects(messages).find((o) => o.rank === 3)?.salary).toBeUndefined();
  });

  it('a session that ends mid-subscription receives nothing more', async () => {
    const made = await create({});
    const wes = new HttpClient(rt.url);
    await signUpAndLogin(wes, 'wes');
    const socket = await socketOf(wes);
    const news = collect(socket, 'news');
    const { messages } = await subscribe(socket, { id: 'ends', path: '/todos', query: { id: made.id } });
    await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { rank: 1 });
    await until(() => messages.length === 1);
    await wes.request('POST', '/users/logout');
    await until(() => messages.some((m) => m.type === 'ended'));
    const count = messages.length;
    await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { rank: 2 });
    // The socket is anonymous now: an emit shows it what a visitor may read, never wes's view.
    const stored = (await rootRequest(rt.url, 'GET', `/todos/${made.id}`)).body as Obj;
    await emitTodos(stored);
    await until(() => news.length === 1);
    await settle(300);
    expect(messages).toHaveLength(count);
    expect(news[0]).toEqual((await new HttpClient(rt.url).request('GET', `/todos/${made.id}`)).body);
  });

  it('a changed rule applies to a subscription made before it', async () => {
    const made = await create({});
    const socket = await socketOf(uma);
    const { messages } = await subscribe(socket, { id: 'rule-change', path: '/todos', query: { id: made.id } });
    await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { rank: 1 });
    await until(() => objects(messages).length === 1);
    expect(objects(messages)[0]?.title).toBe(made.title);
    // The title is now hidden from everyone but root (the app reloaded with a new rule).
    todos = makeTodos({ ...(TODO_PROPERTIES as unknown as Collection['properties']), title: { type: 'string', read: false } } as Collection['properties']);
    await rt.server.replaceResources([users, todos]);
    // Writes through the new collection are heard once the live queries watch it (checked each second).
    for (let rank = 2; rank < 60 && objects(messages).length === 1; rank++) {
      await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { rank });
      await settle(200);
    }
    const latest = objects(messages).at(-1) as Obj;
    expect(latest.rank).toBeGreaterThan(1);
    expect(Object.hasOwn(latest, 'title')).toBe(false);
    expect(Object.hasOwn((await uma.request('GET', `/todos/${made.id}`)).body as Obj, 'title')).toBe(false);
  });
});
