// The server of bench/live/run.js, pinned to core 0: a real svc server (embedded store) with
// /todos and /others (the same Collection config) and @svc/realtime with live queries.
// Commands arrive over IPC; each answers with a message of the same `cmd`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Collection, createEmbeddedStore, createRequestScope, createServer, silentLogger } from '@svc/core';
import { createRealtime } from '@svc/realtime';
import { answerCommands } from '../lib/helpers.js';

const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const dir = await mkdtemp(join(tmpdir(), 'svc-live-bench-'));
const store = await createEmbeddedStore({ dir });
const properties = { title: { type: 'string' }, owner: { type: 'string' }, n: { type: 'number' } };
const todos = new Collection({ path: '/todos', properties, store: store.collection('todos') });
const others = new Collection({ path: '/others', properties, store: store.collection('others') });
const server = await createServer({ store, resources: [todos, others], logger: silentLogger, http: { maxConnectionsPerAddress: 0 } });
/** When each write of the latency probe was stored: its title -> µs (registered before realtime's own listener). */
const committed = new Map();
todos.watchChanges((change) => {
  const title = change.kind === 'resync' ? undefined : change.object.title;
  if (typeof title === 'string' && title.startsWith('w')) committed.set(title, nowUs());
});
const realtime = createRealtime({ logger: silentLogger, maxSocketsPerAddress: 0, maxSockets: 0, live: { maxPerUser: 0 } });
await realtime.attach(server);
const port = await server.listen(0, '127.0.0.1');
const io = realtime.io;
/** The socket of each owner (the clients say who they are): the raw variant's target. */
const byOwner = new Map();
io.on('connection', (socket) => socket.on('bench:owner', (owner) => byOwner.set(owner, socket)));

const root = { method: 'POST', originalMethod: 'POST', url: '/', parts: [], query: {}, headers: {}, session: { id: '', isNew: true }, me: undefined, isRoot: true, internal: false };
function write(collection, body) {
  return collection.handle({ ...root, body, bodyKind: 'json', scope: createRequestScope('bench') });
}

answerCommands(async (msg) => {
  let result;
  if (msg.cmd === 'port') result = port;
  else if (msg.cmd === 'subscriptions') result = realtime.liveSubscriptions;
  else if (msg.cmd === 'write') {
    // One write whose change reaches one subscriber: answered with when it was stored.
    await write(todos, { title: msg.title, owner: msg.owner, n: 1 });
    result = committed.get(msg.title);
    committed.delete(msg.title);
  } else if (msg.cmd === 'raw') {
    // The same message, as Socket.IO sends it straight to the same socket.
    const socket = byOwner.get(msg.owner);
    const t = nowUs();
    socket.emit('svc:live', { sub: msg.sub, seq: msg.seq, type: 'create', object: { title: msg.title, owner: msg.owner, n: 1, id: msg.id } });
    result = t;
  } else if (msg.cmd === 'throughput') {
    // Writes one after the other for `ms`: to /todos (whose idle subscriptions each write is
    // matched against) or /others (none).
    const collection = msg.target === 'todos' ? todos : others;
    const cpu0 = process.cpuUsage();
    const end = performance.now() + msg.ms;
    let count = 0;
    const start = performance.now();
    while (performance.now() < end) {
      await write(collection, { title: `t${count}`, owner: 'nobody-subscribes', n: count });
      count++;
    }
    const cpu = process.cpuUsage(cpu0);
    result = { perSecond: (count * 1000) / (performance.now() - start), cpuUsPerWrite: (cpu.user + cpu.system) / count };
  } else if (msg.cmd === 'paced') {
    // `rate` writes a second for `ms`, each to one of `targets` subscribers' owners (or to
    // /others: the same writes with nobody to tell): server CPU over the window.
    const collection = msg.target === 'todos' ? todos : others;
    const perTick = msg.rate / 100;
    const ticks = msg.ms / 10;
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    let count = 0;
    for (let t = 0; t < ticks; t++) {
      const writes = [];
      for (let i = 0; i < perTick; i++, count++) writes.push(write(collection, { title: `p${count}`, owner: `u${(count * 7919) % msg.targets}`, n: count }));
      await Promise.all(writes);
      const next = started + (t + 1) * 10;
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    // The deliveries of the last writes finish in the next turns.
    await new Promise((r) => setTimeout(r, 200));
    const cpu = process.cpuUsage(cpu0);
    result = { writes: count, cpuUs: cpu.user + cpu.system, seconds: (performance.now() - started) / 1000 };
  }
  return result;
}, {
  async close() {
    await realtime.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  },
});
