import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian's nginx package puts the binary; `nginx` on the PATH otherwise. */
const CANDIDATES = ['/usr/sbin/nginx', 'nginx'];

/** The nginx binary, or undefined (with the reason) when there is none. */
export function findNginx(): { bin: string } | { missing: string } {
  for (const bin of CANDIDATES) {
    const probe = spawnSync(bin, ['-v'], { stdio: 'ignore' });
    if (probe.error === undefined && probe.status === 0) return { bin };
  }
  return { missing: 'nginx is not installed (apt-get install nginx-light, or .ci/run APT_PACKAGES)' };
}

/** An nginx of the test's own, proxying to one upstream on loopback. */
export interface TestNginx {
  /** http://127.0.0.1:<port> of nginx. */
  url: string;
  /** nginx's error log so far (its stderr): why each 502 was given. */
  errors(): string;
  /** Stops nginx (SIGTERM to its master process, by PID) and removes its folder. */
  stop(): Promise<void>;
}

/** Options of {@link startNginx}. */
export interface NginxOptions {
  /** Idle connections to the upstream nginx keeps (nginx's `keepalive`). */
  keepalive?: number;
  /**
   * How long nginx keeps an idle upstream connection, s: below svc's `http.keepAliveTimeoutMs`
   * (5 s), as docs/deploying.md asks, so that nginx closes it before svc does.
   */
  keepaliveTimeoutS?: number;
}

/**
 * Starts nginx as a child process with its own prefix and configuration in a temporary folder,
 * listening on a free loopback port and proxying everything to 127.0.0.1:`upstreamPort` over
 * kept-alive HTTP/1.1 connections, as a production configuration does.
 */
export async function startNginx(bin: string, upstreamPort: number, options: NginxOptions = {}): Promise<TestNginx> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-nginx-'));
  // Workers may run as another user (nginx started by root): they write request bodies here.
  await chmod(dir, 0o777);
  const port = await freePort();
  const conf = `
worker_processes 1;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream svc {
    server 127.0.0.1:${upstreamPort};
    keepalive ${options.keepalive ?? 64};
    keepalive_timeout ${options.keepaliveTimeoutS ?? 4}s;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://svc;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
  await writeFile(join(dir, 'nginx.conf'), conf);
  const child: ChildProcess = spawn(bin, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr', '-g', `daemon off; pid ${dir}/nginx.pid; error_log stderr;`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (d: string) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  // Up once it accepts connections; bounded.
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`nginx exited at start: ${stderr}`);
    }
    if (await accepts(port)) break;
    if (i >= 200) {
      await stop();
      throw new Error(`nginx did not listen within 10 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `http://127.0.0.1:${port}`, errors: () => stderr, stop };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
