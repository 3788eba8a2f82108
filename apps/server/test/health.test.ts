import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { attachApp } from '@svc/server';
import { appStores, loadOutcome, runApp, writeApp } from './helpers/app.js';
import { startSvc } from './cli.js';

// Issue 23 (2, 3, 4): health checks of a whole app (on each store), app.json's health paths and
// drain time, a drain that realtime's WebSockets do not hold up, and a SIGTERM delivered twice.

const todos = { 'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } } };

const loadError = (appJson: object): Promise<string> => loadOutcome({ ...todos, 'app.json': appJson });

describe('app.json health and drain settings', () => {
  it('accepts paths, false and a drain time; names a wrong one', async () => {
    expect(await loadError({ health: { livePath: '/ops/live', readyPath: false }, http: { drainMs: 30_000 } })).toBe('loaded');
    expect(await loadError({ http: { drainMs: 0 } })).toBe('loaded');
    expect(await loadError({ health: { livePath: 'healthz' } })).toMatch(/"health.livePath" must be false or a path such as "\/healthz", not "healthz"/);
    expect(await loadError({ health: { readyPath: '/a b' } })).toMatch(/"health.readyPath" must be false or a path/);
    expect(await loadError({ health: { readyPath: '/' } })).toMatch(/"health.readyPath" must be false or a path/);
    expect(await loadError({ health: { ready: '/r' } })).toMatch(/unknown key "health.ready"/);
    expect(await loadError({ http: { drainMs: -1 } })).toMatch(/"http.drainMs" must be a whole number from 0 to 600000, not -1/);
  });
});

describe.each(appStores())('health checks of an app (%s store)', (store) => {
  it('/healthz and /readyz answer ok with no session; every answer has an X-Request-Id', async () => {
    const t = await runApp(todos, { store });
    try {
      for (const path of ['/healthz', '/readyz']) {
        const res = await fetch(t.url + path);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ status: 'ok' });
        expect(res.headers.get('set-cookie')).toBeNull();
        expect(res.headers.get('x-request-id')).toBeTruthy();
      }
      for (const path of ['/todos', '/svc.js', '/dashboard/', '/nothing']) expect((await fetch(t.url + path)).headers.get('x-request-id')).toBeTruthy();
    } finally {
      await t.close();
    }
  });
});

describe('in a host application', () => {
  it("leaves /healthz to the host unless app.json names svc's health paths", async () => {
    for (const [appJson, readyPath, live, ready] of [
      [{}, '/readyz', 404, 404],
      [{ health: { readyPath: '/svc-ready' } }, '/svc-ready', 404, 200],
    ] as const) {
      const dir = await writeApp({ ...todos, 'app.json': appJson });
      const host = createServer();
      const svc = await attachApp(host, { appDir: dir, logger: silentLogger });
      host.on('request', (req, res) => svc.middleware(req, res, () => res.writeHead(404).end('host')));
      await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
      try {
        expect((await fetch(`${url}/healthz`)).status).toBe(live);
        const res = await fetch(url + readyPath);
        expect(res.status).toBe(ready);
        expect(await res.text()).toBe(ready === 200 ? '{"status":"ok"}' : 'host');
      } finally {
        await svc.close();
        await new Promise((resolve) => host.close(resolve));
        await rm(dir, { recursive: true, force: true });
      }
    }
  });
});

describe('graceful close', () => {
  it('a realtime WebSocket does not hold the drain up: realtime closes it once requests are answered', async () => {
    const t = await runApp({ ...todos, 'app.json': { http: { keepAliveTimeoutMs: 200, drainMs: 20_000 } } });
    let closed = false;
    try {
      const ws = new WebSocket(`${t.url.replace('http', 'ws')}/socket.io/?EIO=4&transport=websocket`);
      await new Promise<void>((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = () => reject(new Error('no websocket'));
      });
      const wsClosed = new Promise<void>((resolve) => (ws.onclose = () => resolve()));
      expect((await t.request('GET', '/todos')).status).toBe(200);
      const outcome = await t.app.close({ graceful: true });
      closed = true;
      // Nothing was left to close at the deadline: the WebSocket went with realtime, the idle
      // keep-alive connection by its timeout.
      expect(outcome).toEqual({ cut: 0, closed: 0 });
      await wsClosed;
    } finally {
      if (!closed) await t.app.close();
      await rm(t.dir, { recursive: true, force: true });
    }
  });
});

describe('signals', () => {
  it('a SIGTERM delivered twice at once (launcher and process group) drains once and exits 0', async () => {
    const dir = await writeApp(todos);
    const p = await startSvc([dir, '--env', 'production', '--host', '127.0.0.1']);
    try {
      expect((await fetch(`${p.url}/readyz`)).status).toBe(200);
      const exited = new Promise<number | null>((resolve) => p.child.once('exit', (code) => resolve(code)));
      p.child.kill('SIGTERM');
      p.child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(p.stderr() + p.stdout()).toMatch(/SIGTERM: shutting down/);
      expect(p.stderr() + p.stdout()).not.toMatch(/without waiting/);
    } finally {
      await p.stop('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
