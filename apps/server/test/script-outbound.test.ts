import { existsSync } from 'node:fs';
import { cp, readFile, realpath, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { writeApp } from './helpers/app.js';

// Issue 38 item 11: event scripts' http, https and fetch through the outbound guard, within the
// request's budgets; npm modules that need Node built-ins (jsonwebtoken, yelp-fusion) work.

const SERVER_DIR = fileURLToPath(new URL('..', import.meta.url));
/** The real jsonwebtoken in Node, to check what the sandboxed one signed. */
const jwt = createRequire(import.meta.url)('jsonwebtoken') as { verify(token: string, key: string, options?: object): Record<string, unknown> };

/** Copies a package and its dependencies from this repo's pnpm store into an app's node_modules, as npm would lay them out. */
async function installFromStore(appDir: string, name: string, from = SERVER_DIR): Promise<void> {
  const target = join(appDir, 'node_modules', name);
  if (existsSync(target)) return;
  let dir = from;
  let source: string | undefined;
  for (;;) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) {
      source = await realpath(candidate);
      break;
    }
    if (dirname(dir) === dir) throw new Error(`${name} is not installed near ${from}`);
    dir = dirname(dir);
  }
  await cp(source, target, { recursive: true, dereference: true });
  const pkg = JSON.parse(await readFile(join(source, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  // pnpm puts a package's dependencies beside it: search from the package's own folder.
  for (const dep of Object.keys(pkg.dependencies ?? {})) await installFromStore(appDir, dep, source);
}

const COLLECTION = { type: 'Collection', properties: { title: { type: 'string' }, out: { type: 'object' } } };

interface App {
  app: RunningApp;
  post(body: object, query?: string): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

/**
 * Starts an app with the files; its scripts get 10 s a stretch (and so 12 s before a silent
 * script process is replaced): these tests load built-ins into new isolates on a busy machine.
 */
async function start(files: Record<string, string | object>, packages: string[] = []): Promise<App> {
  const appJson = (files['app.json'] ?? {}) as { scripts?: object };
  const dir = await writeApp({ ...files, 'app.json': { ...appJson, scripts: { timeoutMs: 10_000, ...appJson.scripts } } });
  for (const name of packages) await installFromStore(dir, name);
  const app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', env: 'development', logger: silentLogger });
  return {
    app,
    async post(body, query = '') {
      const res = await fetch(`${app.url}/things${query}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    async close() {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

describe('outbound calls of event scripts', () => {
  let server: Server;
  let port = 0;
  const hits: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      hits.push(`${req.method} ${req.url}`);
      const path = (req.url ?? '').split('?')[0];
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (path === '/echo' || path === '/v3/businesses/search') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, url: req.url, body, auth: req.headers['authorization'] ?? null, businesses: [{ name: 'Cafe' }] }));
        } else if (path === '/to-private') res.writeHead(302, { location: 'http://10.255.255.1/admin' }).end();
        else if (path === '/to-metadata') res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
        else if (path === '/hang') {
          // Never answers: the call's time limit ends it.
        } else if (path === '/huge') res.writeHead(200).end(Buffer.alloc(200_000, 97));
        else if (path === '/slowish') {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          setTimeout(() => {
            inFlight--;
            res.writeHead(200).end('done');
          }, 150);
        } else res.writeHead(404).end('none');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('fetch and http reach a server app.json allows; the request waits for http callbacks, as Deployd scripts expect', async () => {
    const app = await start({
      'app.json': { outbound: { allow: ['127.0.0.1'] } },
      'resources/things/config.json': COLLECTION,
      'resources/things/post.js': `
        var self = this;
        if (this.title === 'fetch') {
          var res = await fetch(query.base + '/echo?x=1', { method: 'POST', body: JSON.stringify({ a: 1 }), headers: { authorization: 'Bearer t' } });
          this.out = { status: res.status, ok: res.ok, json: await res.json(), type: res.headers.get('content-type') };
        } else {
          require('http').get(query.base + '/echo?y=2', function (res) {
            var body = '';
            res.setEncoding('utf8');
            res.on('data', function (chunk) { body += chunk; });
            res.on('end', function () { self.out = { status: res.statusCode, json: JSON.parse(body) }; });
          });
        }`,
    });
    try {
      const base = `?base=${encodeURIComponent(`http://127.0.0.1:${port}`)}`;
      const viaFetch = await app.post({ title: 'fetch' }, base);
      expect(viaFetch.status).toBe(200);
      expect(viaFetch.body.out).toEqual({ status: 200, ok: true, json: expect.objectContaining({ method: 'POST', url: '/echo?x=1', body: '{"a":1}', auth: 'Bearer t' }), type: 'application/json' });
      const viaHttp = await app.post({ title: 'http' }, base);
      expect(viaHttp.body.out).toEqual({ status: 200, json: expect.objectContaining({ method: 'GET', url: '/echo?y=2' }) });
    } finally {
      await app.close();
    }
  });

  it('refuses loopback, private, unspecified and metadata addresses in every form by default, and names that resolve to them', async () => {
    const HOSTS = ['127.0.0.1', '[::1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '0.0.0.0', '10.0.0.1', '169.254.169.254', '[::ffff:a9fe:a9fe]', 'localhost', '2130706433'];
    const app = await start({
      'resources/things/config.json': COLLECTION,
      'resources/things/post.js': `
        var out = [];
        for (var host of ${JSON.stringify(HOSTS)}) {
          try { await fetch('http://' + host + ':' + this.title + '/echo'); out.push('reached'); }
          catch (e) { out.push(e.cause.code + ': ' + e.message); }
        }
        var self = this;
        var req = require('http').request({ host: '127.0.0.1', port: Number(this.title), path: '/echo' });
        req.on('error', function (e) { out.push(e.code); self.out = { list: out }; });
        req.end();`,
    });
    try {
      const before = hits.length;
      const res = await app.post({ title: String(port) });
      const out = (res.body.out as { list: string[] }).list;
      HOSTS.forEach((host, i) => {
        expect(out[i], host).toMatch(/^ERR_OUTBOUND_REFUSED: fetch failed: request to .* refused: .* is a (loopback|private|unspecified|cloud metadata) address; app.json outbound.allow may name it$/);
      });
      expect(out[HOSTS.length]).toBe('ERR_OUTBOUND_REFUSED');
      expect(hits.length).toBe(before);
    } finally {
      await app.close();
    }
  });

  it('checks every redirect: an allowed server redirecting to a private or metadata address is refused', async () => {
    const app = await start({
      'app.json': { outbound: { allow: ['127.0.0.1', '169.254.0.0/16'] } },
      'resources/things/config.json': COLLECTION,
      'resources/things/post.js': `
        var out = {};
        for (var path of ['/to-private', '/to-metadata']) {
          try { await fetch('http://127.0.0.1:' + this.title + path); out[path] = 'reached'; } catch (e) { out[path] = e.cause.code + ': ' + e.message; }
        }
        this.out = out;`,
    });
    try {
      const out = (await app.post({ title: String(port) })).body.out as Record<string, string>;
      expect(out['/to-private']).toMatch(/^ERR_OUTBOUND_REFUSED: .*10\.255\.255\.1 is a private address/);
      expect(out['/to-metadata']).toMatch(/^ERR_OUTBOUND_REFUSED: .*169\.254\.169\.254 is a cloud metadata address/);
    } finally {
      await app.close();
    }
  });

  it('bounds each call (time, size) and each request (calls in all, calls at once)', async () => {
    const app = await start({
      'app.json': { outbound: { allow: ['127.0.0.1'], timeoutMs: 300, maxBytes: 1000, requestCalls: 6, concurrent: 2 } },
      'resources/things/config.json': COLLECTION,
      'resources/things/post.js': `
        var base = 'http://127.0.0.1:' + this.title, out = {};
        async function attempt(path) { try { var r = await fetch(base + path); return r.status + ' ' + (await r.text()).length; } catch (e) { return e.cause.code; } }
        out.hang = await attempt('/hang');
        out.huge = await attempt('/huge');
        out.parallel = await Promise.all([attempt('/slowish'), attempt('/slowish'), attempt('/slowish'), attempt('/slowish')]);
        out.over = await attempt('/echo');
        this.out = out;`,
    });
    try {
      const before = hits.filter((h) => h.includes('/slowish')).length;
      const out = (await app.post({ title: String(port) })).body.out as Record<string, unknown>;
      expect(out.hang).toBe('ETIMEDOUT');
      expect(out.huge).toBe('ERR_OUTBOUND_TOO_LARGE');
      expect(out.parallel).toEqual(['200 4', '200 4', '200 4', '200 4']);
      expect(maxInFlight).toBeLessThanOrEqual(2);
      expect(hits.filter((h) => h.includes('/slowish')).length - before).toBe(4);
      // 6 calls in all: the 7th is refused without being made.
      expect(out.over).toBe('ERR_SVC_BUDGET');
      expect(hits.some((h) => h.startsWith('GET /echo') && h.endsWith('/echo'))).toBe(false);
    } finally {
      await app.close();
    }
  });

  it('counts each call when it is made: calls started in one turn past requestCalls are refused without being made', async () => {
    const app = await start({
      'app.json': { outbound: { allow: ['127.0.0.1'], requestCalls: 3 } },
      'resources/things/config.json': COLLECTION,
      'resources/things/post.js': `
        var calls = [];
        for (var i = 0; i < 8; i++) calls.push(fetch('http://127.0.0.1:' + this.title + '/echo?burst=' + i).then(function (r) { return r.status; }, function (e) { return e.cause.code; }));
        this.out = { list: await Promise.all(calls) };`,
    });
    try {
      const before = hits.filter((h) => h.includes('burst=')).length;
      const out = (await app.post({ title: String(port) })).body.out as { list: unknown[] };
      expect(out.list.filter((x) => x === 200)).toHaveLength(3);
      expect(out.list.filter((x) => x === 'ERR_SVC_BUDGET')).toHaveLength(5);
      expect(hits.filter((h) => h.includes('burst=')).length - before).toBe(3);
    } finally {
      await app.close();
    }
  });

  it('a bad app.json outbound.allow entry stops the start, naming it', async () => {
    const dir = await writeApp({ 'app.json': { outbound: { allow: ['10.0.0.0/99'] } } });
    try {
      await expect(startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger })).rejects.toThrow(/outbound\.allow.*10\.0\.0\.0\/99/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("Deployd apps' npm modules that need Node built-ins", () => {
  it('jsonwebtoken signs and verifies (HS256, RS256) in a script; Node verifies what it signed', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    const app = await start(
      {
        'app.json': { scripts: { modules: ['jsonwebtoken'] } },
        'resources/things/config.json': COLLECTION,
        'resources/things/post.js': `
          var jwt = require('jsonwebtoken');
          var keys = JSON.parse(this.title);
          var hs = jwt.sign({ sub: 'u1', role: 'admin' }, 'shh', { expiresIn: '1h' });
          var rs = jwt.sign({ sub: 'u2' }, keys.private, { algorithm: 'RS256' });
          var bad; try { jwt.verify(hs, 'wrong'); } catch (e) { bad = e.name + ': ' + e.message; }
          this.out = { hs: hs, rs: rs, hsBack: jwt.verify(hs, 'shh').role, rsBack: jwt.verify(rs, keys.public).sub, bad: bad, decoded: jwt.decode(rs).sub };
          this.title = 'done';`,
      },
      ['jsonwebtoken'],
    );
    try {
      const res = await app.post({ title: JSON.stringify({ private: rsa.privateKey, public: rsa.publicKey }) });
      expect(res.status).toBe(200);
      const out = res.body.out as Record<string, string>;
      expect(out).toMatchObject({ hsBack: 'admin', rsBack: 'u2', bad: 'JsonWebTokenError: invalid signature', decoded: 'u2' });
      expect(jwt.verify(out.hs as string, 'shh')).toMatchObject({ sub: 'u1', role: 'admin' });
      expect(jwt.verify(out.rs as string, rsa.publicKey, { algorithms: ['RS256'] })).toMatchObject({ sub: 'u2' });
    } finally {
      await app.close();
    }
  });

  it("yelp-fusion's client makes its https request through the guard (here to an allowed local server)", async () => {
    const local = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url, auth: req.headers['authorization'], businesses: [{ name: 'Cafe' }] })));
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const localPort = (local.address() as AddressInfo).port;
    const app = await start(
      {
        'app.json': { scripts: { modules: ['yelp-fusion'] }, outbound: { allow: ['127.0.0.1'] } },
        'resources/things/config.json': COLLECTION,
        'resources/things/post.js': `
          var self = this;
          var client = require('yelp-fusion').client('KEY', { url: 'http://127.0.0.1:${localPort}/v3/businesses/search' });
          client.search({ term: 'coffee', location: 'sf' }).then(function (response) {
            self.out = { status: response.statusCode, body: response.jsonBody };
          }, function (err) { self.out = { error: String(err && err.message) }; });`,
      },
      ['yelp-fusion'],
    );
    try {
      const res = await app.post({ title: "x" });
      expect(res.body.out).toEqual({ status: 200, body: { url: '/v3/businesses/search?term=coffee&location=sf', auth: 'Bearer KEY', businesses: [{ name: 'Cafe' }] } });
    } finally {
      await app.close();
      await new Promise((resolve) => local.close(resolve));
    }
  });

  it("sparkpost (through request, which names net and tls at load) parses its URLs and sends a transmission through the guard", async () => {
    const bodies: string[] = [];
    const local = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: { id: 'tx1', url: req.url, auth: req.headers['authorization'] } }));
      });
    });
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const localPort = (local.address() as AddressInfo).port;
    const app = await start(
      {
        'app.json': { scripts: { modules: ['sparkpost'] }, outbound: { allow: ['127.0.0.1'] } },
        'resources/things/config.json': COLLECTION,
        'resources/things/post.js': `
          var self = this;
          var SparkPost = require('sparkpost');
          var client = new SparkPost('KEY', { origin: 'http://127.0.0.1:${localPort}' });
          this.out = { host: require('url').parse('https://api.sparkpost.com:443/api/v1').host };
          client.transmissions.send({ content: { from: 'a@example.com', subject: 'hi', text: 'hello' }, recipients: [{ address: 'b@example.com' }] }, function (err, data) {
            self.out.error = err ? err.message : null;
            self.out.data = data;
          });`,
      },
      ['sparkpost'],
    );
    try {
      const res = await app.post({ title: 'x' });
      expect(res).toMatchObject({ status: 200, body: { out: { host: 'api.sparkpost.com:443', error: null, data: { results: { id: 'tx1', url: '/api/v1/transmissions', auth: 'KEY' } } } } });
      expect(JSON.parse(bodies[0] as string)).toMatchObject({ content: { subject: 'hi', text: 'hello' } });
      expect(bodies[0]).toContain('b@example.com');
    } finally {
      await app.close();
      await new Promise((resolve) => local.close(resolve));
    }
  });
});
