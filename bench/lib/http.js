// Plain HTTP requests from the harness itself (session, seeding, sanity checks): not measured.
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

/**
 * One request to 127.0.0.1. Resolves { status, headers, body: Buffer, cookies: string[] } where
 * cookies are the `name=value` pairs of its Set-Cookie headers.
 */
export function request(port, { method = 'GET', path = '/', headers = {}, body, timeoutMs = 10_000 } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path, agent, headers: { ...headers, ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) } },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const setCookie = res.headers['set-cookie'] ?? [];
          resolve({
            status: res.statusCode,
            headers: res.headers,
            body: Buffer.concat(chunks),
            cookies: setCookie.map((c) => c.split(';')[0].trim()).filter(Boolean),
          });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Starts a session as a browser would: one request without cookies, then the Set-Cookie value
 * is sent on every later request. Returns the Cookie header value ('' when none was set).
 */
export async function startSession(port, path) {
  const res = await request(port, { path });
  if (res.status < 200 || res.status >= 300) {
    throw new Error(`GET ${path} to start a session answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
  }
  return res.cookies.join('; ');
}

/** POSTs `count` JSON bodies (8 at a time); returns the ids of the created objects in order. */
export async function seed(port, { count, path, body }, cookie) {
  const ids = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const res = await request(port, {
        method: 'POST',
        path,
        body: body(i),
        headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
      });
      if (res.status < 200 || res.status >= 300) {
        throw new Error(`seeding: POST ${path} answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
      }
      const obj = JSON.parse(res.body.toString('utf8'));
      if (typeof obj.id !== 'string' && typeof obj.id !== 'number') throw new Error(`seeding: POST ${path} returned no id`);
      ids[i] = String(obj.id);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return ids;
}

export function closeAgent() {
  agent.destroy();
}
