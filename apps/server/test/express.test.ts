import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import { attachApp } from '@svc/server';
import type { AttachedApp } from '@svc/server';
import { writeApp } from './helpers/app.js';

// Issue 15 (5): svc mounted into an existing express 5 application (Deployd's `attach`): REST,
// /svc.js, public files and Socket.IO on the host's server and port, a body the host already
// parsed with express.json(), the host's own routes beside svc's.

const APP = {
  'app.json': { passwordCost: 4 },
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'resources/notes/config.json': { type: 'Collection', properties: { text: { type: 'string', required: true } } },
  'resources/notes/post.js': "emit('notes:create', { text: this.text });\n",
  'public/hello.txt': 'hello from svc public/',
};

describe('svc in an express 5 application', () => {
  let dir: string;
  let server: Server;
  let svc: AttachedApp;
  let url: string;

  beforeAll(async () => {
    dir = await writeApp(APP);
    const app = express();
    // The host parses JSON bodies for its own routes, before svc sees the request.
    app.use(express.json());
    app.get('/health', (_req, res) => {
      res.json({ ok: true, from: 'host' });
    });
    app.post('/echo', (req, res) => {
      res.json({ got: req.body as unknown });
    });
    server = createServer(app);
    svc = await attachApp(server, { appDir: dir, env: 'development' });
    app.use(svc.middleware);
    app.use((_req, res) => {
      res.status(404).json({ from: 'host 404' });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await svc?.close();
    await new Promise((resolve) => server?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const postJson = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  it("the host's routes and svc's share one port; other paths reach the host's 404", async () => {
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ ok: true, from: 'host' });
    expect(await (await postJson('/echo', { a: 1 })).json()).toEqual({ got: { a: 1 } });
    expect((await fetch(`${url}/notes`)).status).toBe(200);
    expect(await (await fetch(`${url}/hello.txt`)).text()).toBe('hello from svc public/');
    const missing = await fetch(`${url}/nothing-here`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ from: 'host 404' });
    expect((await fetch(`${url}/svc.js`)).headers.get('content-type')).toContain('javascript');
  });

  it('a POST whose body express.json() already read is answered (it used to hang), validation included', async () => {
    const res = await Promise.race([postJson('/notes', { text: 'parsed by the host' }), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('hung')), 5000))]);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ text: 'parsed by the host' });
    const invalid = await postJson('/notes', {});
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ errors: { text: 'is required' } });
  });

  it('sessions and realtime work through the host port with @svc/client', async () => {
    expect((await postJson('/users', { username: 'ann', password: 'pw' })).status).toBe(200);
    const client = createClient(url);
    try {
      await client.users!.login({ username: 'ann', password: 'pw' });
      expect(await client.users!.me()).toMatchObject({ username: 'ann' });
      const got: unknown[] = [];
      client.on('notes:create', (d) => got.push(d));
      await new Promise<void>((resolve) => client.socketReady(resolve));
      await client.notes!.post({ text: 'live' });
      const end = Date.now() + 5000;
      while (got.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(got).toEqual([{ text: 'live' }]);
    } finally {
      client.close();
    }
  });

  it('GET /socket.io/socket.io.js answers the Socket.IO client on the host port too', async () => {
    const res = await fetch(`${url}/socket.io/socket.io.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(await res.text()).toContain('Socket.IO');
  });

  it('close() stops svc and leaves the host serving', async () => {
    const other = createServer((_req, res) => res.end('host'));
    const otherDir = await writeApp(APP);
    const attached = await attachApp(other, { appDir: otherDir, env: 'development' });
    await attached.close();
    await rm(otherDir, { recursive: true, force: true });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    expect(await (await fetch(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`)).text()).toBe('host');
    await new Promise((resolve) => other.close(resolve));
  });
});
