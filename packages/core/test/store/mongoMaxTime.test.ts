import { randomBytes } from 'node:crypto';
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { BSON, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongoStore } from '../../src/store/mongoStore.js';
import type { Store } from '../../src/store/Store.js';

// The database timeout (app.json databaseTimeoutMs) reaches the server with every read as
// maxTimeMS, so that a query the server cannot finish in time is stopped there too, not only
// given up by svc. (The driver's own `timeoutMS` client option, which did this before, is ignored
// by mongodb 7.) Seen on the wire: a relay between the store and the database decodes each
// command the store sends.

const url = process.env.SVC_TEST_MONGODB_URL;
if (!url) process.stderr.write('mongoMaxTime: SKIPPED (set SVC_TEST_MONGODB_URL; .ci/run does)\n');

const OP_MSG = 2013;

/** A TCP relay to the database that keeps every OP_MSG command document the client sends. */
function commandRelay(target: { host: string; port: number }): Promise<{ server: Server; port: number; commands: Record<string, unknown>[] }> {
  const commands: Record<string, unknown>[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 16 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0);
        const message = pending.subarray(0, length);
        pending = pending.subarray(length);
        // OP_MSG: header (16), flagBits (4), then sections; kind 0 is the command's body.
        if (message.readInt32LE(12) === OP_MSG && message[20] === 0) {
          const size = message.readInt32LE(21);
          commands.push(BSON.deserialize(message.subarray(21, 21 + size)));
        }
      }
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.on('close', () => b.destroy());
      a.on('error', () => b.destroy());
    }
  });
  server.on('close', () => {
    for (const s of sockets) s.destroy();
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port, commands })));
}

describe.runIf(url !== undefined)('MongoDB store: reads carry the database timeout as maxTimeMS', () => {
  const dbName = `svc_maxtime_${randomBytes(5).toString('hex')}`;
  let relay: Awaited<ReturnType<typeof commandRelay>>;
  let store: Store;
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.message);

  beforeAll(async () => {
    process.on('warning', onWarning);
    const { hostname, port } = new URL(url as string);
    relay = await commandRelay({ host: hostname, port: Number(port || 27017) });
    store = await createMongoStore({ url: `mongodb://127.0.0.1:${relay.port}/${dbName}`, timeoutMs: 3210 });
  });
  afterAll(async () => {
    process.off('warning', onWarning);
    await store?.close();
    relay?.server.close();
    const client = new MongoClient(url as string);
    try {
      await client.db(dbName).dropDatabase();
    } finally {
      await client.close();
    }
  });

  it('find, findOne, count and update send maxTimeMS; nothing warns that an option is ignored', async () => {
    const todos = store.collection('todos');
      await todos.insert({ id: 'a1', title: 'x', n: 1 });
      await todos.find({ n: { $gt: 0 } }, { sort: { n: 1 }, limit: 5 });
      await todos.findOne({ id: 'a1' });
      await todos.count({});
      await todos.update({ id: 'a1' }, { $set: { title: 'y' } });
      const sent = (name: string) => relay.commands.filter((c) => c[name] === 'todos');
      for (const name of ['find', 'aggregate', 'findAndModify']) {
        expect(sent(name).length, name).toBeGreaterThan(0);
        for (const command of sent(name)) expect(command.maxTimeMS, name).toBe(3210);
      }
    expect(warnings.filter((w) => /timeoutMS/.test(w))).toEqual([]);
  });
});
