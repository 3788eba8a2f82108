import { io as connectSocket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createServer, silentLogger } from '@svc/core';
import { SESSION_EVENT, createRealtime } from '@svc/realtime';
import type { SessionAck } from '@svc/realtime';
import { HttpClient, collect, makeStore, settle, signUpAndLogin, startRtServer, until } from './helpers.js';
import type { RtServer, SharedStore } from './helpers.js';

describe('@svc/realtime on one server', () => {
  let store: SharedStore;
  let t: RtServer;
  const sockets: { close(): void }[] = [];

  beforeAll(async () => {
    store = await makeStore();
    t = await startRtServer(store.store);
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await t.close();
    await store.store.close();
    await store.dispose();
  });

  async function open(client: HttpClient) {
    const socket = await client.socket();
    sockets.push(socket);
    return socket;
  }

  it('emit(msg, data) reaches every socket, anonymous or logged in', async () => {
    const anon = new HttpClient(t.url);
    const user = new HttpClient(t.url);
    await signUpAndLogin(user, 'all-1');
    const [a, b] = [await open(anon), await open(user)];
    const [gotA, gotB] = [collect(a, 'news'), collect(b, 'news')];
    t.realtime.emit('news', { n: 1 });
    t.realtime.emit('news');
    await until(() => gotA.length === 2 && gotB.length === 2);
    expect(gotA).toEqual([{ n: 1 }, undefined]);
    expect(gotB).toEqual([{ n: 1 }, undefined]);
  });

  it('emitToUsers reaches only the sockets of the matching users (cookie bound at the handshake)', async () => {
    const alice = new HttpClient(t.url);
    const bob = new HttpClient(t.url);
    const aliceId = await signUpAndLogin(alice, 'alice');
    await signUpAndLogin(bob, 'bob');
    const [a1, a2, b, anon] = [await open(alice), await open(alice), await open(bob), await open(new HttpClient(t.url))];
    const got = [a1, a2, b, anon].map((s) => collect(s, 'private'));
    await t.realtime.emitToUsers('/users', { id: aliceId }, 'private', 'for alice');
    await t.realtime.emitToUsers('users', { username: 'alice' }, 'private', 'again');
    await until(() => got[0]!.length === 2 && got[1]!.length === 2);
    await settle();
    expect(got).toEqual([['for alice', 'again'], ['for alice', 'again'], [], []]);
  });

  it('emitToUsers with a query matching nobody sends nothing; an unknown path is an error', async () => {
    const c = new HttpClient(t.url);
    await signUpAndLogin(c, 'nobody-1');
    const got = collect(await open(c), 'x');
    await t.realtime.emitToUsers('/users', { username: 'no-such-user' }, 'x', 1);
    await expect(t.realtime.emitToUsers('/todos', {}, 'x', 1)).rejects.toThrow(/not a user collection/);
    await expect(t.realtime.emitToUsers('/nope', {}, 'x', 1)).rejects.toThrow(/not a user collection/);
    await settle();
    expect(got).toEqual([]);
  });

  it('a socket opened on an anonymous session follows its login and logout (onSessionChange)', async () => {
    const c = new HttpClient(t.url);
    await c.request('GET', '/todos'); // an anonymous session, as a page's first request makes
    const socket = await open(c);
    const got = collect(socket, 'dm');
    const id = await signUpAndLogin(c, 'carol');
    await until(() => {
      void t.realtime.emitToUsers('/users', { id }, 'dm', 'hi');
      return got.length > 0;
    });
    await c.request('POST', '/users/logout');
    await settle();
    got.length = 0;
    await t.realtime.emitToUsers('/users', { id }, 'dm', 'after logout');
    await settle();
    expect(got).toEqual([]);
  });

  it(`'${SESSION_EVENT}' binds a socket to the session a login answered, and null unbinds it`, async () => {
    const c = new HttpClient(t.url);
    const socket = await open(c); // no cookie at all: not bound
    const got = collect(socket, 'dm');
    const id = await signUpAndLogin(c, 'dave');
    const ack = (await socket.timeout(2000).emitWithAck(SESSION_EVENT, c.sid)) as SessionAck;
    expect(ack).toEqual({ ok: true, uid: id });
    await t.realtime.emitToUsers('/users', { id }, 'dm', 'bound');
    await until(() => got.length === 1);
    expect(await socket.timeout(2000).emitWithAck(SESSION_EVENT, 'f'.repeat(64))).toEqual({ ok: false });
    expect(await socket.timeout(2000).emitWithAck(SESSION_EVENT, null)).toEqual({ ok: true });
    await t.realtime.emitToUsers('/users', { id }, 'dm', 'unbound');
    await settle();
    expect(got).toEqual(['bound']);
  });

  it('logging in as another user on the same session leaves the first user room', async () => {
    const c = new HttpClient(t.url);
    const first = await signUpAndLogin(c, 'erin');
    const socket = await open(c);
    const got = collect(socket, 'dm');
    const second = await signUpAndLogin(c, 'frank');
    await until(() => {
      void t.realtime.emitToUsers('/users', { id: second }, 'dm', 'frank');
      return got.length > 0;
    });
    await settle();
    got.length = 0;
    await t.realtime.emitToUsers('/users', { id: first }, 'dm', 'erin');
    await settle();
    expect(got).toEqual([]);
  });

  it('emits keep their order and reach polling sockets too (those take the Socket.IO path)', async () => {
    const ws = await open(new HttpClient(t.url));
    const polling = connectSocket(t.url, { transports: ['polling'], forceNew: true, reconnection: false });
    sockets.push(polling);
    await new Promise<void>((resolve) => polling.once('connect', () => resolve()));
    const [gotWs, gotPolling] = [collect(ws, 'seq'), collect(polling, 'seq')];
    // A binary payload cannot take the pre-encoded path: it goes through Socket.IO, in order.
    for (let i = 0; i < 200; i++) t.realtime.emit('seq', i % 50 === 7 ? { i, bin: Buffer.from([i]) } : i);
    await until(() => gotWs.length === 200 && gotPolling.length === 200, 5000);
    const order = (got: unknown[]) => got.map((x) => (typeof x === 'number' ? x : (x as { i: number }).i));
    const expected = Array.from({ length: 200 }, (_, i) => i);
    expect([order(gotWs), order(gotPolling)]).toEqual([expected, expected]);
  });

  it('broadcasts to websocket sockets skip engine.io packets (one pre-encoded frame written per recipient)', async () => {
    const socket = await open(new HttpClient(t.url));
    const [server] = await t.realtime.io!.in(socket.id!).fetchSockets();
    const local = t.realtime.io!.of('/').sockets.get(server!.id)!;
    let enginePackets = 0;
    local.conn.on('packetCreate', (packet: { type: string }) => {
      if (packet.type === 'message') enginePackets++;
    });
    const got = collect(socket, 'fast');
    for (let i = 0; i < 10; i++) t.realtime.emit('fast', i);
    local.emit('fast', 'direct'); // a socket's own emit goes through engine.io as before
    await until(() => got.length === 11);
    expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 'direct']);
    expect(enginePackets).toBe(1);
  });

  it('attach fails at once, naming the URL without its password, when Redis cannot be reached', async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createNetServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const other = await makeStore();
    const server = await createServer({ store: other.store, resources: [], logger: silentLogger });
    const realtime = createRealtime({ redisUrl: `redis://user:secret@127.0.0.1:${closed}`, logger: silentLogger });
    await expect(realtime.attach(server)).rejects.toThrow(new RegExp(`cannot connect to redis at redis://user:\\*\\*\\*@127.0.0.1:${closed}`));
    await server.close();
    await other.dispose();
  });

  it('a forged or unknown sid cookie binds nothing', async () => {
    const c = new HttpClient(t.url);
    c.sid = 'a'.repeat(64);
    const socket = await open(c);
    expect(socket.connected).toBe(true);
    const sockets = await t.realtime.io!.in(`s:${'a'.repeat(64)}`).fetchSockets();
    expect(sockets).toHaveLength(0);
  });
});
