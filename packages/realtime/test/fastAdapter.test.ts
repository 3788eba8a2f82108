import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from 'socket.io';
import type { Namespace, Socket as ServerSocket } from 'socket.io';
import type { Adapter } from 'socket.io-adapter';
import { io as connectSocket } from 'socket.io-client';
import type { Socket } from 'socket.io-client';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { FastAdapter, fastDeliveryAvailable } from '../src/internal/fastAdapter.js';
import { connectRedis } from '../src/internal/redis.js';
import type { RedisLink } from '../src/internal/redis.js';

// Both adapters (in memory, and Redis for this process's emits and its peers') write a broadcast's
// frame straight to plain sockets and leave the others to engine.io: a socket with an outgoing
// listener, and every emit waiting for acknowledgements. Engine.io announces each packet it sends
// ('packetCreate'); the frame path sends none.

const redisUrl = process.env.SVC_TEST_REDIS_URL;
if (!redisUrl) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_REDIS_URL is not set: the Redis adapter delivery test cannot run');
  process.stderr.write('SKIPPED @svc/realtime frame delivery through the Redis adapter: set SVC_TEST_REDIS_URL to run it\n');
}

type AdapterFactory = (nsp: Namespace) => Adapter;

interface Served {
  io: Server;
  url: string;
  /** Messages engine.io sent to each server-side socket, by socket id. */
  viaEngine: Map<string, number>;
  serverSockets: ServerSocket[];
}

const opened: { close(): unknown }[] = [];
afterAll(async () => {
  for (const thing of opened.reverse()) await thing.close();
});

async function serve(adapter: AdapterFactory): Promise<Served> {
  const http = createServer();
  const io = new Server(http, { adapter: adapter as unknown as typeof Adapter, transports: ['websocket'] });
  const served: Served = { io, url: '', viaEngine: new Map(), serverSockets: [] };
  io.on('connection', (socket) => {
    served.serverSockets.push(socket);
    served.viaEngine.set(socket.id, 0);
    socket.conn.on('packetCreate', (packet: { type: string }) => {
      if (packet.type === 'message') served.viaEngine.set(socket.id, (served.viaEngine.get(socket.id) ?? 0) + 1);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  served.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  opened.push({ close: () => io.close() });
  return served;
}

async function connect(url: string): Promise<Socket> {
  const socket = connectSocket(url, { transports: ['websocket'], forceNew: true, reconnection: false });
  opened.push(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });
  socket.on('ask', (_data: unknown, ack: (answer: string) => void) => ack('ok'));
  return socket;
}

function next(socket: Socket, event: string): Promise<unknown> {
  return new Promise((resolve) => socket.once(event, resolve));
}

/** Two clients: `plain` and `listened` (whose server socket has an outgoing listener). */
async function twoClients(served: Served): Promise<{ plain: Socket; listened: Socket; plainId: string; listenedId: string }> {
  const plain = await connect(served.url);
  const listened = await connect(served.url);
  const byId = (id: string | undefined) => served.serverSockets.find((s) => s.id === id);
  await expect.poll(() => byId(plain.id) !== undefined && byId(listened.id) !== undefined).toBe(true);
  byId(listened.id)!.onAnyOutgoing(() => undefined);
  return { plain, listened, plainId: plain.id!, listenedId: listened.id! };
}

async function checkDelivery(served: Served, emitter: Server): Promise<void> {
  const { plain, listened, plainId, listenedId } = await twoClients(served);
  const got = [next(plain, 'news'), next(listened, 'news')];
  emitter.emit('news', { n: 1 });
  expect(await Promise.all(got)).toEqual([{ n: 1 }, { n: 1 }]);
  // The plain socket got the frame; the one with an outgoing listener got it through engine.io.
  expect(served.viaEngine.get(plainId)).toBe(0);
  expect(served.viaEngine.get(listenedId)).toBe(1);

  // An emit waiting for acknowledgements carries an id: engine.io's path for every socket.
  const answers = await served.io.timeout(5000).emitWithAck('ask', {});
  expect(answers).toEqual(['ok', 'ok']);
  expect(served.viaEngine.get(plainId)).toBe(1);
  expect(served.viaEngine.get(listenedId)).toBe(2);
}

describe('frame delivery of broadcasts', () => {
  it('the installed socket.io-adapter has the methods the fast adapters override', () => {
    expect(fastDeliveryAvailable()).toBe(true);
  });

  it('in memory: plain sockets get the frame, others engine.io; acknowledged emits go through engine.io', async () => {
    const served = await serve(function fastAdapter(nsp: Namespace) {
      return new FastAdapter(nsp) as unknown as Adapter;
    });
    await checkDelivery(served, served.io);
  });

  describe.skipIf(!redisUrl)('over Redis', () => {
    const key = `svc-test-frame-${process.pid}-${Date.now()}`;
    const link = async (): Promise<RedisLink> => {
      const made = await connectRedis(redisUrl!, key, silentLogger);
      opened.push(made);
      return made;
    };

    it("this process's broadcasts: as in memory", async () => {
      const served = await serve((await link()).adapter as AdapterFactory);
      await checkDelivery(served, served.io);
    });

    it("a peer's broadcast reaches this process's plain sockets as a frame too", async () => {
      const served = await serve((await link()).adapter as AdapterFactory);
      const peer = await serve((await link()).adapter as AdapterFactory);
      const { plain, listened, plainId, listenedId } = await twoClients(served);
      const got = [next(plain, 'news'), next(listened, 'news')];
      // The peer's subscription to the channel may still be on its way: emit until it arrives.
      const timer = setInterval(() => peer.io.emit('news', { from: 'peer' }), 100);
      try {
        expect(await Promise.all(got)).toEqual([{ from: 'peer' }, { from: 'peer' }]);
      } finally {
        clearInterval(timer);
      }
      expect(served.viaEngine.get(plainId)).toBe(0);
      expect(served.viaEngine.get(listenedId)).toBeGreaterThanOrEqual(1);
    });
  });
});
