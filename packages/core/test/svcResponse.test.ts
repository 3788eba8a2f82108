import { createServer, request, ServerResponse as NodeServerResponse } from 'node:http';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SvcServerResponse } from '../src/http/svcResponse.js';

// svc's own server sends X-Request-Id with the answer's headers (SvcServerResponse) instead of
// setting it on arrival: every way node lets an answer write its headers must still carry it
// once, and a value the answering code sets or gives must still win over it.

const cases: Record<string, (res: ServerResponse) => void> = {
  object: (res) => res.writeHead(200, { 'content-type': 'text/plain', etag: '"a"' }).end('x'),
  reason: (res) => res.writeHead(201, 'Made', { 'content-type': 'text/plain' }).end('x'),
  array: (res) => res.writeHead(200, ['content-type', 'text/plain', 'x-extra', 'a', 'x-extra', 'b']).end('x'),
  none: (res) => res.writeHead(204).end(),
  implicit: (res) => {
    res.statusCode = 404;
    res.end('x');
  },
  progressive: (res) => {
    res.setHeader('access-control-allow-origin', '*');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
  },
  appended: (res) => {
    res.appendHeader('set-cookie', 'a=1');
    res.appendHeader('set-cookie', 'b=2');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
  },
  'set with setHeaders': (res) => {
    res.setHeaders(new Map([['vary', 'origin']]));
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
  },
  'set, then removed': (res) => {
    res.setHeader('vary', 'origin');
    res.removeHeader('vary');
    res.writeHead(200, { 'content-type': 'text/plain', etag: '"a"' }).end('x');
  },
  'own id in an object': (res) => res.writeHead(200, { 'X-Request-Id': 'mine' }).end('x'),
  'own id in an array': (res) => res.writeHead(200, ['X-REQUEST-ID', 'mine']).end('x'),
  'own id set before': (res) => {
    res.setHeader('x-request-id', 'mine');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
  },
  'own id appended before': (res) => {
    res.appendHeader('x-request-id', 'mine');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
  },
  'own id set, then given': (res) => {
    res.setHeader('vary', 'origin');
    res.writeHead(200, { 'x-request-id': 'mine' }).end('x');
  },
};

let port = 0;
const server = createServer({ ServerResponse: SvcServerResponse }, (req, res) => {
  const name = decodeURIComponent(req.url!.slice(1));
  if (name !== 'no id') (res as SvcServerResponse).requestId = 'the-id';
  (cases[name] ?? cases.object!)(res);
});

beforeAll(async () => {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));

/** One GET of a case by name from the server at `at`: status, headers, every header line as sent, body. */
function getFrom(at: number, name: string): Promise<{ status: number; headers: IncomingHttpHeaders; raw: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    request({ port: at, host: '127.0.0.1', path: `/${encodeURIComponent(name)}`, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, raw: res.rawHeaders, body }));
    })
      .on('error', reject)
      .end();
  });
}

const get = (name: string) => getFrom(port, name);

/** The values of header `name` (lower-case) in raw header lines, in order. */
const valuesOf = (raw: string[], name: string): string[] => raw.filter((_, i) => i % 2 === 1 && raw[i - 1]!.toLowerCase() === name);
const ids = (raw: string[]): string[] => valuesOf(raw, 'x-request-id');

describe('SvcServerResponse: X-Request-Id written with the headers', () => {
  it.each(['object', 'reason', 'array', 'none', 'implicit', 'progressive', 'appended', 'set with setHeaders', 'set, then removed'])('%s: the id once, the answer as written', async (name) => {
    const res = await get(name);
    expect(ids(res.raw)).toEqual(['the-id']);
    if (name === 'appended') expect(res.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    if (name === 'set with setHeaders') expect(res.headers.vary).toBe('origin');
    // The id first, then the answer's own headers, as when nothing was set before.
    if (name === 'set, then removed' || name === 'object') {
      expect(res.raw.filter((_, i) => i % 2 === 0).slice(0, 3).map((h) => h.toLowerCase())).toEqual(['x-request-id', 'content-type', 'etag']);
      expect(res.headers.vary).toBeUndefined();
    }
    if (name === 'reason') expect(res.status).toBe(201);
    if (name === 'implicit') expect(res.status).toBe(404);
    if (name === 'array') expect(res.headers['x-extra']).toBe('a, b');
    if (name === 'progressive') expect(res.headers['access-control-allow-origin']).toBe('*');
    if (name === 'object') expect(res.headers.etag).toBe('"a"');
  });

  it.each(['own id in an object', 'own id in an array', 'own id set before', 'own id appended before', 'own id set, then given'])('%s: the answering code\'s id wins, sent once', async (name) => {
    expect(ids((await get(name)).raw)).toEqual(['mine']);
  });

  it('an answer without a request id gets none', async () => {
    const res = await get('no id');
    expect(ids(res.raw)).toEqual([]);
    expect(res.headers.etag).toBe('"a"');
  });
});

// A new visitor's Set-Cookie (sendSessionCookie) rides in writeHead's object too, but must leave
// every answer as `setHeader('set-cookie', ...)` on arrival left it (what svc did before): the same
// status, body and header lines (each name's values in the same order), whatever the answering
// code does with the headers one by one. Only where the answer's own Set-Cookie replaces the held
// one may the line stand elsewhere among the other names (the order of different names means
// nothing in HTTP); every other case keeps the whole order too.
const COOKIE = 'sid=0123abcd; Path=/; Max-Age=60; HttpOnly; SameSite=Lax';
const cookieCases: Record<string, (res: ServerResponse) => void> = {
  ...cases,
  'own cookie in an object': (res) => res.writeHead(200, { 'content-type': 'text/plain', 'Set-Cookie': 'sid=; Max-Age=0' }).end('x'),
  'own cookies in an array': (res) => res.writeHead(200, ['set-cookie', 'a=1', 'SET-COOKIE', 'b=2']).end('x'),
  'own cookie set before': (res) => {
    res.setHeader('set-cookie', 'mine=1');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
  },
  'cookie appended before': (res) => {
    res.appendHeader('set-cookie', 'mine=1');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
  },
  'cookie removed': (res) => {
    res.removeHeader('Set-Cookie');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
  },
  'cookie read, then written': (res) => {
    const seen = JSON.stringify([res.hasHeader('set-cookie'), res.getHeader('set-cookie'), res.getHeaders()['set-cookie'] ?? null, res.getHeaderNames()]);
    res.writeHead(200, { 'content-type': 'application/json' }).end(seen);
  },
  'names read, then written': (res) => {
    const seen = JSON.stringify(res.getHeaderNames());
    res.writeHead(200, { 'content-type': 'application/json' }).end(seen);
  },
  'all read, then written': (res) => {
    const seen = JSON.stringify(res.getHeaders());
    res.writeHead(200, { 'content-type': 'application/json' }).end(seen);
  },
  'has, then written': (res) => {
    const seen = JSON.stringify([res.hasHeader('SET-COOKIE'), res.hasHeader('content-type')]);
    res.writeHead(200, { 'content-type': 'application/json' }).end(seen);
  },
  'raw names read': (res) => {
    const seen = JSON.stringify((res as unknown as { getRawHeaderNames(): string[] }).getRawHeaderNames());
    res.writeHead(200, { 'content-type': 'application/json' }).end(seen);
  },
  'no body, headers set one by one': (res) => {
    res.setHeader('etag', '"a"');
    res.statusCode = 304;
    res.end();
  },
  // A header set past the class's own methods (node's, called on the prototype): the held cookie is still sent.
  'set past the class': (res) => {
    NodeServerResponse.prototype.setHeader.call(res, 'vary', 'origin');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
  },
  'flushed': (res) => {
    res.flushHeaders();
    res.end('x');
  },
};

let before = 0;
let after = 0;
const servers = [
  // Before: the cookie set on arrival.
  createServer({ ServerResponse: SvcServerResponse }, (req, res) => {
    (res as SvcServerResponse).requestId = 'the-id';
    res.setHeader('set-cookie', COOKIE);
    cookieCases[decodeURIComponent(req.url!.slice(1))]!(res);
  }),
  // Now: held by the response until its headers are written or touched.
  createServer({ ServerResponse: SvcServerResponse }, (req, res) => {
    (res as SvcServerResponse).requestId = 'the-id';
    (res as SvcServerResponse).sendSessionCookie(COOKIE);
    cookieCases[decodeURIComponent(req.url!.slice(1))]!(res);
  }),
];

/** What two answers are compared by: status, body and the header lines but Date (another second). */
async function answerAt(at: number, name: string): Promise<{ status: number; raw: string[]; body: string }> {
  const { status, raw, body } = await getFrom(at, name);
  return { status, raw: raw.filter((_, i, all) => all[i - (i % 2)]!.toLowerCase() !== 'date'), body };
}

describe('SvcServerResponse: a new visitor\'s Set-Cookie written with the headers', () => {
  beforeAll(async () => {
    const ports = await Promise.all(servers.map((s) => new Promise<number>((done) => s.listen(0, '127.0.0.1', () => done((s.address() as AddressInfo).port)))));
    before = ports[0]!;
    after = ports[1]!;
  });
  afterAll(() => Promise.all(servers.map((s) => new Promise<void>((done) => s.close(() => done())))));

  /** Each header name (lower-cased) with its values in the order sent. */
  const byName = (raw: string[]): Record<string, string[]> => {
    const out: Record<string, string[]> = {};
    for (let i = 0; i < raw.length; i += 2) (out[raw[i]!.toLowerCase()] ??= []).push(raw[i + 1]!);
    return out;
  };
  const REPLACED = ['own cookie in an object', 'own cookies in an array', 'set past the class'];

  it.each(Object.keys(cookieCases))('%s: the same answer as the cookie set on arrival', async (name) => {
    const [was, now] = await Promise.all([answerAt(before, name), answerAt(after, name)]);
    expect({ ...now, raw: byName(now.raw) }).toEqual({ ...was, raw: byName(was.raw) });
    if (!REPLACED.includes(name)) expect(now.raw).toEqual(was.raw);
  });

  it('the cookie and the id come first, once, when the answer gives its headers in writeHead', async () => {
    const { raw } = await answerAt(after, 'object');
    expect(raw.slice(0, 8)).toEqual(['set-cookie', COOKIE, 'x-request-id', 'the-id', 'content-type', 'text/plain', 'etag', '"a"']);
    expect(raw.filter((_, i) => i % 2 === 0 && raw[i]!.toLowerCase() === 'set-cookie')).toHaveLength(1);
  });

  it('the answering code sees the held cookie, and its own cookies replace, follow or remove it', async () => {
    expect(JSON.parse((await getFrom(after, 'cookie read, then written')).body)).toEqual([true, COOKIE, COOKIE, ['set-cookie']]);
    expect(JSON.parse((await getFrom(after, 'has, then written')).body)).toEqual([true, false]);
    expect(JSON.parse((await getFrom(after, 'all read, then written')).body)).toEqual({ 'set-cookie': COOKIE });
    expect(JSON.parse((await getFrom(after, 'names read, then written')).body)).toEqual(['set-cookie']);
    const cookies = async (name: string) => valuesOf((await getFrom(after, name)).raw, 'set-cookie');
    expect(await cookies('own cookie in an object')).toEqual(['sid=; Max-Age=0']);
    expect(await cookies('own cookies in an array')).toEqual(['a=1', 'b=2']);
    expect(await cookies('own cookie set before')).toEqual(['mine=1']);
    expect(await cookies('cookie appended before')).toEqual([COOKIE, 'mine=1']);
    expect(await cookies('cookie removed')).toEqual([]);
    expect(await cookies('no body, headers set one by one')).toEqual([COOKIE]);
  });
});
