import { request } from 'node:http';

/** A JSON request with headers fetch would not send as given (Host, Origin); answers the status. */
export function rawRequest(url: string, method: string, path: string, body: unknown, headers: Record<string, string>): Promise<number> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(text);
  });
}
