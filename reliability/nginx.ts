import { nginxBinary, nginxHttpPreamble, nginxPreamble, runNginx } from '../apps/server/test/helpers/nginx.js';

/** The nginx binary, or the reason there is none. */
export function findNginx(): { bin: string } | { missing: string } {
  const bin = nginxBinary();
  return bin ? { bin } : { missing: 'nginx is not installed (apt-get install nginx-light, or .ci/run APT_PACKAGES)' };
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
 * nginx proxying everything to 127.0.0.1:`upstreamPort` over kept-alive HTTP/1.1 connections, as
 * a production configuration does. (`bin`: what findNginx found.)
 */
export async function startNginx(_bin: string, upstreamPort: number, options: NginxOptions = {}): Promise<TestNginx> {
  const proxy = await runNginx(({ dir, port }) =>
    [
      ...nginxPreamble(dir),
      'http {',
      ...nginxHttpPreamble(dir),
      '  upstream svc {',
      `    server 127.0.0.1:${upstreamPort};`,
      `    keepalive ${options.keepalive ?? 64};`,
      `    keepalive_timeout ${options.keepaliveTimeoutS ?? 4}s;`,
      '  }',
      '  server {',
      `    listen 127.0.0.1:${port};`,
      '    location / {',
      '      proxy_pass http://svc;',
      '      proxy_http_version 1.1;',
      '      proxy_set_header Connection "";',
      '    }',
      '  }',
      '}',
    ].join('\n'),
  );
  return { url: proxy.url, errors: proxy.stderr, stop: proxy.stop };
}
