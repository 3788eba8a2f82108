import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import eventType from '@svc/type-event';
import { startFixture } from './helpers/app.js';
import type { FixtureApp, TestClient } from './helpers/app.js';

const fixture = fileURLToPath(new URL('./fixtures/event-app', import.meta.url));
let app: FixtureApp;
let anon: TestClient;

beforeAll(async () => {
  app = await startFixture(fixture, [eventType]);
  anon = app.client();
});
afterAll(async () => {
  await app?.close();
});

async function loggedIn(username: string): Promise<{ client: TestClient; id: string }> {
  const client = app.client();
  const made = await client.request('POST', '/users', { body: { username, password: 'pw-123456' } });
  expect(made.status).toBe(200);
  expect((await client.request('POST', '/users/login', { body: { username, password: 'pw-123456' } })).status).toBe(200);
  return { client, id: (made.body as { id: string }).id };
}

describe('Event resource: On GET and On POST see the request', () => {
  const CASES: { name: string; method: string; path: string; body?: unknown; form?: Record<string, string>; expected: Record<string, unknown> }[] = [
    { name: 'GET on a sub-route', method: 'GET', path: '/echo/a/b?x=1&y=two', expected: { event: 'get', url: '/a/b', parts: ['a', 'b'], query: { x: '1', y: 'two' }, body: {} } },
    { name: 'GET on the route itself', method: 'GET', path: '/echo', expected: { event: 'get', url: '/', parts: [], query: {}, body: {} } },
    { name: 'GET with a JSON query', method: 'GET', path: `/echo/x?${encodeURIComponent(JSON.stringify({ a: { b: 1 }, list: [1, 2] }))}`, expected: { url: '/x', parts: ['x'], query: { a: { b: 1 }, list: [1, 2] } } },
    { name: 'POST with a JSON body', method: 'POST', path: '/echo/add/42?k=1', body: { a: 1, nested: { b: [1, 2] } }, expected: { event: 'post', url: '/add/42', parts: ['add', '42'], query: { k: '1' }, body: { a: 1, nested: { b: [1, 2] } } } },
    { name: 'POST with a form body', method: 'POST', path: '/echo', form: { a: '1', b: 'two' }, expected: { event: 'post', url: '/', body: { a: '1', b: 'two' } } },
    { name: 'POST with no body', method: 'POST', path: '/echo/z', expected: { event: 'post', url: '/z', body: {} } },
  ];

  it.each(CASES)('$name', async ({ method, path, body, form, expected }) => {
    const res = await anon.request(method, path, { ...(body !== undefined ? { body } : {}), ...(form ? { form } : {}) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.body).toMatchObject({ ...expected, thisIsEmpty: true });
  });

  it('gives the script ctx, internal=false and isRoot from the request', async () => {
    expect((await anon.request('GET', '/echo')).body).toMatchObject({ hasCtx: true, internal: false, isRoot: false });
    expect((await anon.request('GET', '/echo', { headers: { 'svc-ssh-key': 'dev' } })).body).toMatchObject({ isRoot: true });
  });

  it('an Event called by another script through the svc client sees internal=true and its own url', async () => {
    const res = await anon.request('GET', '/relay');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ event: 'get', url: '/via/relay', parts: ['via', 'relay'], query: { z: 1 }, internal: true });
  });

  it('me is the logged-in user (undefined otherwise), isMe works', async () => {
    expect((await anon.request('GET', '/whoami')).text).toBe('nobody');
    const { client, id } = await loggedIn('ada');
    expect((await client.request('GET', '/whoami')).body).toEqual({ username: 'ada', id, isMe: true });
  });

  it("the spec's /add-follower/<id>: body and parts reach On POST, cancel(401) when logged out", async () => {
    const out = await anon.request('POST', '/add-follower/u2', { body: { note: 'hi' } });
    expect(out.status).toBe(401);
    expect(out.body).toEqual({ status: 401, statusCode: 401, message: 'log in first' });
    const { client, id } = await loggedIn('grace');
    expect((await client.request('POST', '/add-follower/u2', { body: { note: 'hi' } })).body).toEqual({ follower: 'grace', target: 'u2', note: 'hi' });
    const self = await client.request('POST', `/add-follower/${id}`, { body: {} });
    expect(self.status).toBe(400);
    expect(self.body).toEqual({ status: 400, statusCode: 400, message: 'you cannot follow yourself' });
  });

  it('the svc client reads and writes other resources (callbacks and await)', async () => {
    const root = { 'svc-ssh-key': 'dev' };
    for (const n of [3, 1, 2]) expect((await anon.request('POST', '/items', { body: { n }, headers: root })).status).toBe(200);
    expect((await anon.request('GET', '/count')).body).toEqual({ count: 3, first: 1 });
    expect((await anon.request('POST', '/count', { body: { n: 9 } })).body).toEqual({ made: 9, total: 4 });
  });
});

describe('Event resource: what setResult() answers', () => {
  it('a string is sent as it is, as HTML with nosniff', async () => {
    const res = await anon.request('GET', '/page?name=Ada');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.text).toBe('<h1>Thanks, Ada</h1>');
  });

  it('a number is JSON', async () => {
    const res = await anon.request('GET', '/onlyget');
    expect(res.status).toBe(200);
    expect(res.text).toBe('42');
  });

  it('no setResult() at all, or setResult(undefined), is 200 {} as dpd-event', async () => {
    for (const method of ['GET', 'POST']) {
      const res = await anon.request(method, '/silent/anything');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.body).toEqual({});
    }
  });

  it('no setResult() answers `this`, with what the script put on it', async () => {
    const res = await anon.request('GET', '/legacy/a/b');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ seen: 2 });
  });
});

describe('Event resource: errors', () => {
  it.each([
    { path: '/guard', status: 400 },
    { path: '/guard?status=401', status: 401 },
    { path: '/guard/deep/path?status=418', status: 418 },
  ])('cancel() in On GET answers its status: $path', async ({ path, status }) => {
    const res = await anon.request('GET', path);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ status, statusCode: status, message: 'refused by the script' });
  });

  it('error() in On POST answers 400 with every collected error', async () => {
    const res = await anon.request('POST', '/guard', { body: { age: -1 } });
    expect(res.status).toBe(400);
    expect((res.body as { errors: Record<string, string> }).errors).toEqual({ name: 'name is required', age: 'age must be positive' });
  });

  it('methods without a script are 404 "resource not found", as Deployd answered', async () => {
    const cases: [string, string][] = [
      ['PUT', '/echo/1'],
      ['DELETE', '/echo/1'],
      ['POST', '/onlyget'],
      ['GET', '/noscripts'],
      ['POST', '/legacy/x'],
    ];
    for (const [method, path] of cases) {
      const res = await anon.request(method, path, method === 'GET' || method === 'DELETE' ? {} : { body: {} });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toEqual({ status: 404, statusCode: 404, message: 'resource not found' });
    }
  });

  it("a script's own cancel() with a 5xx status is its answer, not a server error in the log", async () => {
    const before = app.logs.length;
    const res = await anon.request('GET', '/guard?status=501');
    expect(res.status).toBe(501);
    expect(res.body).toEqual({ status: 501, statusCode: 501, message: 'refused by the script' });
    const lines = app.logs.slice(before);
    expect(lines.filter((l) => l.startsWith('error '))).toEqual([]);
  });
});

describe('Event resource: Deployd\'s EventResource', () => {
  it('"type": "EventResource" loads as Event; typeLabel, order and path draw no warning', () => {
    expect(app.logs.filter((l) => l.includes('legacy') && !l.startsWith('info '))).toEqual([]);
  });

  it('put.js runs for PUT and delete.js for DELETE, as dpd-event 1.1', async () => {
    const put = await anon.request('PUT', '/legacy/7?k=1', { body: { done: true } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ event: 'put', url: '/7', parts: ['7'], body: { done: true } });
    const del = await anon.request('DELETE', '/legacy/7?k=1');
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ event: 'delete', url: '/7', parts: ['7'], query: { k: '1' } });
  });
});
