import { request as httpRequest } from 'node:http';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadApp } from '@svc/server';
import { createConsoleLogger, silentLogger } from '@svc/core';
import type { LogStream } from '@svc/core';
import { memoryLogger, runApp, writeApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { bareSocketIo } from './helpers/bareSocketIo.js';

// Issue 23 (5): Prometheus text at /metrics. On the app's port it is for root requests only; on a
// port of its own (app.json metrics.port) it asks no key and listens on 127.0.0.1 by default.

const KEY = 'a'.repeat(64);

/** One sample of the text format: name, labels, value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format strictly: a line that is neither a comment nor a sample fails the test. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      expect(line).toMatch(/^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$/);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    expect(m, line).not.toBeNull();
    const [, name, rawLabels, value] = m as unknown as [string, string, string | undefined, string];
    const labels: Record<string, string> = {};
    const labelText = rawLabels ?? '';
    const pattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
    let consumed = 0;
    for (let l = pattern.exec(labelText); l !== null; l = pattern.exec(labelText)) {
      labels[l[1] as string] = l[2] as string;
      consumed = pattern.lastIndex;
    }
    expect(consumed, line).toBe(labelText.length);
    const number = value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : Number(value);
    expect(Number.isNaN(number) && !/^nan$/i.test(value), line).toBe(false);
    samples.push({ name, labels, value: number });
  }
  return samples;
}

function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found?.value;
}

/** A request with a method fetch would refuse to send, on a raw path. */
function raw(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('metrics on the app\'s port (production)', () => {
  let h: AppHandle;
  let port: number;
  const scrape = async (headers: Record<string, string> = { 'svc-ssh-key': KEY }) => fetch(`${h.url}/metrics`, { headers });
  const samples = async (): Promise<Sample[]> => {
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parse(await res.text());
  };

  beforeAll(async () => {
    h = await runApp(
      {
        'app.json': { metrics: {}, scripts: { timeoutMs: 200 }, loginRateLimit: { max: 1, slowdownMs: 0 } },
        '.svc/keys.json': { [KEY]: true },
        'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
        'resources/todos/post.js': 'this.seen = true;',
        'resources/loops/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
        'resources/loops/post.js': 'while (true) {}',
        'resources/users/config.json': { type: 'UserCollection', properties: {} },
      },
      { env: 'production' },
    );
    port = Number(new URL(h.url).port);
    // Written before the first scrape: object counts are read at most every 10 s.
    for (const title of ['a', 'b']) expect((await h.request('POST', '/todos', { title })).status).toBe(200);
    expect((await h.request('POST', '/users', { username: 'alice', password: 'pw' }, { 'svc-ssh-key': KEY })).status).toBe(200);
    expect((await h.client()('POST', '/users/login', { username: 'alice', password: 'pw' })).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('is refused to anyone without the root key', async () => {
    expect((await scrape({})).status).toBe(403);
    expect((await scrape({ 'svc-ssh-key': 'b'.repeat(64) })).status).toBe(403);
    const forbidden = await scrape({});
    expect(await forbidden.json()).toMatchObject({ status: 403, message: 'metrics are served to root requests only (svc-ssh-key)' });
    expect((await scrape()).status).toBe(200);
  });

  it('serves the text format, with the store, sessions, sockets and scripts', async () => {
    const s = await samples();
    expect(valueOf(s, 'svc_store_objects', { collection: 'todos' })).toBe(2);
    expect(valueOf(s, 'svc_store_objects', { collection: 'users' })).toBe(1);
    expect(valueOf(s, 'svc_sessions')).toBe(1);
    expect(valueOf(s, 'svc_realtime_sockets')).toBe(0);
    expect(valueOf(s, 'svc_script_runs_total')).toBeGreaterThanOrEqual(2);
    // todos/post.js (this.seen = true) is a static plan: answered without a script process.
    expect(valueOf(s, 'svc_script_planned_total')).toBeGreaterThanOrEqual(2);
    expect(valueOf(s, 'svc_script_queue')).toBe(0);
    expect(valueOf(s, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('counts requests by resource, method and status, with their durations', async () => {
    const before = await samples();
    const get = { resource: '/todos', method: 'GET', status: '200' };
    const count = valueOf(before, 'svc_http_requests_total', get) ?? 0;
    const timed = valueOf(before, 'svc_http_request_duration_seconds_count', { resource: '/todos', method: 'GET' }) ?? 0;
    for (let i = 0; i < 3; i++) expect((await h.request('GET', '/todos')).status).toBe(200);
    expect((await h.request('DELETE', '/todos/nosuchid')).status).toBe(404);
    const after = await samples();
    expect(valueOf(after, 'svc_http_requests_total', get)).toBe(count + 3);
    expect(valueOf(after, 'svc_http_request_duration_seconds_count', { resource: '/todos', method: 'GET' })).toBe(timed + 3);
    expect(valueOf(after, 'svc_http_request_duration_seconds_bucket', { resource: '/todos', method: 'GET', le: '+Inf' })).toBe(timed + 3);
    expect(valueOf(after, 'svc_http_requests_total', { resource: '/todos', method: 'DELETE', status: '404' })).toBeGreaterThanOrEqual(1);
    // The scrapes themselves: counted under their route.
    expect(valueOf(after, 'svc_http_requests_total', { resource: '/metrics', method: 'GET', status: '200' })).toBeGreaterThanOrEqual(1);
  });

  it('counts health checks under their own path, not as resource="none" (issue 38, 18)', async () => {
    const before = await samples();
    const none = valueOf(before, 'svc_http_requests_total', { resource: 'none', method: 'GET', status: '200' }) ?? 0;
    const live = valueOf(before, 'svc_http_requests_total', { resource: '/healthz', method: 'GET', status: '200' }) ?? 0;
    const ready = valueOf(before, 'svc_http_requests_total', { resource: '/readyz', method: 'GET', status: '200' }) ?? 0;
    for (let i = 0; i < 2; i++) expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${h.url}/readyz`)).status).toBe(200);
    const after = await samples();
    expect(valueOf(after, 'svc_http_requests_total', { resource: '/healthz', method: 'GET', status: '200' })).toBe(live + 2);
    expect(valueOf(after, 'svc_http_requests_total', { resource: '/readyz', method: 'GET', status: '200' })).toBe(ready + 1);
    expect(valueOf(after, 'svc_http_requests_total', { resource: 'none', method: 'GET', status: '200' }) ?? 0).toBe(none);
  });

  it('random paths and methods add no series (an attacker cannot grow the label sets)', async () => {
    await samples();
    const seriesBefore = (await samples()).filter((s) => s.name === 'svc_http_requests_total').length;
    for (let i = 0; i < 40; i++) {
      expect(await raw(port, 'GET', `/random-${i}-${Math.random().toString(36).slice(2)}?x=${i}`)).toBe(404);
      // Methods node accepts but svc has no label of its own for.
      expect(await raw(port, ['PROPFIND', 'MKCOL', 'PURGE', 'LOCK', 'SEARCH', 'REPORT'][i % 6] as string, `/todos/${i}`)).toBeGreaterThanOrEqual(400);
    }
    const after = await samples();
    const series = after.filter((s) => s.name === 'svc_http_requests_total');
    expect(series.length).toBeLessThanOrEqual(seriesBefore + 4);
    for (const s of series) {
      expect(['/todos', '/loops', '/users', '/metrics', '/svc.js', '/dashboard', '/healthz', '/readyz', 'none', 'public', 'other']).toContain(s.labels.resource);
      expect(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'other']).toContain(s.labels.method);
      expect(s.labels.status).toMatch(/^(\d{3}|\dxx|aborted)$/);
    }
    expect(valueOf(after, 'svc_http_requests_total', { resource: 'none', method: 'GET', status: '404' })).toBeGreaterThanOrEqual(40);
    expect(after.filter((s) => s.labels.method === 'other').reduce((n, s) => n + (s.name === 'svc_http_requests_total' ? s.value : 0), 0)).toBeGreaterThanOrEqual(40);
  });

  it('counts the realtime sockets open now', async () => {
    const { ws } = await bareSocketIo(port);
    expect(valueOf(await samples(), 'svc_realtime_sockets')).toBe(1);
    const closed = new Promise((resolve) => ws.addEventListener('close', resolve));
    ws.close();
    await closed;
  });

  it('counts script timeouts and login refusals', async () => {
    expect((await h.request('POST', '/loops', { title: 'x' })).status).toBe(500);
    const login = h.client();
    expect((await login('POST', '/users/login', { username: 'alice', password: 'wrong' })).status).toBe(401);
    expect((await login('POST', '/users/login', { username: 'alice', password: 'wrong' })).status).toBe(429);
    const s = await samples();
    expect(valueOf(s, 'svc_script_timeouts_total')).toBe(1);
    expect(valueOf(s, 'svc_login_limited_total', { outcome: 'refused' })).toBe(1);
  });
});

describe('metrics on a port of their own', () => {
  let h: AppHandle;
  let metricsUrl: string;

  beforeAll(async () => {
    h = await runApp({ 'app.json': { metrics: { port: 0, path: '/internal/metrics' } }, 'resources/todos/config.json': { type: 'Collection', properties: {} } }, { env: 'production' });
    metricsUrl = h.app.metricsUrl as string;
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('listens on 127.0.0.1 by default and asks no key there; the app\'s port does not serve them', async () => {
    const url = new URL(metricsUrl);
    expect(url.hostname).toBe('127.0.0.1');
    expect(url.pathname).toBe('/internal/metrics');
    expect(url.port).not.toBe(new URL(h.url).port);
    expect((await h.request('GET', '/todos')).status).toBe(200);
    const res = await fetch(metricsUrl);
    expect(res.status).toBe(200);
    const s = parse(await res.text());
    expect(valueOf(s, 'svc_http_requests_total', { resource: '/todos', method: 'GET', status: '200' })).toBe(1);
    // The metrics port answers nothing else; the app's port has nothing at the path.
    expect((await fetch(`${url.origin}/todos`)).status).toBe(404);
    expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(405);
    expect((await h.request('GET', '/internal/metrics', undefined, { 'svc-ssh-key': KEY })).status).toBe(404);
  });
});

describe('metrics in development and by default', () => {
  it('development: root only too (any key from this machine); off unless app.json has "metrics"', async () => {
    const on = await runApp({ 'app.json': { metrics: {} } });
    const off = await runApp({ 'resources/todos/config.json': { type: 'Collection', properties: {} } });
    try {
      expect((await fetch(`${on.url}/metrics`)).status).toBe(403);
      expect((await fetch(`${on.url}/metrics`, { headers: { 'svc-ssh-key': 'any' } })).status).toBe(200);
      // A development key never works through a proxy (a forwarding header); a client's own
      // Connection: close (Python's urllib) is no proxy (issue 38, 6).
      const onPort = Number(new URL(on.url).port);
      expect(await raw(onPort, 'GET', '/metrics', { 'svc-ssh-key': 'any', connection: 'close' })).toBe(200);
      expect(await raw(onPort, 'GET', '/metrics', { 'svc-ssh-key': 'any', 'x-forwarded-for': '203.0.113.9' })).toBe(403);
      expect(off.app.metricsUrl).toBeUndefined();
      expect((await fetch(`${off.url}/metrics`, { headers: { 'svc-ssh-key': 'any' } })).status).toBe(404);
      const disabled = await runApp({ 'app.json': { metrics: { enabled: false } } });
      expect((await fetch(`${disabled.url}/metrics`, { headers: { 'svc-ssh-key': 'any' } })).status).toBe(404);
      await disabled.close();
    } finally {
      await on.close();
      await off.close();
    }
  }, 60_000);

  it('a scrape on the app\'s port has its access line as any root request (docs/deploying.md says so)', async () => {
    let written = '';
    const stream: LogStream = { write: (text: string) => ((written += text), true), writableLength: 0 };
    const logger = createConsoleLogger({ stream, accessFlushMs: 0 });
    const on = await runApp({ 'app.json': { metrics: {} } }, { logger });
    try {
      expect((await fetch(`${on.url}/metrics`, { headers: { 'svc-ssh-key': 'any', 'x-request-id': 'scrape-1' } })).status).toBe(200);
      for (let waited = 0; waited < 5_000 && !written.includes('id=scrape-1'); waited += 50) await new Promise((r) => setTimeout(r, 50));
      expect(written).toMatch(/ info GET \/metrics 200 .*id=scrape-1/);
    } finally {
      await on.close();
    }
  });

  it('an app\'s own resource at the path wins, with a warning', async () => {
    const logger = memoryLogger();
    const h = await runApp({ 'app.json': { metrics: {} }, 'resources/metrics/config.json': { type: 'Collection', properties: {} } }, { logger });
    try {
      expect((await h.request('GET', '/metrics', undefined, { 'svc-ssh-key': 'any' })).body).toEqual([]);
      expect(logger.lines.some((l) => l.startsWith('warn metrics: the app has a resource at /metrics'))).toBe(true);
      expect(logger.lines.filter((l) => l.includes('/metrics') && l.startsWith('info') && /GET/.test(l))).toEqual([]);
    } finally {
      await h.close();
    }
  }, 60_000);

  it('app.json metrics is checked at start', async () => {
    for (const [metrics, problem] of [
      [{ path: 'metrics' }, '"metrics.path" must be a path such as "/metrics"'],
      [{ path: '/a/../b' }, '"metrics.path" must be a path such as "/metrics"'],
      [{ port: 70000 }, '"metrics.port" must be a whole number from 0 to 65535'],
      [{ host: '' }, '"metrics.host" must be a non-empty string'],
      [{ secret: true }, 'unknown key "metrics.secret"'],
    ] as const) {
      const dir = await writeApp({ 'app.json': { metrics } });
      await expect(loadApp(dir, silentLogger)).rejects.toThrow(problem);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
