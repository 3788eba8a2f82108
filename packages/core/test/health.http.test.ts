import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, createEmbeddedStore } from '@svc/core';
import type { Logger, Resource, Store } from '@svc/core';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 23 (2, 4): /healthz and /readyz, cheap, without a session, saying nothing but ok or a
// reason code; an X-Request-Id on every answer, a client's own kept only when it is safe.

let dir: string;
let store: Store;
const servers: TestServer[] = [];
const logged: string[] = [];
const logger: Logger = { info: (m) => logged.push(m), warn: (m) => logged.push(m), error: (m) => logged.push(m) };

async function serve(resources: Resource[] = [], options: Parameters<typeof startTestServer>[2] = {}, on: Store = store): Promise<TestServer> {
  const t = await startTestServer(on, resources, { logger, ...options });
  servers.push(t);
  return t;
}

const todos = (name: string): Collection => new Collection({ path: '/todos', properties: { title: { type: 'string' } }, store: store.collection(name) });

/** A store whose ping the test controls, otherwise the embedded one. */
function pingable(inner: Store, ping: () => Promise<void>): Store & { pings: number } {
  const wrapped = {
    kind: inner.kind,
    pings: 0,
    collection: (name: string) => inner.collection(name),
    ping() {
      wrapped.pings++;
      return ping();
    },
    close: () => Promise.resolve(),
  };
  return wrapped;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-health-'));
  store = await createEmbeddedStore({ dir });
});

afterAll(async () => {
  for (const t of servers) await t.close().catch(() => undefined);
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('health checks', () => {
  it('/healthz and /readyz answer ok without a session, a cookie or a store write', async () => {
    const t = await serve([todos('h1')]);
    const before = await store.collection('_sessions').count({});
    for (const path of ['/healthz', '/readyz', '/readyz?verbose=1']) {
      const res = await t.request('GET', path, { session: false });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
      expect(res.headers.get('set-cookie')).toBeNull();
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9._~+-]+$/);
    }
    const head = await t.request('HEAD', '/readyz', { session: false });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(await store.collection('_sessions').count({})).toBe(before);
    expect(logged.filter((line) => /healthz|readyz/.test(line))).toEqual([]);
  });

  it('other methods on a health path are not health checks', async () => {
    const t = await serve();
    expect((await t.request('POST', '/healthz', { body: {} })).status).toBe(404);
  });

  it('/readyz answers 503 "store" when the store is closed, and names nothing else', async () => {
    const own = await createEmbeddedStore({ dir: join(dir, 'closed') });
    const t = await serve([], {}, own);
    await own.close();
    const res = await t.request('GET', '/readyz', { session: false });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: 'not ready', reason: 'store' });
    // The process itself still answers.
    expect((await t.request('GET', '/healthz', { session: false })).status).toBe(200);
  });

  it('a store that does not answer makes /readyz answer 503 within the ping timeout, and a flood pings it once', async () => {
    const hung = pingable(store, () => new Promise<void>(() => {}));
    const t = await serve([], {}, hung);
    const answers = await Promise.all(Array.from({ length: 50 }, () => t.request('GET', '/readyz', { session: false })));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 50 }, () => 503));
    expect(answers[0]?.body).toEqual({ status: 'not ready', reason: 'store' });
    expect(hung.pings).toBe(1);
    // Cached for a second: the next requests cost the store nothing either.
    await t.request('GET', '/readyz', { session: false });
    expect(hung.pings).toBeLessThanOrEqual(2);
  });

  it('a store whose ping fails with a secret in its message answers only the reason code', async () => {
    const failing = pingable(store, () => Promise.reject(new Error('connect ECONNREFUSED mongodb://admin:hunter2@db.internal:27017')));
    const t = await serve([], {}, failing);
    const res = await t.request('GET', '/readyz', { session: false });
    expect(res.status).toBe(503);
    expect(res.text).toBe('{"status":"not ready","reason":"store"}');
  });

  it('a failing readiness check answers its reason code; liveness is unaffected', async () => {
    let scripts: string | undefined = 'scripts';
    const t = await serve([], { health: { checks: [() => scripts] } });
    expect((await t.request('GET', '/readyz', { session: false })).body).toEqual({ status: 'not ready', reason: 'scripts' });
    expect((await t.request('GET', '/healthz', { session: false })).status).toBe(200);
    scripts = undefined;
    expect((await t.request('GET', '/readyz', { session: false })).status).toBe(200);
  });

  it('paths are configurable, and false turns one off', async () => {
    const t = await serve([], { health: { livePath: '/ops/live', readyPath: false } });
    expect((await t.request('GET', '/ops/live', { session: false })).body).toEqual({ status: 'ok' });
    expect((await t.request('GET', '/readyz', { session: false })).status).toBe(404);
    expect((await t.request('GET', '/healthz', { session: false })).status).toBe(404);
  });

  it("an app's own resource at /healthz keeps it (with a warning)", async () => {
    const own = new Collection({ path: '/healthz', properties: { title: { type: 'string' } }, store: store.collection('h2') });
    const t = await serve([own]);
    const res = await t.request('GET', '/healthz');
    expect(res.body).toEqual([]);
    expect(logged.some((line) => line.includes('resource at /healthz'))).toBe(true);
    expect((await t.request('GET', '/readyz', { session: false })).status).toBe(200);
  });

  it('while draining, /readyz answers 503 "draining" on a connection still open', async () => {
    const t = await serve();
    const port = Number(new URL(t.url).port);
    const agent = new (await import('node:http')).Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string): Promise<{ status: number; body: string; connection: string | undefined }> =>
      new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path, agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
        });
        req.on('error', reject);
        req.end();
      });
    expect((await get('/readyz')).status).toBe(200);
    const drained = t.server.drain({ drainMs: 5000 });
    expect(t.server.draining).toBe(true);
    const during = await get('/readyz');
    expect(during.status).toBe(503);
    expect(JSON.parse(during.body)).toEqual({ status: 'not ready', reason: 'draining' });
    expect(during.connection).toBe('close');
    expect(await drained).toEqual({ cut: 0, closed: 0 });
    agent.destroy();
  });
});

describe('request ids', () => {
  it('every answer carries an X-Request-Id, a new one per request', async () => {
    const t = await serve([todos('r1')]);
    const ids = new Set<string>();
    for (const path of ['/todos', '/todos/nope', '/nothing-here', '/healthz']) {
      const res = await t.request('GET', path);
      const id = res.headers.get('x-request-id');
      expect(id).toMatch(/^[A-Za-z0-9._~+-]{1,128}$/);
      ids.add(id as string);
    }
    expect(ids.size).toBe(4);
  });

  it("a proxy's safe id is kept; anything else is replaced, not echoed", async () => {
    const t = await serve([todos('r2')]);
    const safe = ['abc', 'f3c1a2b4-9d7e-4c1a-8e2f-0123456789ab', 'A.b_c~d+e-f', 'x'.repeat(128)];
    for (const id of safe) expect((await t.request('GET', '/todos', { headers: { 'x-request-id': id } })).headers.get('x-request-id')).toBe(id);
    const hostile = ['x'.repeat(129), 'a b', 'a"b', '<script>', 'a;b=c', '../../etc', 'id\u00e9', '', '%0d%0aSet-Cookie:x'];
    for (const id of hostile) {
      const answered = (await t.request('GET', '/todos', { headers: { 'x-request-id': id } })).headers.get('x-request-id');
      expect(answered).not.toBe(id);
      expect(answered).toMatch(/^[A-Za-z0-9._~+-]{1,128}$/);
    }
  });
});
