import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io as connectSocket } from 'socket.io-client';
import type { Socket } from 'socket.io-client';
import { Collection, UserCollection, createEngineStore, createServer, forwardStore, silentLogger } from '@svc/core';
import type { Resource, SessionManagerOptions, Store, SvcServer } from '@svc/core';
import { createRealtime } from '@svc/realtime';
import type { RealtimeOptions, SocketRealtime } from '@svc/realtime';

/** A temporary embedded store; several servers of one test may share it (as processes share MongoDB). */
export interface SharedStore {
  store: Store;
  dispose(): Promise<void>;
}

export async function makeStore(): Promise<SharedStore> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-rt-'));
  const store = await createEngineStore({ dir });
  return {
    store,
    async dispose() {
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A real svc server (users + todos) with the Socket.IO transport, on a free loopback port. */
export interface RtServer {
  url: string;
  server: SvcServer;
  realtime: SocketRealtime;
  close(): Promise<void>;
}

export async function startRtServer(store: Store, options: RealtimeOptions = {}, sessions?: SessionManagerOptions): Promise<RtServer> {
  const resources = [
    new UserCollection({ path: '/users', properties: { name: { type: 'string' } }, store: store.collection('users'), passwordCost: 4 }),
    new Collection({ path: '/todos', properties: { title: { type: 'string' } }, store: store.collection('todos') }),
  ];
  return serveWithRealtime(store, resources, options, sessions);
}

/** A real svc server of `resources` with the Socket.IO transport, on a free loopback port. */
export async function serveWithRealtime(store: Store, resources: Resource[], options: RealtimeOptions = {}, sessions?: SessionManagerOptions): Promise<RtServer> {
  const realtime = createRealtime(options);
  // Servers sharing a store must not close it twice: each gets a view whose close() is a no-op.
  const view: Store = forwardStore(store, { close: () => Promise.resolve() });
  const server = await createServer({ store: view, resources, logger: silentLogger, ...(sessions ? { sessions } : {}) });
  await realtime.attach(server);
  const port = await server.listen(0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    realtime,
    async close() {
      await realtime.close();
      await server.close();
    },
  };
}

/** A fetch client with its own sid cookie. */
export class HttpClient {
  sid: string | undefined;
  constructor(readonly url: string) {}

  async request(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = {};
    if (this.sid) headers.cookie = `sid=${this.sid}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(this.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('sid='));
    if (cookie) this.sid = cookie.slice(4, cookie.indexOf(';')) || undefined;
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  }

  /**
   * Opens a socket sending this client's current session (as the sid cookie, or as
   * `Authorization: Bearer` as native clients do), and waits until it is connected.
   */
  async socket(url = this.url, handshake: 'cookie' | 'bearer' = 'cookie'): Promise<Socket> {
    const headers: Record<string, string> | undefined = this.sid === undefined ? undefined : handshake === 'cookie' ? { cookie: `sid=${this.sid}` } : { authorization: `Bearer ${this.sid}` };
    const socket = connectSocket(url, {
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
      ...(headers ? { extraHeaders: headers } : {}),
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
    return socket;
  }
}

/** Collects what a socket receives for one message name. */
export function collect(socket: Socket, message: string): unknown[] {
  const got: unknown[] = [];
  socket.on(message, (data: unknown) => got.push(data));
  return got;
}

/** Waits until `check` holds, polling; fails after `ms`. */
export async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Lets in-flight messages arrive (to show one did not). */
export function settle(ms = 150): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Creates a user as root and logs the client in. */
export async function signUpAndLogin(client: HttpClient, username: string): Promise<string> {
  const created = await fetch(`${client.url}/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'svc-ssh-key': 'dev' },
    body: JSON.stringify({ username, password: 'pw' }),
  });
  const user = (await created.json()) as { id: string };
  await login(client, username);
  return user.id;
}

/** Logs the client in as an existing user (password 'pw'). */
export async function login(client: HttpClient, username: string, password = 'pw'): Promise<void> {
  const answer = await client.request('POST', '/users/login', { username, password });
  if (answer.status !== 200) throw new Error(`login failed: ${answer.status}`);
}
