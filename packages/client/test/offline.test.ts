import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, UserCollection, createDiskFileStorage, createEmbeddedStore, createServer, silentLogger } from '@svc/core';
import type { Resource, SvcServer } from '@svc/core';
import { createRealtime } from '@svc/realtime';
import type { SocketRealtime } from '@svc/realtime';
import { createClient, fileStorage, memoryStorage } from '@svc/client';
import type { ReplicaEvents, ReplicaStorage, ResourceList, SvcClient } from '@svc/client';

// Issue 42: the local replica against a real server. The network is cut for real: the client is
// pointed at a closed port (connection refused), then back at the server.

const DEAD = 'http://127.0.0.1:1';
type Obj = Record<string, unknown> & { id: string };

describe('svc.offline: the local replica and its queued writes', () => {
  let dir: string;
  let server: SvcServer;
  let realtime: SocketRealtime;
  let url: string;
  const clients: SvcClient[] = [];
  const resources: ResourceList = [
    { path: '/sw', kind: 'collection', conflicts: 'server-wins' },
    { path: '/lww', kind: 'collection', conflicts: 'last-writer-wins' },
    { path: '/app', kind: 'collection', conflicts: 'app' },
    { path: '/guarded', kind: 'collection' },
    { path: '/users', kind: 'users' },
    { path: '/media', kind: 'collection' },
  ];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-offline-'));
    const store = await createEmbeddedStore({ dir: join(dir, 'data') });
    const props = { title: { type: 'string' as const }, note: { type: 'string' as const }, n: { type: 'number' as const }, parent: { type: 'string' as const } };
    const list: Resource[] = [
      new Collection({ path: '/sw', properties: props, store: store.collection('sw'), conflicts: 'server-wins' }),
      new Collection({ path: '/lww', properties: props, store: store.collection('lww'), conflicts: 'last-writer-wins' }),
      new Collection({ path: '/app', properties: props, store: store.collection('app'), conflicts: 'app' }),
      new Collection({ path: '/guarded', properties: props, store: store.collection('guarded'), rules: { create: { title: { $ne: 'bad' } } } }),
      new UserCollection({ path: '/users', properties: {}, store: store.collection('users'), passwordCost: 4 }),
      new Collection({ path: '/media', properties: { title: { type: 'string' }, file: { type: 'file' } }, store: store.collection('media'), files: { storage: createDiskFileStorage(join(dir, 'files')), sweep: { intervalMs: 0 } } }),
    ];
    realtime = createRealtime();
    server = await createServer({ store, resources: list, logger: silentLogger });
    await realtime.attach(server);
    url = `http://127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await realtime?.close();
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const client = (): SvcClient => {
    const c = createClient(url, { resources });
    clients.push(c);
    return c;
  };
  const root = (): SvcClient => {
    const c = createClient(url, { resources, headers: { 'svc-ssh-key': 'dev' } });
    clients.push(c);
    return c;
  };
  const started = async (app: string, options: Parameters<SvcClient['offline']['start']>[0] = {}): Promise<SvcClient> => {
    const c = client();
    await c.offline.start({ app, storage: memoryStorage(), ...options });
    return c;
  };
  const users = (c: SvcClient) => (c as unknown as { users: { login(creds: object): Promise<unknown>; put(id: string, body: object): Promise<unknown> } }).users;
  const serverGet = async (path: string, id: string): Promise<unknown> => root()(path).get(id).catch((e: unknown) => (e as { status: number }).status);

  it('writes made offline apply at once, wait in order, and reach the server once, ids and relations kept', async () => {
    const svc = await started('order');
    const statuses: string[] = [];
    svc.offline.on('status', (s) => statuses.push(s));
    svc.setBaseUrl(DEAD);
    const a = (await svc('sw').post({ title: 'a' })) as Obj;
    expect(a.id).toMatch(/^[0-9a-f]{16}$/);
    const b = (await svc('sw').post({ title: 'b', parent: a.id })) as Obj;
    await svc('sw').put(a.id, { title: 'a2' });
    const c = (await svc('sw').post({ title: 'c' })) as Obj;
    await svc('sw').del(c.id);
    expect(await svc('sw').get(a.id)).toEqual({ id: a.id, title: 'a2' });
    expect(svc.offline.queued).toBe(5);
    expect(svc.offline.flags('sw', a.id)).toEqual({ pending: true, conflicted: false });
    expect(await serverGet('sw', a.id)).toBe(404);
    svc.setBaseUrl(url);
    await svc.offline.flush();
    expect(svc.offline.queued).toBe(0);
    expect(svc.offline.status).toBe('online');
    expect(statuses).toContain('syncing');
    expect(await serverGet('sw', a.id)).toEqual({ id: a.id, title: 'a2' });
    expect(await serverGet('sw', b.id)).toEqual({ id: b.id, title: 'b', parent: a.id });
    expect(await serverGet('sw', c.id)).toBe(404);
    // Sent once: flushing again sends nothing more.
    await svc.offline.flush();
    expect(((await root()('sw').get({})) as Obj[]).filter((o) => o.title === 'a2')).toHaveLength(1);
  });

  /** Two clients change one object while offline; A syncs first, then B. */
  const race = async (path: string, app: string, resolve?: (c: { local: Obj | null; server: Obj }) => Obj | null) => {
    const made = (await root()(path).post({ title: 't', note: 'n' })) as Obj;
    const a = await started(`${app}-a`);
    const b = await started(`${app}-b`, resolve ? { resolve: (c) => resolve(c as never) } : {});
    await a(path).get(made.id);
    await b(path).get(made.id);
    a.setBaseUrl(DEAD);
    b.setBaseUrl(DEAD);
    await a(path).put(made.id, { title: 'A', n: 1 });
    await b(path).put(made.id, { note: 'B' });
    const conflicts: ReplicaEvents['conflict'][] = [];
    b.offline.on('conflict', (c) => conflicts.push(c));
    a.setBaseUrl(url);
    await a.offline.flush();
    b.setBaseUrl(url);
    await b.offline.flush();
    return { id: made.id, b, conflicts, server: await serverGet(path, made.id) };
  };

  it('server-wins: the later client\'s write is dropped, its replica shows the server\'s object, flagged conflicted', async () => {
    const { id, b, conflicts, server } = await race('/sw', 'sw');
    expect(server).toEqual({ id, title: 'A', note: 'n', n: 1 });
    expect(await b('sw').get(id)).toEqual(server);
    expect(conflicts).toHaveLength(1);
    expect(conflicts[0]).toMatchObject({ policy: 'server-wins', result: server });
    expect(b.offline.flags('sw', id)).toEqual({ pending: false, conflicted: true });
  });

  it('last-writer-wins per property: the later client\'s changed properties over the server\'s object, the others kept', async () => {
    const { id, server, conflicts } = await race('/lww', 'lww');
    expect(server).toEqual({ id, title: 'A', note: 'B', n: 1 });
    expect(conflicts[0]?.policy).toBe('last-writer-wins');
  });

  it('app: the resolve callback gets the local and the server object and its merge is written', async () => {
    const { id, server } = await race('/app', 'app', ({ local, server: s }) => ({ ...s, note: `${String(local?.note)}+${String(s.title)}` }));
    expect(server).toEqual({ id, title: 'A', note: 'B+A', n: 1 });
  });

  it('a write the rules refuse is rolled back in the replica and reported with the server\'s error', async () => {
    const svc = await started('refused');
    const rejected: ReplicaEvents['rejected'][] = [];
    svc.offline.on('rejected', (r) => rejected.push(r));
    svc.setBaseUrl(DEAD);
    const bad = (await svc('guarded').post({ title: 'bad' })) as Obj;
    const good = (await svc('guarded').post({ title: 'good' })) as Obj;
    expect(await svc('guarded').get(bad.id)).toEqual(bad);
    svc.setBaseUrl(url);
    await svc.offline.flush();
    expect(rejected).toHaveLength(1);
    expect(rejected[0]?.error.status).toBe(403);
    expect(await svc('guarded').get(bad.id).catch((e: unknown) => (e as { status: number }).status)).toBe(404);
    expect(await serverGet('guarded', bad.id)).toBe(404);
    expect(await serverGet('guarded', good.id)).toEqual(good);
  });

  it('queued writes survive a restart of the client (file storage) and are sent by the next one', async () => {
    const storage = fileStorage(join(dir, 'replica'));
    const first = client();
    await first.offline.start({ app: 'reload', storage });
    first.setBaseUrl(DEAD);
    const made = (await first('sw').post({ title: 'kept' })) as Obj;
    first.close();
    const second = client();
    second.setBaseUrl(DEAD);
    await second.offline.start({ app: 'reload', storage });
    expect(second.offline.queued).toBe(1);
    expect(await second('sw').get(made.id)).toEqual(made);
    second.setBaseUrl(url);
    await second.offline.flush();
    expect(await serverGet('sw', made.id)).toEqual(made);
  });

  /** A storage whose saves stop landing once `killed` (the page died): what a reload then finds. */
  const killable = (): { storage: () => ReplicaStorage; kill(): void; revive(): void } => {
    const committed = new Map<string, string>();
    let dead = false;
    return {
      storage: () => ({
        load: (key) => Promise.resolve(committed.has(key) ? (JSON.parse(committed.get(key) as string) as unknown) : undefined),
        save: (key, value) => (dead || committed.set(key, JSON.stringify(value)), Promise.resolve()),
        remove: (key) => (dead || committed.delete(key), Promise.resolve()),
      }),
      kill: () => void (dead = true),
      revive: () => void (dead = false),
    };
  };

  const live = (c: SvcClient) => (c as unknown as { sw: { subscribe(query: object, fn: (event: unknown, list: Obj[]) => void): () => void } }).sw;

  it('a live query\'s answer is saved at once: a page killed right after it shows the objects offline on reload', async () => {
    const made = (await root()('sw').post({ title: 'seen once online' })) as Obj;
    const saved = killable();
    const first = client();
    await first.offline.start({ app: 'seen', storage: saved.storage() });
    await new Promise<void>((resolve) => {
      live(first).subscribe({}, (_e, list) => {
        if (list.some((o) => o.id === made.id)) resolve();
      });
    });
    saved.kill();
    first.close();
    saved.revive();
    const second = client();
    second.setBaseUrl(DEAD);
    await second.offline.start({ app: 'seen', storage: saved.storage() });
    const shown = await new Promise<Obj[]>((resolve) => live(second).subscribe({}, (_e, list) => resolve(list)));
    expect(shown.map((o) => o.id)).toContain(made.id);
  });

  it('a page killed during a sync sends no acknowledged write again after its reload, only the one in flight (whose answer it missed)', async () => {
    const saved = killable();
    const storage = saved.storage;
    const first = client();
    await first.offline.start({ app: 'killed', storage: storage() });
    first.setBaseUrl(DEAD);
    const x = (await first('sw').post({ title: 'x1' })) as Obj;
    await first('sw').put(x.id, { title: 'x2' });
    await first('sw').put(x.id, { title: 'x3' });
    const y = (await first('sw').post({ title: 'y1' })) as Obj;
    await first('sw').put(y.id, { title: 'y2' });
    const z = (await first('sw').post({ title: 'z' })) as Obj;
    expect(first.offline.queued).toBe(6);
    // Four writes acknowledged, then the page dies: the fourth's acknowledgement is not kept.
    first.offline.on('queued', (n) => {
      if (n !== 2) return;
      saved.kill();
      first.setBaseUrl(DEAD);
    });
    first.setBaseUrl(url);
    await first.offline.flush();
    expect(first.offline.queued).toBe(2);
    first.close();

    const second = client();
    second.setBaseUrl(DEAD);
    saved.revive();
    await second.offline.start({ app: 'killed', storage: storage() });
    expect(second.offline.queued).toBe(3);
    expect(await second('sw').get(x.id)).toEqual({ id: x.id, title: 'x3' });
    const events: string[] = [];
    second.offline.on('rejected', (r) => events.push(`rejected ${r.write.id}`));
    second.offline.on('conflict', (c) => events.push(`conflict ${c.id}`));
    const sent: string[] = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      if (init?.method !== undefined && init.method !== 'GET' && String(input).startsWith(url)) sent.push(`${init.method} ${String(input).slice(url.length)}`);
      return realFetch(input, init);
    };
    try {
      second.setBaseUrl(url);
      await second.offline.flush();
    } finally {
      globalThis.fetch = realFetch;
    }
    expect(events).toEqual([]);
    // y's create again (its answer was lost: settled as done by its 412), then the two never sent.
    expect(sent).toEqual(['POST /sw', `PUT /sw/${y.id}`, 'POST /sw']);
    expect(second.offline.queued).toBe(0);
    expect(await serverGet('sw', x.id)).toEqual({ id: x.id, title: 'x3' });
    expect(await serverGet('sw', y.id)).toEqual({ id: y.id, title: 'y2' });
    expect(await serverGet('sw', z.id)).toEqual(z);
  });

  it('writes queued by a user whose session ended (password changed) wait for that user, never sent as another session', async () => {
    const signup = client();
    const alice = (await signup('users').post({ username: `alice${Date.now()}`, password: 'first-pass-1' })) as Obj;
    const svc = client();
    await users(svc).login({ username: alice.username, password: 'first-pass-1' });
    await svc.offline.start({ app: 'session', storage: memoryStorage() });
    svc.setBaseUrl(DEAD);
    const note = (await svc('sw').post({ title: 'as alice' })) as Obj;
    // Meanwhile her password changes elsewhere: her other sessions end.
    const other = client();
    await users(other).login({ username: alice.username, password: 'first-pass-1' });
    await users(other).put(alice.id, { password: 'second-pass-2' });
    svc.setBaseUrl(url);
    await svc.offline.flush();
    expect(svc.offline.status).toBe('signed-out');
    expect(svc.offline.queued).toBe(1);
    expect(await serverGet('sw', note.id)).toBe(404);
    await users(svc).login({ username: alice.username, password: 'second-pass-2' });
    await svc.offline.flush();
    expect(svc.offline.queued).toBe(0);
    expect(await serverGet('sw', note.id)).toEqual(note);
  });

  it('a write with files goes to the server as it is, never into the queue (a file is not kept offline)', async () => {
    const svc = await started('files');
    const form = new FormData();
    form.append('$json', JSON.stringify({ title: 'with a file' }));
    form.append('file', new Blob(['hello']), 'h.txt');
    const made = (await svc('media').post(form)) as Obj;
    expect(made).toMatchObject({ title: 'with a file', file: { name: 'h.txt', size: 5, type: 'text/plain' } });
    expect(await serverGet('/media', made.id)).toMatchObject({ file: { name: 'h.txt' } });
    svc.setBaseUrl(DEAD);
    await expect(svc('media').post(form)).rejects.toMatchObject({ status: 0 });
    expect(svc.offline.queued).toBe(0);
  });
});
