import { randomBytes } from 'node:crypto';
import type { Socket } from 'socket.io-client';
import { Collection, UserCollection, createMongoStore } from '@svc/core';
import type { Store, StoreCollection } from '@svc/core';
import { LIVE_EVENT, SUBSCRIBE_EVENT, UNSUBSCRIBE_EVENT } from '@svc/realtime';
import type { LiveMessage, RealtimeOptions, SubscribeAnswer, SubscribeRequest } from '@svc/realtime';
import { makeStore, serveWithRealtime } from './helpers.js';
import type { RtServer } from './helpers.js';

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;
if (!mongoUrl) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_MONGODB_URL is not set: the live-query tests cannot run on MongoDB');
  process.stderr.write('SKIPPED @svc/realtime live queries on MongoDB: set SVC_TEST_MONGODB_URL to run them\n');
}

/** A store shared by the servers of one test (as processes share MongoDB), and how to drop it. */
export interface LiveStore {
  store: Store;
  dispose(): Promise<void>;
}

/** The stores the live-query tests run on: embedded always, MongoDB (FerretDB) when configured. */
export const LIVE_STORES: { name: string; make(): Promise<LiveStore> }[] = [
  {
    name: 'embedded',
    async make() {
      const made = await makeStore();
      return { store: made.store, dispose: async () => (await made.store.close(), await made.dispose()) };
    },
  },
  ...(mongoUrl
    ? [
        {
          name: 'mongodb',
          async make() {
            const store = await createMongoStore({ url: mongoUrl, timeoutMs: 30_000, dbName: `svc_live_${randomBytes(5).toString('hex')}` });
            return {
              store,
              async dispose() {
                // This package has no MongoDB driver of its own to drop the database: it is emptied.
                for (const name of ['users', 'todos', '_sessions']) await store.collection(name).remove({});
                await store.close();
              },
            };
          },
        },
      ]
    : []),
];

/**
 * A svc server with users (role, private `secret`) and todos (owner, done, private `secret`) and
 * the Socket.IO transport with live queries, on a free loopback port.
 */
export function startLiveServer(store: Store, options: RealtimeOptions = {}, gate?: WriteGate): Promise<RtServer> {
  const resources = [
    new UserCollection({
      path: '/users',
      properties: { name: { type: 'string' }, role: { type: 'string' }, secret: { type: 'string', private: true } },
      store: store.collection('users'),
      passwordCost: 4,
    }),
    new Collection({
      path: '/todos',
      properties: { title: { type: 'string' }, owner: { type: 'string' }, done: { type: 'boolean' }, rank: { type: 'number' }, secret: { type: 'string', private: true } },
      store: gate ? gate.wrap(store.collection('todos')) : store.collection('todos'),
    }),
  ];
  return serveWithRealtime(store, resources, options);
}

/**
 * Holds a collection's inserts or removes in the real store until let go: a write "in flight"
 * while something else happens (a first subscription), at a chosen point.
 */
export class WriteGate {
  private held: { op: 'insert' | 'remove'; reached: () => void; go: Promise<void> } | undefined;

  /** The next `op` waits, just before the store does it, until the answered function is called; `reached` settles once it waits. */
  hold(op: 'insert' | 'remove'): { reached: Promise<void>; release: () => void } {
    let release = (): void => undefined;
    let reached = (): void => undefined;
    const go = new Promise<void>((r) => (release = r));
    const hit = new Promise<void>((r) => (reached = r));
    this.held = { op, reached, go };
    return { reached: hit, release };
  }

  wrap(collection: StoreCollection): StoreCollection {
    return new Proxy(collection, {
      get: (target, name, receiver) => {
        const value = Reflect.get(target, name, receiver) as unknown;
        if ((name !== 'insert' && name !== 'remove') || typeof value !== 'function') return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        return async (...args: unknown[]) => {
          const held = this.held;
          if (held?.op === name) {
            this.held = undefined;
            held.reached();
            await held.go;
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }
}

/** Subscribes on a socket and collects that subscription's messages. */
export async function subscribe(socket: Socket, request: SubscribeRequest): Promise<{ answer: SubscribeAnswer; messages: LiveMessage[] }> {
  const messages: LiveMessage[] = [];
  socket.on(LIVE_EVENT, (message: LiveMessage) => {
    if (message.sub === request.id) messages.push(message);
  });
  const answer = (await socket.timeout(5000).emitWithAck(SUBSCRIBE_EVENT, request)) as SubscribeAnswer;
  return { answer, messages };
}

export async function unsubscribe(socket: Socket, id: string): Promise<{ ok: boolean }> {
  return (await socket.timeout(5000).emitWithAck(UNSUBSCRIBE_EVENT, id)) as { ok: boolean };
}

/** Root writes over HTTP (svc-ssh-key in development from this machine). */
export async function rootRequest(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url + path, {
    method,
    headers: { 'content-type': 'application/json', 'svc-ssh-key': 'dev' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/** The types and ids or object ids of messages, for compact assertions. */
export function summary(messages: readonly LiveMessage[]): string[] {
  return messages.map((m) => {
    if (m.type === 'snapshot') return `snapshot:${m.objects.map((o) => String(o.title)).join(',')}`;
    if (m.type === 'ended') return `ended:${m.reason}`;
    if (m.type === 'delete' || m.type === 'leave') return `${m.type}:${m.id}`;
    return `${m.type}:${String(m.object.title)}`;
  });
}
