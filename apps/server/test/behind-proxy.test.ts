import { readFile } from 'node:fs/promises';
import { execFile, spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '@svc/server';
import { silentLogger } from '@svc/core';
import { memoryLogger, runApp, writeApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { caddyBinary, nginxBinary, startCaddy, startNginx } from './helpers/nginx.js';
import type { NginxProxy } from './helpers/nginx.js';
import { loginStatus, send } from './helpers/proxyClient.js';
import { startSvc } from './cli.js';

// Issue 23 (1): svc behind a reverse proxy (a real nginx, Debian's package). The client address
// comes from the proxy's X-Forwarded-For only when app.json trustProxy names the proxy; a
// development server never makes a request that came through a proxy root, even from nginx's
// default configuration that adds no header at all. Issue 38 (6): only positive evidence of a
// proxy counts (a client's own `Connection: close` does not), and a refused key answers 403 with
// the reason instead of being served as a visitor's request.

const nginx = nginxBinary();
if (nginx === undefined) process.stderr.write('SKIPPED the tests through nginx: no nginx binary (apt-get install nginx-light)\n');
const caddy = caddyBinary();
if (caddy === undefined) process.stderr.write('SKIPPED the development root test through Caddy: no caddy binary (apt-get install caddy)\n');

/** nginx configurations people write, as `location /` directives beside `proxy_pass`, that show a proxy's hand. */
const CONFIGS: Record<string, string[]> = {
  default: [],
  websocket: ['proxy_http_version 1.1;', 'proxy_set_header Upgrade $http_upgrade;', 'proxy_set_header Connection "upgrade";'],
  'Host, X-Forwarded-For, X-Real-IP': ['proxy_set_header Host $host;', 'proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;', 'proxy_set_header X-Real-IP $remote_addr;'],
  'keepalive upstream, Host $host': ['proxy_http_version 1.1;', 'proxy_set_header Connection "";', 'proxy_set_header Host $host;'],
  'X-Real-IP only': ['proxy_set_header X-Real-IP $remote_addr;'],
};
const FORWARDED_FOR = ['proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;'];

const USERS = { 'resources/users/config.json': { type: 'UserCollection', properties: {} } };
const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

async function proxy(upstream: number, directives: readonly string[]): Promise<NginxProxy> {
  const p = await startNginx(upstream, directives);
  stops.push(() => p.stop());
  return p;
}

async function app(files: Record<string, string | object>, logger = memoryLogger()): Promise<AppHandle & { logger: ReturnType<typeof memoryLogger>; port: number }> {
  const handle = await runApp({ 'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } }, ...files }, { logger });
  stops.push(() => handle.close());
  return { ...handle, logger, port: handle.app.port };
}

describe.skipIf(nginx === undefined)('development root through nginx', () => {
  let dev: Awaited<ReturnType<typeof app>>;
  beforeAll(async () => {
    dev = await app({});
  });

  it('a request on this machine with any key is root (the spec)', async () => {
    const res = await send({ port: dev.port, path: '/dashboard/api/session', headers: { 'svc-ssh-key': 'x', connection: 'keep-alive' } });
    expect(res.body).toMatchObject({ env: 'development', root: true });
  });

  it.each(Object.entries(CONFIGS))('nginx %s: a remote key is refused with 403 and the reason, the dashboard API rewrites no script', async (_name, directives) => {
    const p = await proxy(dev.port, directives);
    const session = await send({ port: p.port, path: '/dashboard/api/session', headers: { 'svc-ssh-key': 'x', connection: 'keep-alive' } });
    expect(session.status).toBe(403);
    expect(session.body).toMatchObject({ status: 403, message: expect.stringMatching(/^svc-ssh-key refused: .*(HTTP\/1\.0|Upgrade|Host header|forwarded|x-real-ip)/i) });
    const write = await send({ port: p.port, method: 'PUT', path: '/dashboard/api/resources/todos/events/post.js', body: { source: 'this.owned = true;' }, headers: { 'svc-ssh-key': 'x' } });
    expect(write.status).toBe(403);
    await expect(readFile(join(dev.dir, 'resources/todos/post.js'), 'utf8')).rejects.toThrow();
    // Without a key, the same request through the proxy is a visitor's, as before.
    expect((await send({ port: p.port, path: '/dashboard/api/session' })).body).toMatchObject({ root: false });
  });

  it('nginx with proxy_http_version 1.1 alone looks like a program on this machine: root (the blind spot docs/deploying.md names)', async () => {
    // HTTP/1.1, Connection: close, Host 127.0.0.1:<port>, no header of its own: what Python's
    // urllib sends too. A development server must never be reachable by others.
    const p = await proxy(dev.port, ['proxy_http_version 1.1;']);
    const session = await send({ port: p.port, path: '/dashboard/api/session', headers: { 'svc-ssh-key': 'x', connection: 'keep-alive' } });
    expect(session.body).toMatchObject({ root: true });
  });

  it('says why once per kind of reason, with the way out', () => {
    const lines = dev.logger.lines.filter((l) => l.includes('is not root'));
    expect(lines.length).toBeGreaterThan(0);
    expect(new Set(lines).size).toBe(lines.length);
    expect(lines.length).toBeLessThanOrEqual(4);
    expect(lines.join('\n')).toMatch(/must never be reachable by others/);
    expect(lines.join('\n')).toMatch(/HTTP\/1\.0/);
  });

  it.skipIf(caddy === undefined)("Caddy's default reverse_proxy: a remote key is not root", async () => {
    const c = await startCaddy(dev.port);
    stops.push(() => c.stop());
    const session = await send({ port: c.port, path: '/dashboard/api/session', headers: { 'svc-ssh-key': 'x', connection: 'keep-alive' } });
    expect(session.status).toBe(403);
  });

  it('a proxy named by trustProxy never gets development root, even with no header', async () => {
    const trusted = await app({ 'app.json': { trustProxy: ['loopback'] } });
    const direct = await send({ port: trusted.port, path: '/dashboard/api/session', headers: { 'svc-ssh-key': 'x', connection: 'keep-alive' } });
    expect(direct.status).toBe(403);
    expect(direct.body).toMatchObject({ message: expect.stringMatching(/trusted proxy \(app\.json trustProxy\)/) });
  });
});

/** One request written byte by byte on a fresh socket; answers the status line's code and the body. */
function raw(port: number, text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' }, () => socket.write(text));
    let got = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (got += d));
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(got)?.[1] ?? 0), body: got.slice(got.indexOf('\r\n\r\n') + 4) }));
  });
}

/** Python's urllib, when python3 is on this machine: the status of GET `url` with a root key. */
function pythonUrllib(url: string): Promise<string> {
  const script = `import urllib.request, urllib.error\ntry:\n  print(urllib.request.urlopen(urllib.request.Request('${url}', headers={'svc-ssh-key': 'x'})).status)\nexcept urllib.error.HTTPError as e:\n  print(e.code)\n`;
  return new Promise((resolve, reject) => {
    execFile('python3', ['-c', script], { timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
  });
}

const python = spawnSync('python3', ['-c', 'import urllib.request'], { stdio: 'ignore' }).status === 0;
if (!python) process.stderr.write('SKIPPED the Python urllib root test: no python3\n');

describe('development root for programs on this machine (issue 38, 6)', () => {
  let dev: Awaited<ReturnType<typeof app>>;
  beforeAll(async () => {
    dev = await app({});
  });
  // GET /todos/count is root only (no publicCount): 200 says root, 403 says not.
  const count = (extra: string, version = '1.1') => `GET /todos/count HTTP/${version}\r\nHost: 127.0.0.1:${dev.port}\r\nsvc-ssh-key: x\r\n${extra}\r\n`;

  it("a client that sends Connection: close itself (Python's urllib, node with agent: false) is root", async () => {
    // urllib's own bytes: Accept-Encoding, Host, User-Agent, Connection: close.
    const urllib = await raw(dev.port, `GET /todos/count HTTP/1.1\r\nAccept-Encoding: identity\r\nHost: 127.0.0.1:${dev.port}\r\nUser-Agent: Python-urllib/3.12\r\nsvc-ssh-key: x\r\nConnection: close\r\n\r\n`);
    expect(urllib).toMatchObject({ status: 200, body: '{"count":0}' });
    const agentless = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: dev.port, path: '/todos/count', agent: false, headers: { 'svc-ssh-key': 'x' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(agentless).toBe(200);
    expect((await send({ port: dev.port, path: '/dashboard/api/session', headers: { 'svc-ssh-key': 'x', connection: 'close' } })).body).toMatchObject({ root: true });
  });

  it.skipIf(!python)("Python's urllib itself is root", async () => {
    expect(await pythonUrllib(`http://127.0.0.1:${dev.port}/todos/count`)).toBe('200');
  });

  it.each<[string, string, string, RegExp]>([
    ['HTTP/1.0', '', '1.0', /HTTP\/1\.0/],
    ['a Via header', 'Via: 1.1 gateway\r\n', '1.1', /via header/],
    ['an X-Forwarded-For header', 'X-Forwarded-For: 203.0.113.9\r\n', '1.1', /x-forwarded-for header/],
    ['Connection: upgrade without Upgrade', 'Connection: upgrade\r\n', '1.1', /without an Upgrade header/],
  ])('a key on a request with %s is refused: 403 with the reason, as JSON', async (_name, extra, version, why) => {
    const answer = await raw(dev.port, count(`${extra}Connection: close\r\n`, version));
    expect(answer.status).toBe(403);
    const body = JSON.parse(answer.body) as { status: number; message: string };
    expect(body.status).toBe(403);
    expect(body.message).toMatch(/^svc-ssh-key refused: /);
    expect(body.message).toMatch(why);
  });

  it("a browser page of another origin, and a Host that names another machine, are refused with the reason", async () => {
    const cross = await send({ port: dev.port, path: '/todos', headers: { 'svc-ssh-key': 'x', origin: 'https://evil.example' } });
    expect(cross.status).toBe(403);
    expect(cross.body).toMatchObject({ message: expect.stringMatching(/another origin \(https:\/\/evil\.example\)/) });
    const rebound = await send({ port: dev.port, path: '/todos', headers: { 'svc-ssh-key': 'x', host: `evil.example:${dev.port}` } });
    expect(rebound.status).toBe(403);
    expect(rebound.body).toMatchObject({ message: expect.stringMatching(/DNS rebinding/) });
    // Without the key both are a visitor's requests, as before.
    expect((await send({ port: dev.port, path: '/todos', headers: { origin: 'https://evil.example' } })).status).toBe(200);
  });
});

describe.skipIf(nginx === undefined)('client addresses through nginx with trustProxy', () => {
  let svc: Awaited<ReturnType<typeof app>>;
  let p: NginxProxy;
  beforeAll(async () => {
    svc = await app({ ...USERS, 'app.json': { passwordCost: 4, trustProxy: ['127.0.0.1'] } });
    p = await proxy(svc.port, [...FORWARDED_FOR, 'proxy_set_header X-Forwarded-Proto https;']);
    for (const name of ['alice', 'bob', 'carol']) expect((await send({ port: svc.port, method: 'POST', path: '/users', body: { username: name, password: 'right' } })).status).toBe(200);
  });

  it("10 wrong logins for alice from one client do not lock her out at another client of the proxy", async () => {
    for (let i = 0; i < 10; i++) expect(await loginStatus(p.port, '127.0.0.2', 'alice', 'wrong')).toBe(401);
    expect(await loginStatus(p.port, '127.0.0.2', 'alice', 'wrong')).toBe(429);
    expect(await loginStatus(p.port, '127.0.0.3', 'alice', 'right')).toBe(200);
  });

  it("a client's own X-Forwarded-For, changed on every try, does not move it past the limit", async () => {
    const spoof = (i: number) => ({ 'x-forwarded-for': `198.51.100.${i}` });
    // Through nginx (which appends the real address) ...
    for (let i = 0; i < 10; i++) expect(await loginStatus(p.port, '127.0.0.4', 'bob', 'wrong', spoof(i))).toBe(401);
    expect(await loginStatus(p.port, '127.0.0.4', 'bob', 'wrong', spoof(99))).toBe(429);
    // ... and straight to svc from a peer that trustProxy does not name.
    for (let i = 0; i < 10; i++) expect(await loginStatus(svc.port, '127.0.0.5', 'carol', 'wrong', spoof(i))).toBe(401);
    expect(await loginStatus(svc.port, '127.0.0.5', 'carol', 'wrong', spoof(99))).toBe(429);
    expect(await loginStatus(p.port, '127.0.0.6', 'carol', 'right')).toBe(200);
  });

  it('X-Forwarded-Proto https from the trusted proxy makes the session cookie Secure; from anyone else it does not', async () => {
    const cookie = (headers: Record<string, string | string[] | undefined>) => String(headers['set-cookie'] ?? '');
    expect(cookie((await send({ port: p.port, path: '/todos', from: '127.0.0.7' })).headers)).toMatch(/; Secure/i);
    expect(cookie((await send({ port: svc.port, path: '/todos', from: '127.0.0.7', headers: { 'x-forwarded-proto': 'https' } })).headers)).not.toMatch(/; Secure/i);
  });
});

describe('client addresses without a proxy process', () => {
  const sockets: Socket[] = [];
  afterAll(() => {
    for (const s of sockets) s.destroy();
  });

  it('realtime counts sockets per client that the trusted proxy names', async () => {
    const svc = await app({ 'app.json': { trustProxy: ['127.0.0.1'], realtime: { maxSocketsPerAddress: 1 } } });
    const handshake = (from: string, xff: string) => send({ port: svc.port, path: '/socket.io/?EIO=4&transport=polling', from, headers: { 'x-forwarded-for': xff } });
    expect((await handshake('127.0.0.1', '203.0.113.1')).status).toBe(200);
    expect((await handshake('127.0.0.1', '203.0.113.2')).status).toBe(200);
    expect((await handshake('127.0.0.1', '203.0.113.2')).status).toBe(403);
    // An untrusted peer's header is not believed: it counts as itself.
    expect((await handshake('127.0.0.9', '203.0.113.3')).status).toBe(200);
    expect((await handshake('127.0.0.9', '203.0.113.4')).status).toBe(403);
  });

  it('connections from a proxy that trustProxy lists are not held to the per-address share', async () => {
    const svc = await app({ 'app.json': { trustProxy: ['127.0.0.1'], http: { maxConnectionsPerAddress: 2 } } });
    const open = (from: string) =>
      new Promise<Socket>((resolve) => {
        const s = connect({ port: svc.port, host: '127.0.0.1', localAddress: from }, () => resolve(s));
        s.on('error', () => undefined);
        sockets.push(s);
      });
    const fromProxy = await Promise.all(Array.from({ length: 5 }, () => open('127.0.0.1')));
    const fromClient = await Promise.all(Array.from({ length: 3 }, () => open('127.0.0.8')));
    // The client's third connection is closed at once; bounded wait for a loaded machine.
    for (let waited = 0; waited < 10_000 && !fromClient.some((s) => s.destroyed || s.readyState === 'closed'); waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect(fromClient.filter((s) => s.destroyed || s.readyState === 'closed').length).toBe(1);
    // Every connection of the proxy is open and answered.
    const answers = await Promise.all(
      fromProxy.map(
        (s) =>
          new Promise<string>((resolve) => {
            s.once('data', (d: Buffer) => resolve(d.toString().split('\r\n')[0] ?? ''));
            s.once('close', () => resolve('closed'));
            s.write('GET /todos HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
          }),
      ),
    );
    expect(answers).toEqual(Array(5).fill('HTTP/1.1 200 OK'));
  });

  it('app.json trustProxy must be a hop count or addresses', async () => {
    for (const bad of ['127.0.0.1', ['nginx'], ['10.0.0.0/40'], -1, 1.5, [1]]) {
      const dir = await writeApp({ 'app.json': { trustProxy: bad } });
      stops.push(() => import('node:fs/promises').then((fs) => fs.rm(dir, { recursive: true, force: true })));
      await expect(startApp({ appDir: dir, port: 0, logger: silentLogger }), JSON.stringify(bad)).rejects.toThrow(/trustProxy/);
    }
  });

  it('startApp without env follows NODE_ENV=production', async () => {
    const dir = await writeApp({ 'app.json': {} });
    stops.push(() => import('node:fs/promises').then((fs) => fs.rm(dir, { recursive: true, force: true })));
    const before = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    const logger = memoryLogger();
    try {
      const started = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger });
      stops.push(() => started.close());
      expect(started.server.env).toBe('production');
      expect(logger.lines.join('\n')).toMatch(/production \(NODE_ENV=production/);
    } finally {
      process.env.NODE_ENV = before;
    }
  });

  it('NODE_ENV=production starts in production unless --env or SVC_ENV say otherwise, and says so', async () => {
    const dir = await writeApp({ 'app.json': {} });
    stops.push(() => import('node:fs/promises').then((fs) => fs.rm(dir, { recursive: true, force: true })));
    const prod = await startSvc([dir, '--host', '127.0.0.1'], { NODE_ENV: 'production', SVC_ENV: '' });
    stops.push(() => prod.stop());
    const session = await send({ port: prod.port, path: '/dashboard/api/session', headers: { 'svc-ssh-key': 'x', connection: 'keep-alive' } });
    expect(session.body).toMatchObject({ env: 'production', root: false });
    expect(prod.stderr()).toMatch(/production \(NODE_ENV=production/);
    await prod.stop();
    const dev = await startSvc([dir, '--env', 'development'], { NODE_ENV: 'production' });
    stops.push(() => dev.stop());
    expect(dev.stderr()).toMatch(/development although NODE_ENV=production \(--env decides\)/);
    expect(dev.stderr()).toMatch(/must never be reachable by others/);
  });
});
