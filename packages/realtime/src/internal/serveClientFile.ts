import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Browsers keep the client a day: the URL has no version in it (pages written for Deployd load
 * /socket.io/socket.io.js), so a much longer time would keep an old client after an upgrade; the
 * ETag (the socket.io version) revalidates it after that.
 */
const MAX_AGE_S = 24 * 60 * 60;

interface ClientFile {
  plain: Buffer;
  gzip: Buffer;
  etag: string;
}

let loaded: Map<string, ClientFile> | undefined;

/** The browser client shipped with the installed socket.io (the version the server speaks), read once. */
function clientFiles(): Map<string, ClientFile> {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  const root = dirname(require.resolve('socket.io/package.json'));
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  const files = new Map<string, ClientFile>();
  for (const name of ['socket.io.js', 'socket.io.min.js']) {
    // The sourceMappingURL line points at a .map this server does not serve.
    const text = readFileSync(join(root, 'client-dist', name), 'utf8').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
    const plain = Buffer.from(text);
    files.set(name, { plain, gzip: gzipSync(plain), etag: `"socket.io-${version}"` });
  }
  loaded = files;
  return files;
}

/**
 * Serves `<path>/socket.io.js` (and `.min.js`), the Socket.IO browser client, as Deployd 1.2's
 * Socket.IO did. Socket.IO's own serving (serveClient) stays off: it answers `max-age=0`, and two
 * handlers for one URL would be one too many. Installed like Socket.IO installs its own: in front
 * of the server's request listeners (Engine.IO's among them, which answers every `<path>/` URL).
 * Answers a function that puts the listeners back.
 *
 * `own`: the server's request listeners before Socket.IO was attached. Engine.IO's listener hands
 * every other URL to them, so a URL outside `<path>/` goes to them from here, one listener fewer
 * on every request the app answers (bench/RESULTS.md, "Issue 39, round 17").
 */
export function serveClientFile(httpServer: HttpServer, path: string, own?: readonly RequestListener[]): () => void {
  const files = clientFiles();
  const prefix = `${path.replace(/\/+$/, '')}/`;
  // What Engine.IO's listener intercepts (its path, one trailing slash taken off and one added).
  const engineFront = `${path.replace(/\/$/, '')}/`;
  const previous = httpServer.listeners('request') as RequestListener[];
  const front: RequestListener = (req, res) => {
    const url = req.url ?? '';
    if (own !== undefined && !url.startsWith(engineFront)) {
      // Every request of the server passes here: an index, not an iterator object per request.
      for (let i = 0; i < own.length; i++) (own[i] as RequestListener).call(httpServer, req, res);
      return;
    }
    const file = url.startsWith(prefix) ? files.get(url.slice(prefix.length).split('?')[0]!) : undefined;
    if (file === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) {
      for (let i = 0; i < previous.length; i++) (previous[i] as RequestListener).call(httpServer, req, res);
      return;
    }
    const headers: Record<string, string> = {
      'content-type': 'application/javascript; charset=utf-8',
      'cache-control': `public, max-age=${MAX_AGE_S}`,
      etag: file.etag,
      vary: 'accept-encoding',
    };
    if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    const body = gzip ? file.gzip : file.plain;
    if (gzip) headers['content-encoding'] = 'gzip';
    headers['content-length'] = String(body.length);
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  httpServer.removeAllListeners('request');
  httpServer.on('request', front);
  return () => {
    // Only when nothing was installed after us; otherwise leaving `front` is the safe choice.
    const now = httpServer.listeners('request');
    if (now.length !== 1 || now[0] !== front) return;
    httpServer.removeAllListeners('request');
    for (const listener of previous) httpServer.on('request', listener);
  };
}
