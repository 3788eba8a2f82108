import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { nginxHttpPreamble, nginxPreamble } from '../apps/server/test/helpers/nginx.js';

// docs/deploy's nginx files as the deploy test runs them: only the lines marked "test:" change
// (upstream servers, listen ports, certificate, access log), so what is tested is what is shipped.

/** Where the test's nginx listens and what it points at. */
export interface NginxPlaces {
  /** nginx's own folder (its -p prefix): pid file, temp files, the access log. */
  prefix: string;
  httpsPort: number;
  httpPort: number;
  /** One port per `# test: upstream` line, in order. */
  upstreams: readonly number[];
  /** Folder holding fullchain.pem and privkey.pem. */
  certs: string;
}

/** The access log the rendered configuration writes (in nginx's folder). */
export function accessLogOf(prefix: string): string {
  return join(prefix, 'access.log');
}

/** One `# test:` line of a deploy file rewritten for the test; throws on a mark it does not know. */
function testLine(line: string, places: NginxPlaces, next: () => number): string {
  const mark = /# test: (\w+)/.exec(line)?.[1];
  const indent = /^\s*/.exec(line)?.[0] ?? '';
  if (mark === 'upstream') return `${indent}server 127.0.0.1:${next()};`;
  if (mark === 'http') return `${indent}listen 127.0.0.1:${places.httpPort};`;
  if (mark === 'https') return `${indent}listen 127.0.0.1:${places.httpsPort} ssl http2;`;
  if (mark === 'cert') return `${indent}ssl_certificate ${join(places.certs, 'fullchain.pem')};`;
  if (mark === 'key') return `${indent}ssl_certificate_key ${join(places.certs, 'privkey.pem')};`;
  if (mark === 'access_log') return line.replace(/access_log\s+\S+/, `access_log ${accessLogOf(places.prefix)}`).replace(/\s*# test:.*$/, '');
  throw new Error(`unknown test mark in a deploy file: ${line}`);
}

/**
 * docs/deploy/nginx.conf (a whole nginx.conf) or nginx-site.conf (a site: the http block's
 * content, wrapped here as Debian's nginx.conf includes it) with its test lines rewritten.
 */
export function renderDeployNginx(source: string, kind: 'conf' | 'site', places: NginxPlaces): string {
  let upstream = 0;
  const next = (): number => {
    const port = places.upstreams[upstream++];
    if (port === undefined) throw new Error('the deploy file has more upstream servers than the test gave');
    return port;
  };
  const body = source
    .split('\n')
    .map((line) => (line.includes('# test:') ? testLine(line, places, next) : line))
    .join('\n');
  if (upstream !== places.upstreams.length) throw new Error(`the deploy file has ${upstream} upstream servers, the test gave ${places.upstreams.length}`);
  if (kind === 'site') return [...nginxPreamble(places.prefix), 'http {', ...nginxHttpPreamble(places.prefix), body, '}'].join('\n');
  // One worker, and the pid file in the test's folder.
  return body.replace(/^worker_processes auto;/m, `worker_processes 1;\npid ${places.prefix}/nginx.pid;${process.getuid?.() === 0 ? '\nuser root;' : ''}`);
}

/** One upstream connection as an {@link UpstreamObserver} saw it. */
export interface ObservedConnection {
  /** The X-Request-Id of each request that came on it. */
  requestIds: (string | undefined)[];
  /** Set when the proxy closed it (its end of the connection ended). */
  endedByProxy: boolean;
}

/**
 * An upstream that never closes an idle connection itself (keep-alive 10 minutes), so that any
 * close it sees is the proxy's: what nginx's keepalive_timeout decides, and nothing else.
 */
export interface UpstreamObserver {
  port: number;
  connections: ObservedConnection[];
  close(): Promise<void>;
}

export async function startUpstreamObserver(): Promise<UpstreamObserver> {
  const connections: ObservedConnection[] = [];
  const seen = new WeakMap<Socket, ObservedConnection>();
  const server: Server = createServer((req, res) => {
    const header = req.headers['x-request-id'];
    seen.get(req.socket)?.requestIds.push(Array.isArray(header) ? header[0] : header);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: header ?? null }));
  });
  server.keepAliveTimeout = 600_000;
  server.on('connection', (socket: Socket) => {
    const connection: ObservedConnection = { requestIds: [], endedByProxy: false };
    connections.push(connection);
    seen.set(socket, connection);
    socket.on('end', () => (connection.endedByProxy = true));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
