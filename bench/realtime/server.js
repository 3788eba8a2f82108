// One realtime server for bench/realtime/run.js, started pinned to core 0:
//   node server.js svc   @svc/realtime (Socket.IO) attached to a real svc server (embedded store, /users)
//   node server.js sio   plain Socket.IO (io.emit) on a bare node:http server: the reference
//   node server.js ws    a raw `ws` server whose broadcast is a loop over its clients
// Commands arrive over IPC; each answers with a message of the same `cmd`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createServer as createHttpServer } from 'node:http';
import { Server } from 'socket.io';
import { WebSocketServer } from 'ws';
import { UserCollection, createEmbeddedStore, createServer, silentLogger } from '@svc/core';
import { createRealtime } from '@svc/realtime';
import { answerCommands } from '../lib/helpers.js';

const variant = process.argv[2];
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** A ~100-byte message body: the send time and padding. */
function payload(extra = {}) {
  const base = { t: nowUs(), ...extra, p: '' };
  const size = JSON.stringify(base).length;
  base.p = 'x'.repeat(Math.max(0, 100 - size));
  return base;
}

async function startSvc() {
  const dir = await mkdtemp(join(tmpdir(), 'svc-rt-bench-'));
  const store = await createEmbeddedStore({ dir });
  const users = new UserCollection({ path: '/users', properties: {}, store: store.collection('users'), passwordCost: 4 });
  // Every socket of the benchmark comes from 127.0.0.1: no per-address connection share (256 by
  // default) and no socket caps (raw Socket.IO has none either).
  const server = await createServer({ store, resources: [users], logger: silentLogger, http: { maxConnectionsPerAddress: 0 } });
  const realtime = createRealtime({ logger: silentLogger, maxSocketsPerAddress: 0, maxSockets: 0 });
  await realtime.attach(server);
  const port = await server.listen(0, '127.0.0.1');
  return {
    port,
    broadcast: (data) => realtime.emit('b', data),
    connections: () => realtime.io.engine.clientsCount,
    /** n users, each with a logged-in session: answers their sids, in order. */
    async makeUsers(n) {
      const sids = [];
      for (let i = 0; i < n; i++) {
        const reply = await users.handle({ method: 'POST', originalMethod: 'POST', url: '/', parts: [], query: {}, body: { username: `user-${i}`, password: 'pw' }, bodyKind: 'json', headers: {}, session: { id: 'bench', isNew: false }, me: undefined, isRoot: true, internal: true, callChain: [] });
        const session = await server.sessions.login(undefined, reply.body.id, '/users');
        sids.push(session.id);
      }
      return sids;
    },
    toUser: (i, data) => realtime.emitToUsers('/users', { username: `user-${i}` }, 'dm', data),
    async close() {
      await realtime.close();
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function startWs() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise((resolve) => wss.once('listening', resolve));
  return {
    port: wss.address().port,
    broadcast(data) {
      const frame = Buffer.from(JSON.stringify(data));
      for (const client of wss.clients) client.send(frame);
    },
    connections: () => wss.clients.size,
    async close() {
      for (const c of wss.clients) c.terminate();
      await new Promise((resolve) => wss.close(resolve));
    },
  };
}

async function startSio() {
  const http = createHttpServer();
  const io = new Server(http, { serveClient: false });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    port: http.address().port,
    broadcast: (data) => io.emit('b', data),
    connections: () => io.engine.clientsCount,
    async close() {
      await io.close();
    },
  };
}

const starters = { svc: startSvc, sio: startSio, ws: startWs };
const impl = await starters[variant]?.();
if (!impl) throw new Error(`unknown variant ${variant}`);

/** Emits every `intervalMs` for `count` emits; answers per-emit synchronous time, CPU and loop time. */
async function broadcastLoop({ count, intervalMs }) {
  const syncUs = [];
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const data = payload({ i });
    const a = process.hrtime.bigint();
    impl.broadcast(data);
    syncUs.push(Number(process.hrtime.bigint() - a) / 1000);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  const wallMs = performance.now() - t0;
  return { syncUs, cpuUs: cpu.user + cpu.system, loopBusyUs: elu.active * 1000, wallMs, recipients: impl.connections() };
}

/** Emits to one user at a time (cycling targets); answers each call's duration. */
async function userLoop({ count, intervalMs, users }) {
  const callUs = [];
  for (let i = 0; i < count; i++) {
    const target = (i * 7919) % users;
    const a = process.hrtime.bigint();
    await impl.toUser(target, payload({ target, i }));
    callUs.push(Number(process.hrtime.bigint() - a) / 1000);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return { callUs };
}

answerCommands(async (msg) => {
  let result;
  if (msg.cmd === 'connections') result = impl.connections();
  else if (msg.cmd === 'users') result = await impl.makeUsers(msg.n);
  else if (msg.cmd === 'broadcast') result = await broadcastLoop(msg);
  else if (msg.cmd === 'user-emits') result = await userLoop(msg);
  return result;
}, {
  async close() {
    await impl.close();
  },
  ready: { port: impl.port },
});
