import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '@svc/core';
import type { HttpLimits, Reply, Resource, Store } from '@svc/core';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 23 (3): a SIGTERM under load cut requests (nginx answered 502 to 47 of 50 writers). The
// drain answers every request in flight, and every request still arriving on an open connection,
// with Connection: close, and never closes an idle keep-alive connection under a client that may
// be sending into it. Raw sockets, so that nothing retries behind the test's back.

let dir: string;
let store: Store;
const servers: TestServer[] = [];
const sockets: Socket[] = [];

/** A resource whose answers wait until the test lets them go. */
function gated(): { resource: Resource; release(): void; started: Promise<void> } {
  let release!: () => void;
  let started!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const start = new Promise<void>((r) => (started = r));
  const resource: Resource = {
    path: '/slow',
    type: 'Test',
    async handle(): Promise<Reply> {
      started();
      await gate;
      return { status: 200, body: { ok: true } };
    },
  };
  return { resource, release, started: start };
}

const fast: Resource = { path: '/fast', type: 'Test', handle: () => Promise.resolve({ status: 200, body: { ok: true } }) };

async function serve(resources: Resource[], http: HttpLimits = {}): Promise<{ t: TestServer; port: number }> {
  const t = await startTestServer(store, resources, { http: { keepAliveTimeoutMs: 300, ...http } });
  servers.push(t);
  return { t, port: Number(new URL(t.url).port) };
}

/** A raw keep-alive connection: sends requests, collects everything received, tells when it closed. */
interface Raw {
  send(path: string): void;
  text(): string;
  closed: Promise<void>;
  /** Resolves once `n` complete answers arrived (or the connection closed). */
  answers(n: number): Promise<string[]>;
}

function open(port: number): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    sockets.push(socket);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', () => {});
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    const parsed = (): string[] => text.split(/(?=HTTP\/1\.1 )/).filter((a) => /\r\n\r\n\{"ok":true\}$|\r\n\r\n.*\}$/s.test(a));
    socket.once('connect', () =>
      resolve({
        send: (path) => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`),
        text: () => text,
        closed,
        async answers(n) {
          for (let i = 0; i < 500 && parsed().length < n && !socket.destroyed; i++) await new Promise((r) => setTimeout(r, 10));
          return parsed();
        },
      }),
    );
    socket.once('error', reject);
  });
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-drain-'));
  store = await createEmbeddedStore({ dir });
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const t of servers) await t.close().catch(() => undefined);
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('drain', () => {
  it('a request in flight is answered with Connection: close, then the connection closes', async () => {
    const slow = gated();
    const { t } = await serve([slow.resource]);
    const conn = await open(Number(new URL(t.url).port));
    conn.send('/slow');
    await slow.started;
    const drained = t.server.drain({ drainMs: 10_000 });
    slow.release();
    const [answer] = await conn.answers(1);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    await conn.closed;
    expect(await drained).toEqual({ cut: 0, closed: 0 });
  });

  it('a request sent on an idle keep-alive connection after the drain began is answered, not reset', async () => {
    // The race behind the 502s: to the server the connection looks idle, to the client (a proxy
    // reusing its pooled connection) it carries a request.
    const { t, port } = await serve([fast], { keepAliveTimeoutMs: 60_000 });
    const conn = await open(port);
    conn.send('/fast');
    expect(await conn.answers(1)).toHaveLength(1);
    expect(conn.text()).toMatch(/keep-alive/i);
    const drained = t.server.drain({ drainMs: 10_000 });
    conn.send('/fast');
    const answers = await conn.answers(2);
    expect(answers).toHaveLength(2);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 200/);
    expect(answers[1]).toMatch(/\r\nconnection: close\r\n/i);
    await conn.closed;
    expect(await drained).toEqual({ cut: 0, closed: 0 });
  });

  it('stops accepting: a new connection is refused while a request in flight finishes', async () => {
    const slow = gated();
    const { t, port } = await serve([slow.resource]);
    const conn = await open(port);
    conn.send('/slow');
    await slow.started;
    const drained = t.server.drain({ drainMs: 10_000 });
    expect(await refused(port)).toBe(true);
    slow.release();
    expect(await conn.answers(1)).toHaveLength(1);
    await drained;
  });

  it('an idle keep-alive connection nobody uses again ends by its keep-alive timeout, and the drain with it', async () => {
    const { t, port } = await serve([fast], { keepAliveTimeoutMs: 200 });
    const conn = await open(port);
    conn.send('/fast');
    expect(await conn.answers(1)).toHaveLength(1);
    const outcome = await t.server.drain({ drainMs: 20_000 });
    expect(outcome).toEqual({ cut: 0, closed: 0 });
    await conn.closed;
  });

  it('at the drain deadline, a request that never ends is cut and counted', async () => {
    const slow = gated();
    const { t, port } = await serve([slow.resource]);
    const conn = await open(port);
    conn.send('/slow');
    await slow.started;
    expect(await t.server.drain({ drainMs: 200 })).toEqual({ cut: 1, closed: 1 });
    await conn.closed;
    slow.release();
  });

  it('a second drain answers the first one', async () => {
    const { t } = await serve([fast]);
    const first = t.server.drain({ drainMs: 1000 });
    expect(t.server.drain({ drainMs: 1 })).toBe(first);
    await first;
  });
});
