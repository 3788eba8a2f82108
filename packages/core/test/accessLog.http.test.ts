import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, createEmbeddedStore, createServer, UserCollection } from '@svc/core';
import type { AccessEntry, Logger, RequestSample, Store } from '@svc/core';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 23 (4): one access line per answered request (id, method, path, status, duration, user,
// client, bytes), the query string left out, health checks left out; X-Request-Id readable by
// pages of other origins.

let dir: string;
let store: Store;
const servers: TestServer[] = [];
const lines: AccessEntry[] = [];
const logger: Logger = { info() {}, warn() {}, error() {}, access: (e) => lines.push(e) };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-access-'));
  store = await createEmbeddedStore({ dir });
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await rm(dir, { recursive: true, force: true });
});

async function serve(options: Parameters<typeof startTestServer>[2] = {}): Promise<TestServer> {
  const resources = [
    new Collection({ path: '/todos', properties: { title: { type: 'string' } }, store: store.collection(`todos-${servers.length}`) }),
    new UserCollection({ path: '/users', properties: {}, store: store.collection(`users-${servers.length}`), passwordCost: 4 }),
  ];
  const t = await startTestServer(store, resources, { logger, ...options });
  servers.push(t);
  return t;
}

/** The access line of a request, by its id (written once the answer is over). */
async function lineOf(id: string | null): Promise<AccessEntry> {
  for (let i = 0; i < 200; i++) {
    const found = lines.find((l) => l.id === id);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`no access line for ${id}`);
}

describe('access log', () => {
  it('a line per answer: id, method, path without the query, status, duration, client, bytes; the user once logged in', async () => {
    const t = await serve();
    const res = await t.request('GET', '/todos?token=SECRET1&title=x');
    expect(res.status).toBe(200);
    const line = await lineOf(res.headers.get('x-request-id'));
    expect(line).toMatchObject({ method: 'GET', path: '/todos', status: 200, uid: undefined, client: '127.0.0.1', aborted: false });
    expect(JSON.stringify(line)).not.toContain('SECRET1');
    expect(line.ms).toBeGreaterThanOrEqual(0);
    expect(line.bytes).toBeGreaterThan(Number(res.headers.get('content-length')));
    expect(new Date(line.time).toISOString()).toBe(line.time);

    const user = await t.request('POST', '/users', { body: { username: 'ann', password: 'pw-ann-1' } });
    const login = await t.request('POST', '/users/login', { body: { username: 'ann', password: 'pw-ann-1' } });
    expect(login.status).toBe(200);
    const after = await t.request('GET', '/todos/none');
    expect(await lineOf(after.headers.get('x-request-id'))).toMatchObject({ method: 'GET', path: '/todos/none', status: 404, uid: (user.body as { id: string }).id });
  });

  // The time text is made once per millisecond (told by the monotonic clock): it follows the wall
  // clock, never more than a millisecond behind, and is never stuck.
  it('a line\'s time is the wall clock when the answer ended (to the millisecond)', async () => {
    const t = await serve();
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const before = Date.now();
      const res = await t.request('GET', '/todos');
      const line = await lineOf(res.headers.get('x-request-id'));
      const after = Date.now();
      const at = Date.parse(line.time);
      expect(at).toBeGreaterThanOrEqual(before - 1);
      expect(at).toBeLessThanOrEqual(after);
      times.push(at);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(new Set(times).size).toBe(3);
  });

  it('the client\'s own safe X-Request-Id is the line\'s id', async () => {
    const t = await serve();
    await t.request('GET', '/todos', { headers: { 'x-request-id': 'from-proxy-42' } });
    expect(await lineOf('from-proxy-42')).toMatchObject({ path: '/todos', status: 200 });
  });

  it('health checks are left out unless asked for', async () => {
    const t = await serve();
    const health = await t.request('GET', '/healthz');
    expect(health.status).toBe(200);
    const marker = await t.request('GET', '/todos');
    await lineOf(marker.headers.get('x-request-id'));
    expect(lines.some((l) => l.id === health.headers.get('x-request-id'))).toBe(false);
    const withHealth = await serve({ accessLog: { health: true } });
    const asked = await withHealth.request('GET', '/readyz');
    expect(await lineOf(asked.headers.get('x-request-id'))).toMatchObject({ path: '/readyz', status: 200 });
  });

  it('accessLog: false writes none', async () => {
    const t = await serve({ accessLog: false });
    const res = await t.request('GET', '/todos');
    const marker = await (await serve()).request('GET', '/todos');
    await lineOf(marker.headers.get('x-request-id'));
    expect(lines.some((l) => l.id === res.headers.get('x-request-id'))).toBe(false);
  });

  it('CORS answers expose X-Request-Id to the calling page', async () => {
    const t = await serve();
    const res = await t.request('GET', '/todos', { headers: { origin: 'http://web.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('http://web.example');
    expect(res.headers.get('access-control-expose-headers')).toBe('X-Request-Id, X-Total-Count, ETag');
  });

  it('the access line and the metrics sample both come once per answer, on svc\'s own server and on a host\'s', async () => {
    const samples: RequestSample[] = [];
    const observe = (sample: RequestSample): void => void samples.push(sample);
    // svc's own server: its drain's one 'close' listener tells both.
    const own = await serve({ observe });
    const a = await own.request('GET', '/todos/none');
    const ownLine = await lineOf(a.headers.get('x-request-id'));
    expect(ownLine).toMatchObject({ path: '/todos/none', status: 404, aborted: false });
    expect(ownLine.bytes).toBeGreaterThan(Number(a.headers.get('content-length')));
    // A host application's server: svc adds its own 'close' listener.
    const host = createHttpServer();
    const svc = await createServer({ store, resources: [new Collection({ path: '/notes', properties: {}, store: store.collection('notes-host') })], logger, observe, httpServer: host });
    host.on('request', (req, res) => svc.handler(req, res));
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${url}/notes`);
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        const line = await lineOf(res.headers.get('x-request-id'));
        expect(line).toMatchObject({ method: 'GET', path: '/notes', status: 200, client: '127.0.0.1', aborted: false });
        expect(line.bytes).toBeGreaterThan(Number(res.headers.get('content-length')));
        expect(lines.filter((l) => l.id === line.id)).toHaveLength(1);
      }
      for (let i = 0; i < 200 && samples.filter((x) => x.resource === '/notes').length < 3; i++) await new Promise((r) => setTimeout(r, 5));
      expect(samples.filter((x) => x.resource === '/notes')).toHaveLength(3);
      expect(samples.filter((x) => x.resource === '/todos')).toMatchObject([{ method: 'GET', status: 404 }]);
      for (const x of samples) expect(x.seconds).toBeGreaterThanOrEqual(0);
    } finally {
      await svc.close();
      await new Promise((resolve) => host.close(resolve));
    }
  });
});
