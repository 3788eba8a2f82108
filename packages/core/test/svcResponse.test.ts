import { createServer, request } from 'node:http';
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

function get(name: string): Promise<{ status: number; headers: IncomingHttpHeaders; raw: string[] }> {
  return new Promise((resolve, reject) => {
    request({ port, host: '127.0.0.1', path: `/${encodeURIComponent(name)}`, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, raw: res.rawHeaders }));
    })
      .on('error', reject)
      .end();
  });
}

const ids = (raw: string[]): string[] => raw.filter((_, i) => i % 2 === 1 && raw[i - 1]!.toLowerCase() === 'x-request-id');

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
