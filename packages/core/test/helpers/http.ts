import { createServer, silentLogger } from '@svc/core';
import type { Resource, Store, SvcServer, SvcServerOptions } from '@svc/core';

/** One HTTP answer, body parsed when it is JSON. */
export interface TestResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

/** Options of one test request. */
export interface RequestOptions {
  body?: unknown;
  /** A raw body sent as is (with `contentType`). */
  raw?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  /** Keep the session cookie of earlier requests (default true). */
  session?: boolean;
}

/** A real svc server on port 0, and a small fetch client that keeps its sid cookie like a browser. */
export interface TestServer {
  url: string;
  server: SvcServer;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** A second client with its own cookie jar. */
  client(): TestClient;
  close(): Promise<void>;
}

/** A client with its own cookie jar. */
export interface TestClient {
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  readonly sid: string | undefined;
  /** Headers the client adds to every request (root's key). */
  readonly headers?: Record<string, string>;
}

/** Starts an svc server around the given resources on a free loopback port. */
export async function startTestServer(store: Store, resources: Resource[], options: Partial<SvcServerOptions> = {}): Promise<TestServer> {
  const server = await createServer({ store, resources, logger: silentLogger, ...options });
  const port = await server.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${port}`;
  const makeClient = (): TestClient => {
    let sid: string | undefined;
    return {
      get sid() {
        return sid;
      },
      async request(method, path, opts = {}) {
        const headers: Record<string, string> = { ...opts.headers };
        if (sid && opts.session !== false && headers.cookie === undefined) headers.cookie = `sid=${sid}`;
        let body: string | Buffer | undefined;
        if (opts.raw !== undefined) {
          body = opts.raw;
          if (opts.contentType) headers['content-type'] = opts.contentType;
        } else if (opts.body !== undefined) {
          body = JSON.stringify(opts.body);
          headers['content-type'] = opts.contentType ?? 'application/json';
        }
        const res = await fetch(url + path, { method, headers, body, redirect: 'manual' });
        const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('sid='));
        if (setCookie) {
          const value = setCookie.slice(4, setCookie.indexOf(';'));
          sid = value === '' ? undefined : value;
        }
        const text = await res.text();
        let parsed: unknown = text;
        if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text);
        return { status: res.status, headers: res.headers, body: parsed, text };
      },
    };
  };
  const main = makeClient();
  return {
    url,
    server,
    request: (m, p, o) => main.request(m, p, o),
    client: makeClient,
    close: () => server.close(),
  };
}
