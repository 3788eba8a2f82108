import { request } from 'node:http';

/** One answer of {@link send}. */
export interface Sent {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/**
 * One HTTP/1.1 request from a chosen loopback address (`from`, e.g. 127.0.0.5): a test plays
 * several clients of a proxy that way, since nginx sees each by its own address.
 */
export function send(options: { port: number; method?: string; path: string; body?: unknown; headers?: Record<string, string>; from?: string }): Promise<Sent> {
  const data = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: options.port,
        method: options.method ?? 'GET',
        path: options.path,
        ...(options.from ? { localAddress: options.from } : {}),
        headers: { ...(data === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)) }), ...options.headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          let body: unknown = text;
          if ((res.headers['content-type'] ?? '').includes('json') && text !== '') body = JSON.parse(text) as unknown;
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error(`no answer to ${options.method ?? 'GET'} ${options.path} in 30 s`)));
    req.on('error', reject);
    req.end(data);
  });
}

/** A login through `port` from `from`; answers the status. */
export async function loginStatus(port: number, from: string, username: string, password: string, headers: Record<string, string> = {}): Promise<number> {
  return (await send({ port, method: 'POST', path: '/users/login', body: { username, password }, from, headers })).status;
}
