import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { PATH, REPO } from '../apps/server/test/packedPackages.js';

// A local npm registry for the publish-and-install test: Verdaccio (a devDependency) on a free
// loopback port, its storage in the test's folder. The @svc scope is served only from what was
// published to it; every other package comes through it from `upstream` (the registry npm is
// configured with on this machine), so an install sees one registry and the @svc packages of
// this checkout only.

export interface LocalRegistry {
  url: string;
  /** An npm token of a user that may publish. */
  token: string;
  pid: number;
  log(): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function config(dir: string, upstream: string): string {
  return [
    `storage: ${JSON.stringify(join(dir, 'storage'))}`,
    'auth:',
    '  htpasswd:',
    `    file: ${JSON.stringify(join(dir, 'htpasswd'))}`,
    '    max_users: 10',
    'uplinks:',
    '  upstream:',
    `    url: ${JSON.stringify(upstream)}`,
    '    timeout: 120s',
    // Metadata fetched once is served for the rest of the test, as a registry's CDN would: an
    // install then waits on npm and the packages, not on a round trip per package upstream.
    '    maxage: 30m',
    '    max_fails: 10',
    'packages:',
    // No proxy for @svc: a package of this checkout that was not published is a 404, never
    // someone else's package of the same name.
    "  '@svc/*':",
    '    access: $all',
    '    publish: $authenticated',
    "  '**':",
    '    access: $all',
    '    publish: $authenticated',
    '    proxy: upstream',
    'server:',
    '  keepAliveTimeout: 60',
    'log: { type: stdout, format: pretty, level: warn }',
    '',
  ].join('\n');
}

/** Starts Verdaccio in `dir` (config, storage, users); resolves once it answers and a publisher is registered. */
export async function startRegistry(dir: string, upstream: string): Promise<LocalRegistry> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.yaml'), config(dir, upstream));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const bin = join(REPO, 'node_modules', '.bin', 'verdaccio');
  const child: ChildProcess = spawn(bin, ['--config', join(dir, 'config.yaml'), '--listen', `127.0.0.1:${port}`], {
    cwd: dir,
    env: { ...process.env, PATH, HOME: dir, VERDACCIO_APPDIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`verdaccio exited with ${child.exitCode}:\n${out}`);
    const ok = await fetch(`${url}-/ping`).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`verdaccio did not answer on ${url} within 60 s:\n${out}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  // The publisher: npm's adduser request, which answers a token.
  const name = 'svc-release';
  const res = await fetch(`${url}-/user/org.couchdb.user:${name}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, password: `pw-${Math.random().toString(36).slice(2)}`, type: 'user', roles: [], date: new Date().toISOString() }),
  });
  const body = (await res.json()) as { token?: string };
  if (!res.ok || !body.token) {
    await stop();
    throw new Error(`verdaccio refused the publisher (${res.status}): ${JSON.stringify(body)}`);
  }
  return { url, token: body.token, pid: child.pid as number, log: () => out, stop };
}
