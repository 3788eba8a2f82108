import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientAddress } from '@svc/core';
import { io as connectSocket } from 'socket.io-client';
import type { Socket } from 'socket.io-client';
import { SESSION_ENDED_EVENT, SESSION_EVENT } from '@svc/realtime';
import { HttpClient, collect, login, makeStore, settle, signUpAndLogin, startRtServer, until } from './helpers.js';
import type { RtServer, SharedStore } from './helpers.js';
import { logoutEnds, passwordChangeEnds, sweepEnds, userDeletionEnds } from './sessionEnd.js';
import type { Handshake } from './sessionEnd.js';
import { addressKey } from '../src/internal/SocketCaps.js';

describe('@svc/realtime: the sockets of an ended session get no user message', () => {
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

  for (const handshake of ['cookie', 'bearer'] as Handshake[]) {
    const s = () => ({ sockets, a: t, b: t, handshake });
    it(`logout (${handshake} handshake)`, () => logoutEnds(s()));
    it(`a password change ends the other sessions (${handshake} handshake)`, () => passwordChangeEnds(s()));
    it(`deleting the user (${handshake} handshake)`, () => userDeletionEnds(s()));
    it(`the sweep of idle sessions (${handshake} handshake)`, () => sweepEnds(s()));
  }

  it('attacker: the ended sid, as a cookie or a Bearer token, binds nothing on a new socket', async () => {
    const name = 'replay';
    const client = new HttpClient(t.url);
    const id = await signUpAndLogin(client, name);
    const ended = client.sid;
    expect((await client.request('POST', '/users/logout')).status).toBe(204);
    const replay = new HttpClient(t.url);
    replay.sid = ended;
    const [byCookie, byBearer] = [await replay.socket(t.url, 'cookie'), await replay.socket(t.url, 'bearer')];
    sockets.push(byCookie, byBearer);
    const got = [collect(byCookie, 'dm'), collect(byBearer, 'dm')];
    expect(await byCookie.timeout(2000).emitWithAck(SESSION_EVENT, ended)).toEqual({ ok: false });
    await t.realtime.emitToUsers('/users', { id }, 'dm', 'private');
    t.realtime.io!.to(`u:${id}`).emit('dm', 'room');
    await settle();
    expect(got).toEqual([[], []]);
  });

  it('deleting users by a condition on id (DELETE /users?id={"$in":[...]}) ends their sessions too', async () => {
    const [c1, c2] = [new HttpClient(t.url), new HttpClient(t.url)];
    const ids = [await signUpAndLogin(c1, 'bulk-1'), await signUpAndLogin(c2, 'bulk-2')];
    const [s1, s2] = [await c1.socket(), await c2.socket()];
    sockets.push(s1, s2);
    const notices = [collect(s1, SESSION_ENDED_EVENT), collect(s2, SESSION_ENDED_EVENT)];
    const got = [collect(s1, 'dm'), collect(s2, 'dm')];
    const query = encodeURIComponent(JSON.stringify({ $in: ids }));
    const removed = await fetch(`${t.url}/users?id=${query}`, { method: 'DELETE', headers: { 'svc-ssh-key': 'dev' } });
    expect(removed.status).toBe(204);
    for (const id of ids) t.realtime.io!.to(`u:${id}`).emit('dm', 'to the room');
    await until(() => notices.every((n) => n.length === 1));
    await settle();
    expect(got).toEqual([[], []]);
  });

  it(`attacker: a flood of '${SESSION_EVENT}' from one socket is refused past two pending binds (no store read each)`, async () => {
    const client = new HttpClient(t.url);
    const id = await signUpAndLogin(client, 'flood');
    const socket = await client.socket(t.url);
    sockets.push(socket);
    const answers = (await Promise.all(Array.from({ length: 50 }, () => socket.timeout(5000).emitWithAck(SESSION_EVENT, client.sid)))) as { ok: boolean }[];
    // Sent in one turn, they arrive together: most find two binds already pending.
    const bound = answers.filter((a) => a.ok).length;
    expect(bound).toBeGreaterThanOrEqual(1);
    expect(bound).toBeLessThan(25);
    // Still bound to the session, and binds work again once the flood is answered.
    expect(await socket.timeout(2000).emitWithAck(SESSION_EVENT, client.sid)).toEqual({ ok: true, uid: id });
  });

  it('a socket of an ended session stays connected as an anonymous one: broadcasts still reach it, and a new login binds it again', async () => {
    const client = new HttpClient(t.url);
    const id = await signUpAndLogin(client, 'rebind');
    const socket = await client.socket();
    sockets.push(socket);
    const [notices, news, dm] = [collect(socket, SESSION_ENDED_EVENT), collect(socket, 'news'), collect(socket, 'dm')];
    await client.request('POST', '/users/logout');
    await until(() => notices.length === 1);
    t.realtime.emit('news', 1);
    await until(() => news.length === 1);
    expect(socket.connected).toBe(true);
    await login(client, 'rebind');
    expect(await socket.timeout(2000).emitWithAck(SESSION_EVENT, client.sid)).toEqual({ ok: true, uid: id });
    await t.realtime.emitToUsers('/users', { id }, 'dm', 'again');
    await until(() => dm.length === 1);
  });
});

describe('@svc/realtime: idle expiry of the session of an open socket', () => {
  let store: SharedStore;
  let t: RtServer;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    store = await makeStore();
    // One second of idle time: the socket's session expires while the socket stays open.
    t = await startRtServer(store.store, {}, { idleSeconds: 1 });
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await t.close();
    await store.store.close();
    await store.dispose();
  });

  for (const handshake of ['cookie', 'bearer'] as Handshake[]) {
    it(`a socket whose session idles out stops getting the user's messages (${handshake} handshake)`, async () => {
      const name = `idle-${handshake}`;
      const old = new HttpClient(t.url);
      const id = await signUpAndLogin(old, name);
      const socket = await old.socket(t.url, handshake);
      sockets.push(socket);
      const [notices, got] = [collect(socket, SESSION_ENDED_EVENT), collect(socket, 'dm')];
      // Nothing but the open socket: no request keeps the session alive.
      await until(() => notices.length === 1, 10_000);
      const fresh = new HttpClient(t.url);
      await login(fresh, name);
      const valid = await fresh.socket(t.url, handshake);
      sockets.push(valid);
      const gotValid = collect(valid, 'dm');
      await t.realtime.emitToUsers('/users', { id }, 'dm', 'by id');
      await t.realtime.emitToUsers('/users', { username: name }, 'dm', 'by query');
      await until(() => gotValid.length === 2);
      await settle();
      expect(got).toEqual([]);
      expect(await t.server.sessions.load(old.sid)).toBeNull();
    });
  }
});

/** Opens a websocket-only Socket.IO connection; answers the socket or the handshake's error. */
function tryConnect(url: string): Promise<Socket | Error> {
  const socket = connectSocket(url, { transports: ['websocket'], forceNew: true, reconnection: false });
  return new Promise((resolve) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', (err) => {
      socket.close();
      resolve(err);
    });
  });
}

describe('@svc/realtime: socket caps', () => {
  let store: SharedStore;
  let perAddress: RtServer;
  let total: RtServer;
  const sockets: Socket[] = [];
  const warnings: string[] = [];

  beforeAll(async () => {
    store = await makeStore();
    perAddress = await startRtServer(store.store, { maxSocketsPerAddress: 4, logger: { info() {}, error() {}, warn: (line) => warnings.push(line) } });
    total = await startRtServer(store.store, { maxSocketsPerAddress: 0, maxSockets: 2 });
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await perAddress.close();
    await total.close();
    await store.store.close();
    await store.dispose();
  });

  const engineCount = (t: RtServer) => t.realtime.io!.engine.clientsCount;

  it('the N+1th socket from one address is refused with a clear error, and a freed slot is taken again', async () => {
    const open: Socket[] = [];
    for (let i = 0; i < 4; i++) {
      const s = await tryConnect(perAddress.url);
      if (s instanceof Error) throw s;
      open.push(s);
      sockets.push(s);
    }
    expect(await tryConnect(perAddress.url)).toBeInstanceOf(Error);
    // The polling handshake says why.
    const refused = await fetch(`${perAddress.url}/socket.io/?EIO=4&transport=polling`);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { message: string }).message).toMatch(/too many realtime connections from this address \(limit 4\)/);
    open[0]!.close();
    await until(() => engineCount(perAddress) === 3);
    const again = await tryConnect(perAddress.url);
    expect(again).not.toBeInstanceOf(Error);
    sockets.push(again as Socket);
    for (const s of open) s.close();
    (again as Socket).close();
    await until(() => engineCount(perAddress) === 0);
  });

  it('attacker: a burst of handshakes from one address gets exactly the cap', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => tryConnect(perAddress.url)));
    const accepted = results.filter((r): r is Socket => !(r instanceof Error));
    sockets.push(...accepted);
    expect(accepted).toHaveLength(4);
    // Polling handshakes count the same (they are sockets too until closed).
    const polling = await fetch(`${perAddress.url}/socket.io/?EIO=4&transport=polling`);
    expect(polling.status).toBe(403);
    await polling.text();
    for (const s of accepted) s.close();
    await until(() => engineCount(perAddress) === 0);
    // The operator hears of it once a minute, however many are refused.
    expect(warnings.filter((w) => w.startsWith('realtime: refused a socket from 127.0.0.1: too many realtime connections from this address (limit 4)'))).toHaveLength(1);
  });

  it('the total cap refuses the socket past it, whatever the address', async () => {
    const [x, y] = [await tryConnect(total.url), await tryConnect(total.url)];
    sockets.push(x as Socket, y as Socket);
    expect([x, y].some((r) => r instanceof Error)).toBe(false);
    const refused = await fetch(`${total.url}/socket.io/?EIO=4&transport=polling`);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { message: string }).message).toMatch(/too many realtime connections on this server \(limit 2\)/);
    (x as Socket).close();
    await until(() => engineCount(total) === 1);
    const z = await tryConnect(total.url);
    expect(z).not.toBeInstanceOf(Error);
    sockets.push(z as Socket);
  });
});

describe('@svc/realtime: the address a socket counts under', () => {
  // As the server's clientOf writes a peer address (IPv4-mapped as IPv4), then keyed.
  const key = (remoteAddress: string) => addressKey(clientAddress(remoteAddress) ?? '');

  it('IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64', () => {
    expect(key('127.0.0.1')).toBe('127.0.0.1');
    expect(key('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(key('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(key('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(key('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(key('::1')).toBe('0:0:0:0::/64');
    expect(key('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});
