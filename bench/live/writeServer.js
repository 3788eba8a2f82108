// The server of bench/live/writes.js: one svc process (embedded store, a /todos Collection) with
// realtime off, on without Redis, or on over Redis, and no live subscription anywhere. Which build
// it runs is given by --repo (a checkout with `pnpm build` done), so that two builds can be paired.
// Commands arrive over IPC; each answers with a message of the same `cmd`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { answerCommands } from '../lib/helpers.js';

const { values: opts } = parseArgs({ options: { repo: { type: 'string' }, mode: { type: 'string' }, redis: { type: 'string' }, key: { type: 'string' } } });
const core = await import(pathToFileURL(join(opts.repo, 'packages/core/dist/index.js')).href);
const { createRealtime } = await import(pathToFileURL(join(opts.repo, 'packages/realtime/dist/index.js')).href);
const { Collection, createEmbeddedStore, createRequestScope, createServer, silentLogger } = core;

const dir = await mkdtemp(join(tmpdir(), 'svc-live-writes-'));
const store = await createEmbeddedStore({ dir });
const properties = { title: { type: 'string' }, owner: { type: 'string' }, n: { type: 'number' } };
const todos = new Collection({ path: '/todos', properties, store: store.collection('todos') });
const server = await createServer({ store, resources: [todos], logger: silentLogger, http: { maxConnectionsPerAddress: 0 } });
const realtime = opts.mode === 'off' ? undefined : createRealtime({ logger: silentLogger, ...(opts.mode === 'redis' ? { redisUrl: opts.redis, redisKey: opts.key } : {}) });
await realtime?.attach(server);
await server.listen(0, '127.0.0.1');

const root = { originalMethod: 'POST', url: '/', query: {}, headers: {}, session: { id: '', isNew: true }, me: undefined, isRoot: true, internal: false };
function call(method, parts, body) {
  return todos.handle({ ...root, query: {}, method, originalMethod: method, parts, body, bodyKind: 'json', scope: createRequestScope('bench') });
}

answerCommands(async (msg) => {
  let result;
  if (msg.cmd === 'cycles') {
    // Create, update, delete of one object, one after the other, for `ms`: 3 writes a cycle.
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    const end = start + msg.ms;
    let writes = 0;
    while (performance.now() < end) {
      const created = await call('POST', [], { title: `t${writes}`, owner: 'nobody', n: writes });
      const id = (typeof created.body === 'string' ? JSON.parse(created.body) : created.body).id;
      await call('PUT', [id], { n: writes + 1 });
      await call('DELETE', [id], undefined);
      writes += 3;
    }
    const cpu = process.cpuUsage(cpu0);
    result = { perSecond: (writes * 1000) / (performance.now() - start), cpuUsPerWrite: (cpu.user + cpu.system) / writes };
  }
  return result;
}, {
  async close() {
    await realtime?.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  },
});
