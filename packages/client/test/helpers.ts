import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Collection, UserCollection, createEngineStore, createServer, defineResourceType, mountResource, silentLogger } from '@svc/core';
import type { Context, Resource, SvcServer } from '@svc/core';
import { createRealtime } from '@svc/realtime';
import type { SocketRealtime } from '@svc/realtime';

/** What the echo resource answers: the request as the resource saw it. */
export interface Echo {
  method: string;
  url: string;
  query: Record<string, unknown>;
  body: unknown;
  isRoot: boolean;
}

/** A custom type that echoes requests, with one RPC-style method (shout). `{fail: status}` fails. */
export const echoType = defineResourceType({
  name: 'Echo',
  client: { methods: { shout: { method: 'POST', func: 'shout' } } },
  create: () => ({
    handle: (ctx: Context) => {
      const fail = (ctx.body as { fail?: unknown } | undefined)?.fail ?? ctx.query.fail;
      if (fail !== undefined) return Promise.resolve({ status: Number(fail), body: { status: Number(fail), message: 'asked to fail' } });
      const echo: Echo = { method: ctx.method, url: ctx.url, query: ctx.query, body: ctx.body, isRoot: ctx.isRoot };
      return Promise.resolve({ status: 200, body: echo });
    },
  }),
});

/** A real server: todos, users, /add-follower (echo), nested /a/b, realtime attached. */
export interface ClientTestServer {
  url: string;
  server: SvcServer;
  realtime: SocketRealtime;
  close(): Promise<void>;
}

export async function startClientTestServer(routes: Parameters<typeof createServer>[0]['routes'] = []): Promise<ClientTestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-client-'));
  const store = await createEngineStore({ dir });
  const echo = await echoType.create({} as never);
  const resources: Resource[] = [
    new Collection({ path: '/todos', properties: { title: { type: 'string', required: true }, done: { type: 'boolean' }, n: { type: 'number' }, tags: { type: 'array' } }, store: store.collection('todos') }),
    new UserCollection({ path: '/users', properties: { name: { type: 'string' } }, store: store.collection('users'), passwordCost: 4 }),
    new Collection({ path: '/a/b', properties: { x: { type: 'number' } }, store: store.collection('a/b') }),
    mountResource(echoType, '/add-follower', echo),
  ];
  const realtime = createRealtime();
  const server = await createServer({ store, resources, logger: silentLogger, routes });
  await realtime.attach(server);
  const port = await server.listen(0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    realtime,
    async close() {
      await realtime.close();
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Waits until `check` holds. */
export async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
