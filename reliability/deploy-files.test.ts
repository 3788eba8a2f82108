import { spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { freePort, nginxBinary, runNginx } from '../apps/server/test/helpers/nginx.js';
import type { NginxProxy } from '../apps/server/test/helpers/nginx.js';
import { openRules } from '../apps/server/test/cli.js';
import { PATH, REPO, packAll, run, tarballDependencies } from '../apps/server/test/packedPackages.js';
import { buildImage, parseDockerfile, startImage, stopImage } from './deployFiles.js';
import type { Image, Stage } from './deployFiles.js';
import { accessLogOf, renderDeployNginx, startUpstreamObserver } from './deployNginx.js';

// Issue 23 (10): the deployment files in docs/deploy are run, not only read. Docker is absent
// here, so the test does what the Dockerfile says, step by step, in folders (each stage's WORKDIR
// mapped into a folder of its own), with the published packages packed into tarballs standing in
// for the registry; then it runs the compose file's svc services (two processes, MongoDB, Redis)
// behind nginx with docs/deploy/nginx.conf and a certificate of its own. What it changes from the
// files is said where it does it: the registry (tarballs), the ports, the hosts of MongoDB and
// Redis, the certificate paths, the access log's path, and the `node` user of the image (the
// test's own user here). Issue 38 (15): nginx's idle upstream connections and X-Request-Id, and
// the single-host variant nginx-site.conf.

const DEPLOY = join(REPO, 'docs', 'deploy');
const mongoUrl = process.env.SVC_TEST_MONGODB_URL;
const redisUrl = process.env.SVC_TEST_REDIS_URL;
const has = (command: string, args: string[]) => spawnSync(command, args, { env: { ...process.env, PATH } }).status === 0;
const hasPnpm = has('pnpm', ['--version']);
const hasNginx = nginxBinary() !== undefined;
const hasOpenssl = has('openssl', ['version']);
const hasDocker = has('docker', ['info']);

function skipped(what: string, why: string): void {
  const message = `${what} SKIPPED: ${why}`;
  if (process.env.CI === 'true') throw new Error(`${message}; under CI=true nothing may be skipped`);
  process.stderr.write(`${message}\n`);
}
if (!hasPnpm) skipped('the Dockerfile steps', 'no pnpm on PATH to pack the packages');
const composeRunnable = hasPnpm && hasNginx && hasOpenssl && mongoUrl !== undefined && redisUrl !== undefined;
if (!composeRunnable) skipped('the compose services behind nginx', 'they need nginx, openssl, SVC_TEST_MONGODB_URL and SVC_TEST_REDIS_URL (.ci/run provides them)');
if (hasDocker) process.stderr.write('docker answers here, but this test runs the steps without it (the same in CI)\n');

/** An HTTPS request through nginx (its own certificate: not checked). */
function viaProxy(port: number, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path, method: init.method ?? 'GET', headers: init.headers, rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A self-signed certificate for 127.0.0.1 in `folder` (fullchain.pem, privkey.pem); answers the folder. */
async function certificate(folder: string): Promise<string> {
  await mkdir(folder, { recursive: true });
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', join(folder, 'privkey.pem'), '-out', join(folder, 'fullchain.pem')], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`openssl: ${made.stderr}`);
  return folder;
}

/** The status of a WebSocket upgrade for realtime through nginx (101 when it passed). */
function upgradeStatus(port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path: '/socket.io/?EIO=4&transport=websocket', rejectUnauthorized: false, headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' } });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('response', (res) => resolve(res.statusCode ?? 0));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Through nginx to svc: without an X-Request-Id the answer carries nginx's own (`$request_id`, 32
 * hex digits; svc's own ids look otherwise), and nginx's access log line has the same; a client's
 * id is kept end to end.
 */
async function expectRequestIds(port: number, accessLog: string): Promise<void> {
  const plain = await viaProxy(port, '/todos');
  expect(plain.status).toBe(200);
  const id = String(plain.headers['x-request-id']);
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  const own = await viaProxy(port, '/todos', { headers: { 'x-request-id': 'client-trace-42' } });
  expect(own.headers['x-request-id']).toBe('client-trace-42');
  // nginx writes its access line when the answer is over: wait for both lines (bounded).
  let log = '';
  for (let waited = 0; waited < 10_000 && !(log.includes(`id=${id}`) && log.includes('id=client-trace-42')); waited += 100) {
    log = await readFile(accessLog, 'utf8').catch(() => '');
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(log).toContain(`id=${id}`);
  expect(log).toContain('id=client-trace-42');
}

describe.runIf(hasNginx && hasOpenssl)("docs/deploy's nginx files keep idle upstream connections for less than svc's 5 s", () => {
  // nginx's default keepalive_timeout is 60 s: past svc's http.keepAliveTimeoutMs, nginx sends a
  // request into a connection svc is closing, and answers 502. The upstream here never closes an
  // idle connection itself, so each close it sees is nginx's.
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-deploy-nginx-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['nginx.conf', 'conf', 2],
    ['nginx-site.conf', 'site', 1],
  ] as const)('%s: nginx closes an idle upstream connection well before 60 s, and sends X-Request-Id', async (file, kind, upstreams) => {
    const observer = await startUpstreamObserver();
    const certs = await certificate(join(dir, `certs-${kind}`));
    const httpPort = await freePort();
    const source = await readFile(join(DEPLOY, file), 'utf8');
    const nginx = await runNginx(({ dir: prefix, port }) => renderDeployNginx(source, kind, { prefix, httpsPort: port, httpPort, upstreams: Array(upstreams).fill(observer.port), certs }));
    try {
      const answer = await viaProxy(nginx.port, '/anything');
      expect(answer.status).toBe(200);
      expect(observer.connections).toHaveLength(1);
      const [connection] = observer.connections;
      // nginx's $request_id towards the upstream when the client sends none.
      expect(connection?.requestIds).toEqual([expect.stringMatching(/^[0-9a-f]{32}$/)]);
      expect((JSON.parse(answer.body) as { id: string }).id).toBe(connection?.requestIds[0]);
      // The connection is kept for the next request: not closed after the answer.
      expect(connection?.endedByProxy).toBe(false);
      // Closed by nginx once idle for its keepalive_timeout (4 s); 30 s is a bound that a
      // loaded machine keeps and nginx's default (60 s) does not.
      for (let waited = 0; waited < 30_000 && !connection?.endedByProxy; waited += 200) await new Promise((r) => setTimeout(r, 200));
      expect(connection?.endedByProxy).toBe(true);
    } finally {
      await nginx.stop();
      await observer.close();
    }
  }, 60_000);
});

describe.runIf(hasPnpm)('docs/deploy: the Dockerfile and compose file, run without Docker', () => {
  let dir: string;
  let image: Image;
  let stages: Stage[];
  const rootKey = 'a'.repeat(8) + Math.random().toString(36).slice(2).padEnd(40, 'k');

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-deploy-'));
    const tarballs = await packAll(join(dir, 'registry'));
    // The build context: an app made by `svc create`, with the deploy files copied in as the docs say.
    const app = join(dir, 'my-app');
    const created = await run(process.execPath, ['--no-node-snapshot', join(REPO, 'apps/server/bin/svc.js'), 'create', app], dir);
    if (created.code !== 0) throw new Error(`svc create failed:\n${created.out}`);
    // The checks below write anonymously; they test the deploy files, not the scaffolded rules.
    await openRules(app);
    await cp(join(DEPLOY, 'Dockerfile'), join(app, 'Dockerfile'));
    await cp(join(DEPLOY, '.dockerignore'), join(app, '.dockerignore'));
    // The registry: the app's @svc/server range resolves to the packed tarballs.
    const pkg = JSON.parse(await readFile(join(app, 'package.json'), 'utf8')) as Record<string, unknown>;
    const deps = tarballDependencies(tarballs, join(dir, 'registry'));
    pkg.dependencies = { '@svc/server': deps['@svc/server'] };
    pkg.overrides = deps;
    await writeFile(join(app, 'package.json'), JSON.stringify(pkg, null, 2));
    // As compose.yaml says: behind nginx, app.json trusts one proxy hop.
    const appJson = JSON.parse(await readFile(join(app, 'app.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(app, 'app.json'), JSON.stringify({ ...appJson, trustProxy: 1 }, null, 2));
    // Files the image must not take from the context.
    await mkdir(join(app, 'data'), { recursive: true });
    await writeFile(join(app, 'data', 'stale.db'), 'not in the image');
    stages = parseDockerfile(await readFile(join(app, 'Dockerfile'), 'utf8'));
    image = await buildImage(stages, join(dir, 'image'), app);
  }, 420_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('builds on Node 24 images of one Debian release, runs as a user with no build tools in the runtime stage', () => {
    expect(stages.map((s) => s.from)).toEqual(['node:24-bookworm', 'node:24-bookworm-slim']);
    const [build, runtime] = stages as [Stage, Stage];
    expect(runtime.steps.find((s) => s.op === 'USER')?.args).toBe('node');
    expect(runtime.steps.some((s) => s.op === 'COPY' && s.flags.from === build.name)).toBe(true);
    expect(image.env).toMatchObject({ NODE_ENV: 'production', SVC_ENV: 'production' });
    expect(image.cmd.slice(0, 2)).toEqual(['node', '--no-node-snapshot']);
  });

  it("the image holds the app and its packages but not the context's data, keys or node_modules", async () => {
    const files = await readdir(image.workdir);
    expect(files).toEqual(expect.arrayContaining(['app.json', 'resources', 'public', 'node_modules', 'data', '.svc']));
    expect(await readdir(join(image.workdir, 'data'))).toEqual([]);
    expect(await readdir(join(image.workdir, 'node_modules', '@svc'))).toContain('server');
  });

  it("CMD serves the app in production with SVC_ROOT_KEYS, HEALTHCHECK passes, the stop signal ends it with 0", async () => {
    const server = await startImage(image, { PORT: '0', SVC_ROOT_KEYS: rootKey });
    try {
      expect(server.out()).toMatch(/production/);
      const base = `http://127.0.0.1:${server.port}`;
      const made = await fetch(`${base}/todos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'in the image' }) });
      expect(made.status).toBe(200);
      // Root comes only from the key in the environment.
      expect((await fetch(`${base}/dashboard/api/app`, { headers: { 'svc-ssh-key': 'wrong' } })).status).toBe(401);
      expect((await fetch(`${base}/dashboard/api/app`, { headers: { 'svc-ssh-key': rootKey } })).status).toBe(200);
      const [command = '', ...args] = image.healthcheck;
      const health = await run(command === 'node' ? process.execPath : command, args, image.workdir, { ...image.env, PORT: String(server.port) });
      expect(health.code, health.out).toBe(0);
    } finally {
      expect(await stopImage(server.child, image.stopSignal)).toBe(0);
    }
    // With nothing listening the health check fails (it is not a check that cannot fail).
    const [command = '', ...args] = image.healthcheck;
    expect((await run(command === 'node' ? process.execPath : command, args, image.workdir, { ...image.env, PORT: String(await freePort()) })).code).not.toBe(0);
  }, 90_000);

  describe.runIf(composeRunnable)('compose.yaml: two svc processes on MongoDB and Redis behind nginx.conf with TLS', () => {
    const servers: { child: ChildProcess; port: number; out: () => string }[] = [];
    let nginx: NginxProxy | undefined;
    let httpsPort: number;
    let httpPort: number;
    let nginxPrefix = '';

    beforeAll(async () => {
      const compose = parseYaml(await readFile(join(DEPLOY, 'compose.yaml'), 'utf8')) as { services: Record<string, { build?: string; environment?: Record<string, string>; image?: string }> };
      const svcServices = Object.entries(compose.services).filter(([, s]) => s.build === '.');
      expect(svcServices.map(([name]) => name)).toEqual(['svc-1', 'svc-2']);
      const db = `deploy_${process.pid}_${Date.now()}`;
      for (const [, service] of svcServices) {
        const env: Record<string, string> = {};
        for (const [key, value] of Object.entries(service.environment ?? {})) {
          // ${NAME:?message}: compose's required variable, from the test's .env.
          const resolved = value.replace(/\$\{(\w+):\?[^}]*\}/g, (_m, name: string) => (name === 'SVC_ROOT_KEYS' ? rootKey : ''));
          // The compose hosts (mongo, redis) are the test's services.
          env[key] = resolved.replace(/^mongodb:\/\/mongo:27017\/.*$/, `${(mongoUrl as string).replace(/\/?$/, '/')}${db}`).replace(/^redis:\/\/redis:6379$/, redisUrl as string);
        }
        expect(Object.keys(env).sort()).toEqual(['SVC_DB', 'SVC_REDIS', 'SVC_ROOT_KEYS']);
        servers.push(await startImage(image, { ...env, PORT: '0' }));
      }
      // nginx.conf with the lines marked "test:" pointed at this test's ports and certificate.
      const certs = await certificate(join(dir, 'certs'));
      httpPort = await freePort();
      const source = await readFile(join(DEPLOY, 'nginx.conf'), 'utf8');
      nginx = await runNginx(({ dir: prefix, port }) => {
        nginxPrefix = prefix;
        return renderDeployNginx(source, 'conf', { prefix, httpsPort: port, httpPort, upstreams: servers.map((s) => s.port), certs });
      });
      httpsPort = nginx.port;
    }, 120_000);
    afterAll(async () => {
      await nginx?.stop();
      for (const server of servers) await stopImage(server.child, 'SIGTERM');
    });

    it('http redirects to https; https reaches svc; both processes share the store', async () => {
      const plain = await fetch(`http://127.0.0.1:${httpPort}/todos`, { redirect: 'manual' });
      expect(plain.status).toBe(301);
      expect(plain.headers.get('location')).toMatch(/^https:\/\//);
      const made = await viaProxy(httpsPort, '/todos', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'through nginx' }) });
      expect(made.status, made.body).toBe(200);
      const { id } = JSON.parse(made.body) as { id: string };
      for (const server of servers) {
        const res = await fetch(`http://127.0.0.1:${server.port}/todos/${id}`);
        expect(res.status).toBe(200);
      }
    });

    it('a WebSocket upgrade for realtime goes through nginx', async () => {
      expect(await upgradeStatus(httpsPort)).toBe(101);
    });

    it('svc sees https and the client address nginx passes on (trustProxy 1), not the proxy itself', async () => {
      const signup = await viaProxy(httpsPort, '/users', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'dep', password: 'a-long-password-1' }) });
      expect(signup.status, signup.body).toBe(200);
      const login = await viaProxy(httpsPort, '/users/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'dep', password: 'a-long-password-1' }) });
      expect(login.status, login.body).toBe(200);
      // The session cookie is Secure: svc knows the client used https (X-Forwarded-Proto from a trusted hop).
      expect(String(login.headers['set-cookie'])).toMatch(/;\s*Secure/i);
    });

    it("X-Request-Id: nginx's own id when the client sends none, the client's when it does; the answer and nginx's access log carry the same", async () => {
      await expectRequestIds(httpsPort, accessLogOf(nginxPrefix));
    });
  });

  describe.runIf(hasNginx && hasOpenssl)('nginx-site.conf: one svc process on the same host', () => {
    let server: { child: ChildProcess; port: number; out: () => string } | undefined;
    let nginx: NginxProxy | undefined;
    let prefix = '';

    beforeAll(async () => {
      // The embedded store (no --db), as svc.service runs it; trustProxy 1 from the app.json above
      // stands for the guide's ["loopback"] (one hop, on this machine).
      server = await startImage(image, { PORT: '0', SVC_ROOT_KEYS: rootKey });
      const certs = await certificate(join(dir, 'site-certs'));
      const httpPort = await freePort();
      const source = await readFile(join(DEPLOY, 'nginx-site.conf'), 'utf8');
      nginx = await runNginx(({ dir: place, port }) => {
        prefix = place;
        return renderDeployNginx(source, 'site', { prefix: place, httpsPort: port, httpPort, upstreams: [server?.port ?? 0], certs });
      });
    }, 120_000);
    afterAll(async () => {
      await nginx?.stop();
      if (server) await stopImage(server.child, 'SIGTERM');
    });

    it('https reaches svc, which sees https and the client behind nginx; WebSocket upgrades pass', async () => {
      const port = nginx?.port ?? 0;
      const signup = await viaProxy(port, '/users', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'site', password: 'a-long-password-1' }) });
      expect(signup.status, signup.body).toBe(200);
      const login = await viaProxy(port, '/users/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'site', password: 'a-long-password-1' }) });
      expect(String(login.headers['set-cookie'])).toMatch(/;\s*Secure/i);
      expect(await upgradeStatus(port)).toBe(101);
    });

    it("X-Request-Id: nginx's own id or the client's, the same in the answer and the site's access log", async () => {
      await expectRequestIds(nginx?.port ?? 0, accessLogOf(prefix));
    });
  });
});
