import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '@svc/core';
import { loadOutcome, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { bareSocketIo } from './helpers/bareSocketIo.js';

// Issue 21 (8): app.json "http" sets the server's timeouts and connection caps; a Socket.IO
// WebSocket outlives the HTTP idle timers (node hands the socket over at the upgrade) and counts
// toward the per-address cap.

const warnings: string[] = [];
const logger: Logger = { info() {}, error() {}, warn: (m) => warnings.push(m) };
let h: AppHandle;
let port: number;

beforeAll(async () => {
  h = await runApp(
    {
      'app.json': { http: { headersTimeoutMs: 300, requestTimeoutMs: 3000, keepAliveTimeoutMs: 300, maxConnectionsPerAddress: 3 } },
      'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
    },
    { logger },
  );
  port = Number(new URL(h.url).port);
}, 60_000);

afterAll(async () => {
  await h?.close();
});

function open(): Promise<{ socket: Socket; closed: Promise<void>; received(): string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', () => {});
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.once('connect', () => resolve({ socket, closed, received: () => text }));
    socket.once('error', reject);
  });
}

const socketIo = () => bareSocketIo(port);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('app.json http', () => {
  it('an idle WebSocket outlives the header and keep-alive timeouts, and counts toward the per-address cap', async () => {
    const sockets = await Promise.all([socketIo(), socketIo(), socketIo()]);
    // Several times the header budget (300 ms) and the keep-alive one (300 ms + node's 1 s).
    await sleep(2500);
    for (const s of sockets) {
      expect(s.closed()).toBe(false);
      expect(s.ws.readyState).toBe(WebSocket.OPEN);
    }
    // Three WebSockets from 127.0.0.1 fill its share: a fourth connection is refused.
    const before = warnings.length;
    const refused = await open();
    refused.socket.write('GET /todos HTTP/1.1\r\nHost: x\r\n\r\n');
    await refused.closed;
    expect(refused.received()).toBe('');
    expect(warnings.slice(before).join('\n')).toMatch(/maxConnectionsPerAddress/);
    // Closing a WebSocket frees its place (the server sees the close a moment later).
    sockets[0]?.ws.close();
    let answered = false;
    for (let attempt = 0; attempt < 50 && !answered; attempt++) {
      const again = await open();
      again.socket.write('GET /todos HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      await again.closed;
      answered = /HTTP\/1.1 200/.test(again.received());
      if (!answered) await sleep(100);
    }
    expect(answered).toBe(true);
    for (const s of sockets) s.ws.close();
  });

  it('a silent connection is closed after app.json http.headersTimeoutMs', async () => {
    const conn = await open();
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([conn.closed.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 10_000)))]);
    clearTimeout(timer);
    expect(closed).toBe(true);
  });

  it('app.json http keys are checked at start', async () => {
    const loadError = (settings: object): Promise<string> => loadOutcome({ 'app.json': settings });
    expect(await loadError({ http: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 65_000, maxConnections: 5000, maxConnectionsPerAddress: 0 } })).toBe('loaded');
    expect(await loadError({ http: { headerTimeoutMs: 10 } })).toMatch(/unknown key "http.headerTimeoutMs" \(did you mean "http.headersTimeoutMs"\?\)/);
    expect(await loadError({ http: { maxConnections: 0 } })).toMatch(/"http.maxConnections" must be a whole number >= 1, not 0/);
  });
});
