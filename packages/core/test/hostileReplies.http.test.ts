import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelError, createEmbeddedStore, SvcError } from '@svc/core';
import type { Context, Logger, Reply, Resource, Store } from '@svc/core';
import { isAnswerStatus } from '../src/http/reply.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 38 item 1: a status HTTP cannot carry (0, 99, 1.5, 1000...) reached res.writeHead, which
// threw inside the failure handler's .catch: an unhandled rejection ended the process. Whatever a
// resource answers or throws, the server answers (500 for what it cannot write) and stays up.

const INTERNAL = { status: 500, statusCode: 500, message: 'internal server error' };

/** Answers what the query asks for: a reply with status `s`, an odd header or body, or a throw. */
const odd: Resource = {
  path: '/odd',
  type: 'Odd',
  handle(ctx: Context): Promise<Reply | undefined> {
    const q = ctx.query as Record<string, string>;
    switch (q.case) {
      case 'status':
        return Promise.resolve({ status: Number(q.s), body: { ok: true } });
      case 'status-no-body':
        return Promise.resolve({ status: Number(q.s) });
      case 'header-value':
        return Promise.resolve({ status: 200, body: { ok: true }, headers: { 'x-one': 'fine', 'x-odd': 'a\nb' } });
      case 'header-name':
        return Promise.resolve({ status: 204, headers: { 'bad name': 'x' } });
      case 'bigint':
        return Promise.resolve({ status: 200, body: { n: 1n } });
      case 'cyclic': {
        const body: Record<string, unknown> = {};
        body.self = body;
        return Promise.resolve({ status: 200, body });
      }
      case 'cancel':
        return Promise.reject(cancelError('no', Number(q.s)));
      case 'svc-error':
        return Promise.reject(new SvcError('CANCELLED', 'no', { status: Number(q.s) }));
      case 'unreadable':
        // A thrown value whose every field throws when read.
        return Promise.reject(
          new Proxy(
            {},
            {
              get() {
                throw new Error('no reading');
              },
              getPrototypeOf() {
                throw new Error('no prototype');
              },
            },
          ),
        );
      case 'sync-throw':
        throw new SvcError('CANCELLED', 'no', { status: 0 });
      default:
        return Promise.resolve({ status: 200, body: { ok: true } });
    }
  },
};

const BAD = ['0', '99', '100', '150', '199', '1.5', '-1', '-0', '600', '1000', '1e21', 'NaN', 'Infinity', 'x'];

describe('hostile replies and errors never stop the server', () => {
  let dir: string;
  let store: Store;
  let server: TestServer;
  const lines: string[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    process.on('uncaughtException', onUnhandled);
    dir = await mkdtemp(join(tmpdir(), 'svc-hostile-replies-'));
    store = await createEmbeddedStore({ dir });
    const push = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
    const logger: Logger = { info: push('info'), warn: push('warn'), error: push('error') };
    server = await startTestServer(store, [odd], { logger });
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    process.off('uncaughtException', onUnhandled);
    await server.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const alive = async (): Promise<void> => {
    expect((await server.request('GET', '/odd')).body).toEqual({ ok: true });
  };

  it.each(BAD)('a reply with status %s answers 500, logged', async (s) => {
    for (const kind of ['status', 'status-no-body', 'cancel', 'svc-error']) {
      const res = await server.request('GET', `/odd?case=${kind}&s=${encodeURIComponent(s)}`);
      expect([kind, res.status, res.body]).toEqual([kind, 500, INTERNAL]);
    }
    expect(lines.filter((l) => l.startsWith('error') && l.includes('not an HTTP status'))).toHaveLength(4);
    lines.length = 0;
    await alive();
  });

  it.each([
    ['200', 200],
    ['204', 204],
    ['302', 302],
    ['304', 304],
    ['404', 404],
    ['599', 599],
  ])('a reply with status %s is answered as given', async (s, status) => {
    const res = await server.request('GET', `/odd?case=status&s=${s}`);
    expect(res.status).toBe(status);
    expect(res.body).toEqual(status === 204 || status === 304 ? '' : { ok: true });
    const cancelled = await server.request('GET', `/odd?case=cancel&s=${s}`);
    expect(cancelled.status).toBe(status);
  });

  it.each(['header-value', 'header-name', 'bigint', 'cyclic', 'unreadable', 'sync-throw'])('%s: 500, and the next request is answered', async (kind) => {
    const res = await server.request('GET', `/odd?case=${kind}`);
    expect(res.status).toBe(500);
    expect(res.body).toEqual(INTERNAL);
    // Headers of the reply that could not be written are not part of the 500.
    expect(res.headers.get('x-one')).toBeNull();
    await alive();
  });

  it('many at once, then no unhandled rejection or exception was seen', async () => {
    const all = await Promise.all(BAD.flatMap((s) => ['status', 'cancel'].map((kind) => server.request('GET', `/odd?case=${kind}&s=${s}`))));
    expect(all.every((res) => res.status === 500)).toBe(true);
    await alive();
    expect(unhandled).toEqual([]);
  });
});

describe('isAnswerStatus', () => {
  it.each([
    [200, true],
    [599, true],
    [404, true],
    [199, false],
    [600, false],
    [0, false],
    [-0, false],
    [1.5, false],
    [Number.NaN, false],
    [Number.POSITIVE_INFINITY, false],
    ['404', false],
    [null, false],
  ])('%s: %s', (status, expected) => {
    expect(isAnswerStatus(status)).toBe(expected);
  });
});
