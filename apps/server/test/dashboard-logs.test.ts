import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import type { AccessEntry, Logger } from '@svc/core';
import type { AccessLogEntry, LogEntry } from '@svc/dashboard';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';
import { LogRing } from '../src/dashboard/logRing.js';

// Issue 23 (4): the dashboard's Logs page: the last log entries of the process (server lines and
// answered requests), filtered by status, path, user, time and level, root only, and live.

const KEY = 'b'.repeat(64);
let running: { app: RunningApp; dir: string }[] = [];

async function start(env: 'development' | 'production', appJson: object = {}, logger: Logger = silentLogger): Promise<RunningApp> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-dash-logs-'));
  const files: Record<string, object> = {
    'app.json': appJson,
    'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
    'resources/users/config.json': { type: 'UserCollection', properties: {} },
  };
  if (env === 'production') files['.svc/keys.json'] = { [KEY]: true };
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), JSON.stringify(content));
  }
  const app = await startApp({ appDir: dir, port: 0, env, host: '127.0.0.1', logger });
  running.push({ app, dir });
  return app;
}

afterEach(async () => {
  for (const t of running) {
    await t.app.close();
    await rm(t.dir, { recursive: true, force: true });
  }
  running = [];
});

const ROOT = { 'svc-ssh-key': KEY };

async function logs(app: RunningApp, query = '', headers: Record<string, string> = ROOT): Promise<{ status: number; entries: LogEntry[]; body: Record<string, unknown> }> {
  const res = await fetch(`${app.url}/dashboard/api/logs${query}`, { headers });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, entries: (body.entries ?? []) as LogEntry[], body };
}

/** Waits (bounded) until the logs API has the request's access line (written once its answer is over). */
async function accessLine(app: RunningApp, id: string | null): Promise<AccessLogEntry> {
  for (let i = 0; i < 200; i++) {
    const found = (await logs(app, '?kind=access')).entries.find((e) => e.kind === 'access' && e.id === id);
    if (found) return found as AccessLogEntry;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no access line ${id}`);
}

describe('GET /dashboard/api/logs', () => {
  it('is root only: no key, a wrong key and another site are refused', async () => {
    const app = await start('production');
    expect((await logs(app, '', {})).status).toBe(401);
    expect((await logs(app, '', { 'svc-ssh-key': 'c'.repeat(64) })).status).toBe(401);
    expect((await logs(app, '', { ...ROOT, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    const ok = await logs(app);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ capacity: 2000 });
  });

  it('keeps access lines and server lines, filtered by status, path, user, time, level and kind', async () => {
    const lines: string[] = [];
    const app = await start('production', {}, { ...silentLogger, warn: (m) => lines.push(m) });
    const base = { 'content-type': 'application/json' };
    const user = (await (await fetch(`${app.url}/users`, { method: 'POST', headers: base, body: JSON.stringify({ username: 'ann', password: 'pw-ann-2' }) })).json()) as { id: string };
    const login = await fetch(`${app.url}/users/login`, { method: 'POST', headers: base, body: JSON.stringify({ username: 'ann', password: 'pw-ann-2' }) });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
    // A line is written when its answer is over, which may be after the client has it: `before`
    // is taken once the login's line is there, in a later millisecond.
    const loginLine = await accessLine(app, login.headers.get('x-request-id'));
    for (let i = 0; i < 100 && new Date().toISOString() <= loginLine.time; i++) await new Promise((r) => setTimeout(r, 2));
    const before = new Date().toISOString();
    const mine = await fetch(`${app.url}/todos?secret=QUERYSECRET`, { headers: { cookie } });
    const missing = await fetch(`${app.url}/nothing/here`);
    await accessLine(app, mine.headers.get('x-request-id'));
    await accessLine(app, missing.headers.get('x-request-id'));

    const notFound = await logs(app, '?status=4xx');
    expect(notFound.entries.length).toBeGreaterThan(0);
    expect(notFound.entries.every((e) => e.kind === 'access' && e.status >= 400 && e.status <= 499)).toBe(true);
    expect(notFound.entries.some((e) => e.kind === 'access' && e.path === '/nothing/here')).toBe(true);

    const byPath = await logs(app, '?path=/todos');
    expect(byPath.entries.map((e) => e.kind === 'access' && e.path)).toEqual(['/todos']);
    expect(JSON.stringify(byPath.entries)).not.toContain('QUERYSECRET');

    const byUser = await logs(app, `?user=${user.id}`);
    expect(byUser.entries).toHaveLength(1);
    expect(byUser.entries[0]).toMatchObject({ kind: 'access', method: 'GET', path: '/todos', status: 200, uid: user.id, client: '127.0.0.1' });

    const since = await logs(app, `?since=${encodeURIComponent(before)}&kind=access`);
    expect(since.entries.every((e) => e.time >= before)).toBe(true);
    expect(since.entries.some((e) => e.kind === 'access' && e.path.startsWith('/users'))).toBe(false);
    expect((await logs(app, `?until=${encodeURIComponent(before)}&path=/todos`)).entries).toHaveLength(0);

    // The start's warning (production without... no: CORS info), and levels: warn and worse.
    const warnings = await logs(app, '?level=warn');
    expect(warnings.entries.every((e) => e.level !== 'info')).toBe(true);
    const server = await logs(app, '?kind=log');
    expect(server.entries.some((e) => e.kind === 'log' && e.message.includes('CORS'))).toBe(true);

    expect((await logs(app, '?status=abc')).status).toBe(400);
    expect((await logs(app, '?since=yesterday')).status).toBe(400);
    expect((await logs(app, '?limit=0')).status).toBe(400);
    expect((await logs(app, '?limit=1&kind=access')).entries).toHaveLength(1);
  });

  it('app.json log.access: false keeps no access line', async () => {
    const app = await start('production', { log: { access: false } });
    await (await fetch(`${app.url}/todos`)).arrayBuffer();
    await (await fetch(`${app.url}/todos`)).arrayBuffer();
    // The logs call itself would be the next access line: none is there for the earlier ones either.
    expect((await logs(app, '?kind=access')).entries).toHaveLength(0);
  });

  it('the live stream carries each answered request', async () => {
    const app = await start('development');
    const controller = new AbortController();
    const res = await fetch(`${app.url}/dashboard/api/stream`, { headers: { 'svc-ssh-key': 'dev' }, signal: controller.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    const collect = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        seen += value;
      }
    })().catch(() => undefined);
    const answered = await fetch(`${app.url}/todos/live-one`);
    const id = answered.headers.get('x-request-id') as string;
    for (let i = 0; i < 250 && !seen.includes(id); i++) await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    await collect;
    const event = seen
      .split('\n\n')
      .filter((c) => c.startsWith('data: '))
      .map((c) => JSON.parse(c.slice(6)) as Record<string, unknown>)
      .find((e) => e.id === id);
    expect(event).toMatchObject({ kind: 'access', method: 'GET', path: '/todos/live-one', status: 404, client: '127.0.0.1' });
  });

  it('the log never holds a root key, a cookie or a password sent by a client', async () => {
    const written: string[] = [];
    const sink = (m: string, f?: Record<string, unknown>): void => {
      written.push(m + JSON.stringify(f ?? {}));
    };
    const app = await start('production', {}, { info: sink, warn: sink, error: sink, access: (e: AccessEntry) => written.push(JSON.stringify(e)) });
    await fetch(`${app.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json', cookie: 'sid=COOKIESECRET', 'svc-ssh-key': 'KEYSECRET' }, body: JSON.stringify({ username: 'nobody', password: 'PASSSECRET' }) });
    await fetch(`${app.url}/todos?password=QSECRET`, { headers: { authorization: 'Bearer AUTHSECRET' } });
    const all = JSON.stringify((await logs(app)).entries) + written.join('\n');
    for (const secret of ['COOKIESECRET', 'KEYSECRET', 'PASSSECRET', 'QSECRET', 'AUTHSECRET']) expect(all).not.toContain(secret);
  });
});

describe('LogRing', () => {
  const access = (i: number, path = '/p'): AccessLogEntry => ({ kind: 'access', time: new Date(1_700_000_000_000 + i).toISOString(), level: 'info', id: `r${i}`, method: 'GET', path, status: 200, ms: 1, client: '127.0.0.1', bytes: 10, aborted: false });

  it('keeps the newest entries up to its count', () => {
    const ring = new LogRing({ maxEntries: 100 });
    for (let i = 0; i < 1000; i++) ring.push(access(i));
    expect(ring.size).toBe(100);
    const all = ring.find({}, 1000);
    expect(all.map((e) => (e as AccessLogEntry).id)).toEqual(Array.from({ length: 100 }, (_, i) => `r${900 + i}`));
    expect(ring.find({}, 3).map((e) => (e as AccessLogEntry).id)).toEqual(['r997', 'r998', 'r999']);
  });

  it('keeps its bytes bounded whatever the entries hold (long paths, long messages)', () => {
    const ring = new LogRing({ maxEntries: 2000, maxBytes: 1 << 20 });
    for (let i = 0; i < 3000; i++) ring.push(access(i, `/${'x'.repeat(10_000)}`));
    for (let i = 0; i < 100; i++) ring.push({ kind: 'log', time: new Date().toISOString(), level: 'info', message: 'm'.repeat(1_000_000) });
    expect(ring.byteSize).toBeLessThanOrEqual(1 << 20);
    expect(ring.size).toBeGreaterThan(0);
    const last = ring.find({}, 1)[0];
    expect(last?.kind === 'log' && last.message.length).toBeLessThan(10_000);
  });

  // Access entries are kept as columns and texts in one arena (bytes), made objects again when read.
  const mixed = (i: number): LogEntry => {
    if (i % 7 === 3) return { kind: 'log', time: new Date(1_700_000_000_000 + i).toISOString(), level: i % 2 === 0 ? 'warn' : 'info', message: `line ${i}` };
    const entry: AccessLogEntry = { kind: 'access', time: new Date(1_700_000_000_000 + i).toISOString(), level: 'info', id: `req-${i.toString(36)}`, method: i % 3 === 0 ? 'POST' : 'GET', path: `/items/${'é'.repeat(i % 5)}${'x'.repeat((i * 37) % 300)}`, status: 200 + (i % 4) * 100, ms: (i % 1000) / 10, client: i % 2 === 0 ? '127.0.0.1' : '::1', bytes: i * 13, aborted: i % 11 === 0 };
    if (i % 4 === 1) entry.uid = `user-${i}`;
    return entry;
  };

  it('gives back every kept entry as it was pushed, across the arena wrapping and growing', () => {
    const ring = new LogRing({ maxEntries: 300 });
    const pushed: LogEntry[] = [];
    for (let i = 0; i < 5000; i++) {
      const entry = mixed(i);
      pushed.push(entry);
      ring.push(entry);
      if (i % 997 === 0) expect(ring.find({}, 300)).toEqual(pushed.slice(-Math.min(300, pushed.length)));
    }
    expect(ring.size).toBe(300);
    expect(ring.find({}, 300)).toEqual(pushed.slice(-300));
    expect(ring.find({ kind: 'access', statusMin: 400, statusMax: 499 }, 300)).toEqual(pushed.slice(-300).filter((e) => e.kind === 'access' && e.status === 400));
    expect(ring.find({ user: 'user-4997' }, 300)).toEqual([pushed[4997]]);
  });

  it('under a small byte bound keeps only the newest entries, each as it was pushed', () => {
    const ring = new LogRing({ maxEntries: 2000, maxBytes: 64 * 1024 });
    const pushed: LogEntry[] = [];
    for (let i = 0; i < 3000; i++) {
      const entry = mixed(i);
      pushed.push(entry);
      ring.push(entry);
      expect(ring.byteSize).toBeLessThanOrEqual(64 * 1024);
    }
    const kept = ring.find({}, 2000);
    expect(kept.length).toBe(ring.size);
    expect(kept.length).toBeGreaterThan(50);
    expect(kept).toEqual(pushed.slice(-kept.length));
  });

  it('keeps an entry with a text beyond Latin-1 (a uid in another script) as it is', () => {
    const ring = new LogRing({ maxEntries: 10 });
    const entry: AccessLogEntry = { ...access(1), uid: 'ユーザー', path: '/p/€' };
    ring.push(access(0));
    ring.push(entry);
    ring.push(access(2));
    expect(ring.find({}, 10)).toEqual([access(0), entry, access(2)]);
    expect(ring.find({ user: 'ユーザー' }, 10)).toEqual([entry]);
  });

  it('holds nothing of what it was handed but its time and client texts: the entry read back is a new object', () => {
    const ring = new LogRing({ maxEntries: 10 });
    const entry = access(5);
    ring.push(entry);
    const [back] = ring.find({}, 1);
    expect(back).toEqual(entry);
    expect(back).not.toBe(entry);
  });

  it('holds the first of a run of equal time and client texts, and a client beyond Latin-1 as it is', () => {
    const ring = new LogRing({ maxEntries: 10 });
    const pushed = [0, 1, 2].map((i) => ({ ...access(i), time: i < 2 ? '2026-11-27T00:00:00.000Z' : '2026-11-27T00:00:00.001Z', client: i === 2 ? 'クライアント' : ['127', '0', '0', '1'].join('.') }));
    for (const entry of pushed) ring.push(entry);
    const back = ring.find({}, 10) as AccessLogEntry[];
    expect(back).toEqual(pushed);
    expect(back[0]?.time).toBe(back[1]?.time);
    expect(back[0]?.client).toBe('127.0.0.1');
    expect(back[2]?.client).toBe('クライアント');
  });
});
