import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient, collect, makeStore, settle, signUpAndLogin, startRtServer, until } from './helpers.js';
import type { RtServer, SharedStore } from './helpers.js';

const redisUrl = process.env.SVC_TEST_REDIS_URL;
if (!redisUrl) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_REDIS_URL is not set: the Redis adapter tests cannot run');
  process.stderr.write('SKIPPED @svc/realtime Redis adapter tests: set SVC_TEST_REDIS_URL=redis://127.0.0.1:<port> to run them\n');
}

describe.skipIf(!redisUrl)('@svc/realtime across two servers sharing a store and Redis', () => {
  let store: SharedStore;
  let a: RtServer;
  let b: RtServer;
  const sockets: { close(): void }[] = [];
  // A fresh channel prefix per run, so parallel runs on one Redis do not hear each other.
  const redisKey = `svc-test-${process.pid}-${Date.now()}`;

  beforeAll(async () => {
    store = await makeStore();
    a = await startRtServer(store.store, { redisUrl: redisUrl!, redisKey });
    b = await startRtServer(store.store, { redisUrl: redisUrl!, redisKey });
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await a?.close();
    await b?.close();
    await store?.store.close();
    await store?.dispose();
  });

  it('an emit on B reaches a socket connected to A', async () => {
    const socket = await new HttpClient(a.url).socket();
    sockets.push(socket);
    const got = collect(socket, 'news');
    const local = [...a.realtime.io!.of('/').sockets.values()].find((s) => s.id === socket.id)!;
    let enginePackets = 0;
    local.conn.on('packetCreate', (packet: { type: string }) => {
      if (packet.type === 'message') enginePackets++;
    });
    await until(() => {
      b.realtime.emit('news', 'from b');
      return got.length > 0;
    });
    expect(got[0]).toBe('from b');
    // Delivered on A from Redis by its pre-encoded frame, not as engine.io packets.
    expect(enginePackets).toBe(0);
  });

  it('a user-targeted emit on B reaches only that user, on A', async () => {
    const alice = new HttpClient(a.url);
    const bob = new HttpClient(a.url);
    const aliceId = await signUpAndLogin(alice, 'r-alice');
    await signUpAndLogin(bob, 'r-bob');
    const [sa, sb] = [await alice.socket(), await bob.socket()];
    sockets.push(sa, sb);
    const [gotA, gotB] = [collect(sa, 'dm'), collect(sb, 'dm')];
    await b.realtime.emitToUsers('/users', { id: aliceId }, 'dm', 'hi alice');
    await until(() => gotA.length === 1);
    await settle();
    expect([gotA, gotB]).toEqual([['hi alice'], []]);
  });

  it('a login through B moves the socket connected to A into the user room', async () => {
    const c = new HttpClient(a.url);
    await c.request('GET', '/todos');
    const socket = await c.socket(); // bound on A to the anonymous session
    sockets.push(socket);
    const got = collect(socket, 'dm');
    const viaB = new HttpClient(b.url);
    viaB.sid = c.sid;
    const id = await signUpAndLogin(viaB, 'r-carol');
    await until(() => {
      void a.realtime.emitToUsers('/users', { id }, 'dm', 'moved');
      return got.length > 0;
    });
    await viaB.request('POST', '/users/logout');
    await settle(300);
    got.length = 0;
    await b.realtime.emitToUsers('/users', { id }, 'dm', 'after logout');
    await settle();
    expect(got).toEqual([]);
  });
});
