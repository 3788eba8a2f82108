import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryLogger, runApp, writeApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';
import { rm } from 'node:fs/promises';

// Issue 38 item 1: `cancel('m', 0)` (also 99, 1.5, -1, -0, 1000, 1e21) in any event script ended
// the server process at the first request that ran it (res.writeHead(0) threw inside the failure
// handler's .catch), so a script taking its status from the request let any client stop the
// server. What a script's status becomes (docs/event-scripts.md, "Refuse a request"):
// - none, or a falsy one (0, -0, NaN, '', null, false): 400, as Deployd 1.2;
// - a whole number from 200 to 599, or a text of one ('403'): that status, as Deployd 1.2;
// - anything else: the script's error, 500, logged with its file and line;
// - a thrown object's status: its own when a number from 400 to 599, else 400 (as before).

const ROOT = { 'svc-ssh-key': 'test-root-key' };

const files = {
  'app.json': { passwordCost: 4 },
  '.svc/keys.json': { 'test-root-key': true },
  'resources/plain/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
  // From the query as a number, as a text, thrown as an object's statusCode.
  'resources/guarded/config.json': { type: 'Collection', properties: {} },
  'resources/guarded/beforerequest.js': "if (query.s !== undefined) cancel('no', Number(query.s));\nif (query.t !== undefined) cancel('no', query.t);\nif (query.o !== undefined) throw { message: 'no', statusCode: Number(query.o) };",
  // From the body, any JSON: On Post, On Validate (cancelIf), On Put (cancelUnless).
  'resources/written/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
  'resources/written/post.js': "if (ctx.body.s !== undefined) cancel('no', ctx.body.s);",
  'resources/written/validate.js': "cancelIf(ctx.body.v !== undefined, 'no', ctx.body.v);",
  'resources/written/put.js': "cancelUnless(ctx.body.u === undefined, 'no', ctx.body.u);",
  // On Get, for one object and for a list (from a header: a query key would be a filter).
  'resources/read/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
  'resources/read/get.js': "if (ctx.headers['x-status'] !== undefined) cancel('no', Number(ctx.headers['x-status']));",
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'resources/users/login.js': "if (ctx.body.s !== undefined) cancel('no', ctx.body.s);",
  'resources/hook/config.json': { type: 'Event' },
  'resources/hook/get.js': "if (query.s !== undefined) cancel('no', Number(query.s));\nsetResult({ ok: true });",
};

/** What a status a script passed to cancel() answers (see above). */
function expected(status: unknown): number {
  if (!status) return 400;
  const n = typeof status === 'number' ? status : typeof status === 'string' && /^[2-5]\d\d$/.test(status) ? Number(status) : Number.NaN;
  return Number.isInteger(n) && n >= 200 && n <= 599 ? n : 500;
}

/** What the body of that answer is. */
function body(status: number): unknown {
  if (status === 500) return { status: 500, statusCode: 500, message: 'internal server error' };
  if (status === 204 || status === 304) return '';
  return { status, statusCode: status, message: 'no' };
}

/** Statuses as a client sends them in a query string (the scripts make numbers of them or keep the text). */
const QUERY = ['', '0', '-0', 'NaN', '99', '100', '150', '199', '1.5', '-1', '600', '1000', '1e21', 'Infinity', 'abc', '0x193', '200', '204', '302', '403', '418', '599'];
/** Statuses as JSON values in a body. */
const JSON_VALUES: unknown[] = [0, null, false, '', 1.5, 99, 150, -1, 1000, 1e21, true, {}, [], [403], 'abc', '0', ' 403', '403', 403, 200, 302, 599];

describe('a script status from the request never stops the server (in process)', () => {
  let h: AppHandle;
  const logger = memoryLogger();
  let objectId: string;
  let writtenId: string;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    process.on('uncaughtException', onUnhandled);
    h = await runApp(files, { env: 'production', logger, resourceTypes: [(await import('@svc/type-event')).default] });
    objectId = ((await h.request('POST', '/read', { n: 1 }, ROOT)).body as { id: string }).id;
    writtenId = ((await h.request('POST', '/written', { n: 1 }, ROOT)).body as { id: string }).id;
    expect((await h.request('POST', '/users', { username: 'ann', password: 'pw-pw-pw' }, ROOT)).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    process.off('uncaughtException', onUnhandled);
    await h?.close();
  });

  const alive = async (): Promise<void> => {
    expect((await h.request('GET', '/plain')).status).toBe(200);
  };

  it.each(QUERY)('?s=%j: On BeforeRequest, On Get (one and a list), an Event', async (s) => {
    const status = expected(Number(s));
    const q = `s=${encodeURIComponent(s)}`;
    for (const [path, headers] of [[`/guarded?${q}`], [`/read/${objectId}`, { 'x-status': s }], [`/hook?${q}`]] as [string, Record<string, string>?][]) {
      const res = await h.request('GET', path, undefined, headers);
      expect([path, res.status, res.body]).toEqual([path, status, body(status)]);
    }
    // In a list, a cancel leaves the object out; a status that is the script's error fails the list.
    const list = await h.request('GET', '/read', undefined, { 'x-status': s });
    expect([list.status, list.body]).toEqual(status === 500 ? [500, body(500)] : [200, []]);
    await alive();
  });

  it.each(QUERY)('?t=%j: the text itself', async (t) => {
    const res = await h.request('GET', `/guarded?t=${encodeURIComponent(t)}`);
    const status = expected(t);
    expect([res.status, res.body]).toEqual([status, body(status)]);
    await alive();
  });

  it.each(QUERY)('?o=%j: a thrown object: its status when 400-599, else 400', async (o) => {
    const res = await h.request('GET', `/guarded?o=${encodeURIComponent(o)}`);
    const n = Number(o);
    const status = Number.isInteger(n) && n >= 400 && n <= 599 ? n : 400;
    expect([res.status, res.body]).toEqual([status, body(status)]);
    await alive();
  });

  it.each(JSON_VALUES.map((v) => [JSON.stringify(v), v]))('%s in a body: On Post, On Validate, On Put', async (_, value) => {
    const status = expected(value);
    const answers = [
      await h.request('POST', '/written', { s: value }),
      await h.request('POST', '/written', { v: value }),
      await h.request('PUT', `/written/${writtenId}`, { u: value }),
    ];
    for (const res of answers) expect([res.status, res.body]).toEqual([status, body(status)]);
    await alive();
  });

  it('On Login (a few values: a cancelled login counts against the login limit)', async () => {
    for (const value of [1.5, {}, 0, '403', 401]) {
      const status = expected(value);
      const res = await h.request('POST', '/users/login', { username: 'ann', password: 'pw-pw-pw', s: value });
      expect([res.status, res.body]).toEqual([status, body(status)]);
    }
    await alive();
  });

  it('an invalid status is logged as the script error it is, with its file and line', () => {
    const errors = logger.lines.filter((line) => line.startsWith('error') && line.includes('is not an HTTP status'));
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.some((line) => /script resources\/guarded\/beforerequest\.js:1: cancel\(\): the status 1\.5 is not an HTTP status/.test(line))).toBe(true);
    expect(unhandled).toEqual([]);
  });
});

describe('a script status from the request never stops the server (a real svc process)', () => {
  let svc: SvcProcess;
  let dir: string;
  let objectId: string;

  beforeAll(async () => {
    const { 'resources/hook/config.json': _e, 'resources/hook/get.js': _g, ...collections } = files;
    dir = await writeApp(collections);
    svc = await startSvc([dir, '--env', 'production', '--host', '127.0.0.1'], {}, 60_000);
    const created = await fetch(`${svc.url}/read`, { method: 'POST', headers: { 'content-type': 'application/json', ...ROOT }, body: '{"n":1}' });
    objectId = ((await created.json()) as { id: string }).id;
  }, 90_000);
  afterAll(async () => {
    await svc?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers every hostile status, in parallel too, and is still running and answering', async () => {
    const requests = QUERY.flatMap((s): [string, Record<string, string>][] => [
      [`/guarded?s=${encodeURIComponent(s)}`, {}],
      [`/guarded?t=${encodeURIComponent(s)}`, {}],
      [`/read/${objectId}`, { 'x-status': s }],
      ['/read', { 'x-status': s }],
    ]);
    for (const [path, headers] of requests) expect((await fetch(svc.url + path, { headers })).status).toBeGreaterThanOrEqual(200);
    const parallel = await Promise.all(requests.map(([path, headers]) => fetch(svc.url + path, { headers }).then((res) => res.status)));
    expect(parallel.every((status) => status >= 200 && status <= 599)).toBe(true);
    expect(svc.child.exitCode).toBeNull();
    expect(svc.child.signalCode).toBeNull();
    expect((await fetch(`${svc.url}/plain`)).status).toBe(200);
    expect(svc.stderr()).not.toMatch(/ERR_HTTP_INVALID_STATUS_CODE|Unhandled/);
  }, 120_000);
});
