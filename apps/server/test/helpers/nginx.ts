import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The nginx binary (Debian's /usr/sbin/nginx, or one on PATH), or undefined when there is none. */
export function nginxBinary(): string | undefined {
  const candidates = ['/usr/sbin/nginx', ...(process.env.PATH ?? '').split(':').filter(Boolean).map((d) => join(d, 'nginx'))];
  for (const path of candidates) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** An nginx started by a test, in front of one upstream port. */
export interface NginxProxy {
  port: number;
  url: string;
  child: ChildProcess;
  stderr(): string;
  stop(): Promise<void>;
}

/** What a configuration is written for: the temp folder nginx runs in and the free port it listens on. */
export interface NginxPlace {
  dir: string;
  port: number;
}

/**
 * The lines every test configuration starts with: workers able to use the temp folder (the
 * master runs as root in CI), one worker, the pid file and temp paths in the folder.
 */
export function nginxPreamble(dir: string): string[] {
  return [
    ...(process.getuid?.() === 0 ? ['user root;'] : []),
    'worker_processes 1;',
    `pid ${dir}/nginx.pid;`,
    'events { worker_connections 1024; }',
  ];
}

/** The http-block lines that keep nginx's temp files in the folder, and no access log. */
export function nginxHttpPreamble(dir: string): string[] {
  return ['  access_log off;', ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`)];
}

/**
 * Starts nginx as a child of the test with the configuration `config` writes for its folder and
 * port (its own prefix in a temp folder, not daemonised, on 127.0.0.1). Stopped by its PID; a
 * port taken in between is tried again with another.
 */
export async function runNginx(config: (place: NginxPlace) => string): Promise<NginxProxy> {
  const bin = nginxBinary();
  if (bin === undefined) throw new Error('nginx is not installed');
  const dir = await mkdtemp(join(tmpdir(), 'svc-nginx-'));
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    await writeFile(join(dir, 'nginx.conf'), config({ dir, port }));
    const child = spawn(bin, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr', '-g', 'daemon off; error_log stderr;'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const up = await waitForPort(port, child, 10_000);
    if (up) {
      return {
        port,
        url: `http://127.0.0.1:${port}`,
        child,
        stderr: () => err,
        stop: () => stopProxy(child, exited, dir),
      };
    }
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
    if (attempt >= 3) {
      await rm(dir, { recursive: true, force: true });
      throw new Error(`nginx did not start:\n${err}`);
    }
  }
}

/**
 * nginx in front of one upstream port: `location / { proxy_pass http://127.0.0.1:<upstream>;
 * <directives> }`.
 */
export function startNginx(upstream: number, directives: readonly string[] = []): Promise<NginxProxy> {
  return runNginx(({ dir, port }) =>
    [
      ...nginxPreamble(dir),
      'http {',
      ...nginxHttpPreamble(dir),
      '  server {',
      `    listen 127.0.0.1:${port};`,
      '    location / {',
      `      proxy_pass http://127.0.0.1:${upstream};`,
      ...directives.map((d) => `      ${d}`),
      '    }',
      '  }',
      '}',
    ].join('\n'),
  );
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, child: ChildProcess, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until && child.exitCode === null) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** The caddy binary, or undefined when there is none (not installed in CI: its tests skip). */
export function caddyBinary(): string | undefined {
  for (const path of ['/usr/bin/caddy', ...(process.env.PATH ?? '').split(':').filter(Boolean).map((d) => join(d, 'caddy'))]) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Starts Caddy with its defaults (`reverse_proxy 127.0.0.1:<upstream>`, no admin endpoint, no
 * automatic HTTPS), its state in a temp folder, on 127.0.0.1 on a free port. Stopped by its PID.
 */
export async function startCaddy(upstream: number): Promise<NginxProxy> {
  const bin = caddyBinary();
  if (bin === undefined) throw new Error('caddy is not installed');
  const dir = await mkdtemp(join(tmpdir(), 'svc-caddy-'));
  const port = await freePort();
  await writeFile(join(dir, 'Caddyfile'), `{\n  admin off\n  auto_https off\n}\nhttp://127.0.0.1:${port} {\n  reverse_proxy 127.0.0.1:${upstream}\n}\n`);
  const child = spawn(bin, ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, HOME: dir, XDG_CONFIG_HOME: dir, XDG_DATA_HOME: dir },
  });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = (): Promise<void> => stopProxy(child, exited, dir);
  if (!(await waitForPort(port, child, 10_000))) {
    await stop();
    throw new Error(`caddy did not start:\n${err}`);
  }
  return { port, url: `http://127.0.0.1:${port}`, child, stderr: () => err, stop };
}

/** SIGTERM by PID (SIGKILL after 5 s), then the proxy's temp folder removed. */
async function stopProxy(child: ChildProcess, exited: Promise<void>, dir: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
  await rm(dir, { recursive: true, force: true });
}
