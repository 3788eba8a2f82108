import { rm } from 'node:fs/promises';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';
import { writeApp } from './helpers/app.js';

// Issue 22 (8): pages written for Deployd 1.2 load <script src="/socket.io/socket.io.js">, which
// Deployd's Socket.IO served. svc serves the client of its own socket.io, in front of Engine.IO.

describe('GET /socket.io/socket.io.js', () => {
  let dir: string;
  let app: RunningApp;

  beforeAll(async () => {
    dir = await writeApp({ 'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } } });
    app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', env: 'development', logger: silentLogger });
  });
  afterAll(async () => {
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers the Socket.IO browser client as JavaScript, cached, revalidated by ETag', async () => {
    const res = await fetch(`${app.url}/socket.io/socket.io.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toMatch(/^public, max-age=\d{5,}$/);
    const text = await res.text();
    expect(text).toContain('Socket.IO');
    expect(text).toMatch(/global\.io|\.io = factory|io = /);
    expect(text).not.toContain('sourceMappingURL');
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"socket\.io-\d+\.\d+\.\d+"$/);
    const again = await fetch(`${app.url}/socket.io/socket.io.js`, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
    await again.arrayBuffer();
  });

  it('gzips for a client that accepts it; HEAD has no body; the minified one too', async () => {
    const raw = await new Promise<{ status: number; encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      const req = request(`${app.url}/socket.io/socket.io.js?v=1`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(raw.status).toBe(200);
    expect(raw.encoding).toBe('gzip');
    expect(gunzipSync(raw.body).toString()).toContain('Socket.IO');
    const head = await fetch(`${app.url}/socket.io/socket.io.js`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const min = await fetch(`${app.url}/socket.io/socket.io.min.js`);
    expect(min.status).toBe(200);
    expect(min.headers.get('content-type')).toContain('javascript');
  });

  it('other /socket.io/ URLs still reach Socket.IO (a polling handshake), and the REST API still works', async () => {
    const res = await fetch(`${app.url}/socket.io/?EIO=4&transport=polling`);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^0\{"sid":/);
    const post = await fetch(`${app.url}/socket.io/socket.io.js`, { method: 'POST' });
    expect(post.status).not.toBe(200);
    await post.arrayBuffer();
    expect((await fetch(`${app.url}/todos`)).status).toBe(200);
  });

  it('no other file of socket.io/client-dist is served (no path walk out of it)', async () => {
    for (const path of ['/socket.io/socket.io.js.map', '/socket.io/../package.json', '/socket.io/%2e%2e/package.json', '/socket.io/socket.io.esm.min.js']) {
      const res = await fetch(`${app.url}${path}`);
      const text = await res.text();
      expect(text).not.toContain('"version"');
      expect(res.headers.get('cache-control') ?? '').not.toMatch(/max-age=\d{5,}/);
    }
  });
});
