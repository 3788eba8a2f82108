import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyAddress, OutboundPolicy, outboundErrorCode, outboundFetch, parseIp } from '@svc/core';
import type { OutboundRequest } from '@svc/core';

// Issue 38 item 11: the outbound guard (event scripts' http/https/fetch, issue 43's webhooks).

describe('classifyAddress', () => {
  const refused: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:127.0.0.1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['2002:7f00:1::', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.100.100.200', 'shared (CGNAT)'],
    ['169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fd00:ec2::254', 'unique-local'],
    ['fc00::1', 'unique-local'],
    ['fec0::1', 'site-local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['198.18.0.1', 'benchmarking'],
    ['64:ff9b:1::1', 'NAT64 local-use'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['not an address', 'reserved'],
    ['fe80::1%eth0', 'reserved'],
  ];
  it.each(refused)('%s is %s', (address, kind) => {
    expect(classifyAddress(address)?.kind).toBe(kind);
  });

  it('metadata addresses are flagged in every form', () => {
    for (const a of ['169.254.169.254', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '64:ff9b::a9fe:a9fe', 'fd00:ec2::254', '100.100.100.200']) expect(classifyAddress(a)?.metadata, a).toBe(true);
    expect(classifyAddress('169.254.1.1')?.metadata).toBe(false);
  });

  it('public addresses, and IPv6 forms that carry a public IPv4 address, are public', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '172.32.0.1', '100.128.0.1']) expect(classifyAddress(a), a).toBeUndefined();
  });

  it('parses IPv6 forms to the same bytes', () => {
    expect(parseIp('::ffff:127.0.0.1')).toEqual(parseIp('::ffff:7f00:1'));
    expect(parseIp('1::')).toEqual(Uint8Array.from([0, 1, ...Array<number>(14).fill(0)]));
    expect(parseIp('1:2:3:4:5:6:7:8:9')).toBeUndefined();
    expect(parseIp('127.1')).toBeUndefined();
  });
});

describe('OutboundPolicy', () => {
  it('refuses special addresses by default and says how to allow them', () => {
    const policy = new OutboundPolicy();
    expect(policy.refusal('8.8.8.8', 'dns.google', 443)).toBeUndefined();
    expect(policy.refusal('127.0.0.1', 'localhost', 80)).toBe('127.0.0.1 is a loopback address; app.json outbound.allow may name it');
    expect(policy.refusal('::ffff:169.254.169.254', 'x', 80)).toContain('is a cloud metadata address');
  });

  it('allows what the entries name: addresses, ports, ranges, host names and patterns', () => {
    const policy = new OutboundPolicy(['10.0.0.5', '10.0.0.6:8080', '[fd00::1]:8443', '10.1.0.0/16', 'api.internal:8443', '*.corp.example', 'LOCALHOST']);
    expect(policy.refusal('10.0.0.5', '10.0.0.5', 1234)).toBeUndefined();
    expect(policy.refusal('::ffff:10.0.0.5', '10.0.0.5', 1234)).toBeUndefined();
    expect(policy.refusal('10.0.0.6', '10.0.0.6', 8080)).toBeUndefined();
    expect(policy.refusal('10.0.0.6', '10.0.0.6', 80)).toBeDefined();
    expect(policy.refusal('fd00::1', 'fd00::1', 8443)).toBeUndefined();
    expect(policy.refusal('fd00::1', 'fd00::1', 443)).toBeDefined();
    expect(policy.refusal('10.1.200.3', 'whatever.example', 80)).toBeUndefined();
    expect(policy.refusal('10.2.0.1', 'whatever.example', 80)).toBeDefined();
    expect(policy.refusal('10.9.9.9', 'api.internal', 8443)).toBeUndefined();
    expect(policy.refusal('10.9.9.9', 'api.internal', 443)).toBeDefined();
    expect(policy.refusal('192.168.0.4', 'build.corp.example', 80)).toBeUndefined();
    expect(policy.refusal('192.168.0.4', 'corp.example.evil', 80)).toBeDefined();
    expect(policy.refusal('127.0.0.1', 'localhost', 80)).toBeUndefined();
    // A host name entry says nothing of a request made to an IP address.
    expect(policy.refusal('127.0.0.1', '127.0.0.1', 80)).toBeDefined();
  });

  it('never lets a range or a pattern cover a metadata address; an exact entry does', () => {
    const broad = new OutboundPolicy(['169.254.0.0/16', '0.0.0.0/0', '::/0', '*.internal']);
    expect(broad.refusal('169.254.169.254', '169.254.169.254', 80)).toContain('cloud metadata');
    expect(broad.refusal('169.254.169.254', 'metadata.google.internal', 80)).toContain('cloud metadata');
    expect(broad.refusal('fd00:ec2::254', 'x', 80)).toContain('cloud metadata');
    expect(broad.refusal('169.254.1.1', '169.254.1.1', 80)).toBeUndefined();
    expect(new OutboundPolicy(['169.254.169.254']).refusal('169.254.169.254', '169.254.169.254', 80)).toBeUndefined();
  });

  it('a bad entry fails with its text', () => {
    for (const bad of ['', 'http://x', '10.0.0.0/33', 'a..b', 'x:99999', '[zz]:1', 42]) expect(() => new OutboundPolicy([bad]), String(bad)).toThrow(/outbound\.allow/);
  });
});

describe('outboundFetch', () => {
  let server: Server;
  let port = 0;
  const handlers = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  const hits: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url ?? '');
      const handler = handlers.get((req.url ?? '').split('?')[0] as string);
      if (handler) handler(req, res);
      else res.writeHead(404).end('none');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    handlers.set('/hello', (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain', 'x-seen': `${req.method} ${req.headers['authorization'] ?? '-'}` }).end(`hello ${body}`));
    });
    handlers.set('/to-private', (_req, res) => res.writeHead(302, { location: 'http://10.255.255.1/secret' }).end());
    handlers.set('/to-metadata', (_req, res) => res.writeHead(301, { location: 'http://[::ffff:a9fe:a9fe]/latest/meta-data/' }).end());
    handlers.set('/to-hello', (_req, res) => res.writeHead(303, { location: '/hello' }).end());
    handlers.set('/loop', (_req, res) => res.writeHead(302, { location: '/loop' }).end());
    handlers.set('/hang', () => undefined);
    handlers.set('/slow-body', (_req, res) => {
      res.writeHead(200);
      res.write('a');
    });
    handlers.set('/huge', (_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 120);
      let sent = 0;
      const pump = (): void => {
        while (sent < 64 && res.write(chunk)) sent++;
        if (sent < 64) res.once('drain', pump);
        else res.end();
      };
      pump();
    });
    handlers.set('/gzip-bomb', (_req, res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(8 * 1024 * 1024))));
    handlers.set('/gzip', (_req, res) => res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync('zipped')));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const allowLocal = new OutboundPolicy(['127.0.0.1']);
  const base = (over: Partial<OutboundRequest> & { url: string }): OutboundRequest => ({ policy: allowLocal, timeoutMs: 5000, maxBytes: 1024 * 1024, ...over });
  async function failure(request: OutboundRequest): Promise<{ code: string | undefined; message: string }> {
    try {
      await outboundFetch(request);
    } catch (err) {
      return { code: outboundErrorCode(err), message: (err as Error).message };
    }
    throw new Error('the request went through');
  }

  it('reaches an allowed address: method, headers, body and answer as sent', async () => {
    const res = await outboundFetch(base({ url: `http://127.0.0.1:${port}/hello`, method: 'POST', body: 'there', headers: { authorization: 'Bearer t' } }));
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('hello there');
    expect(res.headers).toContainEqual(['x-seen', 'POST Bearer t']);
    expect(res.redirected).toBe(false);
  });

  it('refuses loopback, private, unspecified and metadata addresses in every form by default, before connecting', async () => {
    const policy = new OutboundPolicy();
    const before = hits.length;
    for (const host of ['127.0.0.1', '[::1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '0.0.0.0', '[::]', '10.0.0.1', '169.254.169.254', '[::ffff:a9fe:a9fe]', '2130706433', '0x7f.1', '127.1', '[64:ff9b::7f00:1]', '[fd00:ec2::254]']) {
      const out = await failure(base({ url: `http://${host}:${port}/hello`, policy }));
      expect(out.code, host).toBe('ERR_OUTBOUND_REFUSED');
      expect(out.message, host).toMatch(/refused: .* is a (loopback|private|unspecified|link-local|unique-local|cloud metadata) address/);
    }
    expect(hits.length).toBe(before);
  });

  it('refuses a name that resolves to a refused address: localhost, and a custom resolver', async () => {
    const policy = new OutboundPolicy();
    expect((await failure(base({ url: `http://localhost:${port}/hello`, policy }))).message).toMatch(/localhost resolves to .*, and .* is a loopback address/);
    const lookup = async (): Promise<{ address: string; family: number }[]> => [{ address: '127.0.0.1', family: 4 }];
    const out = await failure(base({ url: `http://rebind.example:${port}/hello`, policy, lookup }));
    expect(out).toEqual({ code: 'ERR_OUTBOUND_REFUSED', message: `request to rebind.example:${port} refused: rebind.example resolves to 127.0.0.1, and 127.0.0.1 is a loopback address; app.json outbound.allow may name it` });
    // Any refused address among the answers refuses the name.
    const mixed = async (): Promise<{ address: string; family: number }[]> => [{ address: '93.184.215.14', family: 4 }, { address: '::1', family: 6 }];
    expect((await failure(base({ url: `http://mixed.example:${port}/`, policy, lookup: mixed }))).code).toBe('ERR_OUTBOUND_REFUSED');
  });

  it('connects to the address the check saw: a resolver answering differently the second time is never asked again', async () => {
    let asked = 0;
    const lookup = async (): Promise<{ address: string; family: number }[]> => (asked++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.0.0.1', family: 4 }]);
    const res = await outboundFetch(base({ url: `http://svc-test.internal:${port}/hello`, policy: new OutboundPolicy(['svc-test.internal']), lookup }));
    expect(res.status).toBe(200);
    expect(asked).toBe(1);
  });

  it('checks every redirect: from an allowed server to a private or metadata address is refused', async () => {
    expect(await failure(base({ url: `http://127.0.0.1:${port}/to-private` }))).toMatchObject({ code: 'ERR_OUTBOUND_REFUSED', message: expect.stringContaining('10.255.255.1 is a private address') });
    expect(await failure(base({ url: `http://127.0.0.1:${port}/to-metadata`, policy: new OutboundPolicy(['127.0.0.1', '169.254.0.0/16']) }))).toMatchObject({ code: 'ERR_OUTBOUND_REFUSED', message: expect.stringContaining('cloud metadata') });
    const followed = await outboundFetch(base({ url: `http://127.0.0.1:${port}/to-hello`, method: 'POST', body: 'x' }));
    expect(followed).toMatchObject({ status: 200, redirected: true, url: `http://127.0.0.1:${port}/hello` });
    expect(followed.headers).toContainEqual(['x-seen', 'GET -']);
    expect((await outboundFetch(base({ url: `http://127.0.0.1:${port}/to-private`, redirect: 'manual' }))).status).toBe(302);
    expect((await failure(base({ url: `http://127.0.0.1:${port}/loop` }))).code).toBe('ERR_OUTBOUND_REDIRECT');
  });

  it('bounds the time: a server that never answers, and one that never finishes its body', async () => {
    expect(await failure(base({ url: `http://127.0.0.1:${port}/hang`, timeoutMs: 300 }))).toMatchObject({ code: 'ETIMEDOUT' });
    expect(await failure(base({ url: `http://127.0.0.1:${port}/slow-body`, timeoutMs: 300 }))).toMatchObject({ code: 'ETIMEDOUT' });
  });

  it('bounds the size: a huge body, and a small gzip body that decodes to a huge one', async () => {
    expect(await failure(base({ url: `http://127.0.0.1:${port}/huge`, maxBytes: 100_000 }))).toMatchObject({ code: 'ERR_OUTBOUND_TOO_LARGE' });
    expect(await failure(base({ url: `http://127.0.0.1:${port}/gzip-bomb`, maxBytes: 100_000, decode: true }))).toMatchObject({ code: 'ERR_OUTBOUND_TOO_LARGE' });
    const zipped = await outboundFetch(base({ url: `http://127.0.0.1:${port}/gzip`, decode: true }));
    expect(zipped.body.toString()).toBe('zipped');
    expect(zipped.headers.some(([name]) => name.toLowerCase() === 'content-encoding')).toBe(false);
  });

  it('truncate: a huge body is cut at maxBytes (the rest not read) and answered with its status', async () => {
    const cut = await outboundFetch(base({ url: `http://127.0.0.1:${port}/huge`, maxBytes: 1000, truncate: true }));
    expect(cut).toMatchObject({ status: 200, truncated: true });
    expect(cut.body.length).toBe(1000);
    expect(cut.body.toString()).toBe('x'.repeat(1000));
    const whole = await outboundFetch(base({ url: `http://127.0.0.1:${port}/hello`, maxBytes: 1000, truncate: true, method: 'POST', body: 'b' }));
    expect(whole.body.toString()).toBe('hello b');
    expect(whole.truncated).toBeUndefined();
  });

  it('agents: connections are reused for one host and port, each checked when made, and no listener is left on them', async () => {
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const peers = new Set<number>();
      for (let i = 0; i < 15; i++) {
        const res = await outboundFetch(base({ url: `http://127.0.0.1:${port}/hello`, method: 'POST', body: String(i), agents: { http: agent } }));
        expect(res.body.toString()).toBe(`hello ${i}`);
        for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) peers.add(socket.localPort as number);
      }
      expect(peers.size).toBe(1);
      for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) expect(socket.listenerCount('connect')).toBe(0);
      // The same agent does not carry a request past the policy: a refused address is refused before connecting.
      expect((await failure(base({ url: `http://127.0.0.1:${port}/hello`, policy: new OutboundPolicy(), agents: { http: agent } }))).code).toBe('ERR_OUTBOUND_REFUSED');
    } finally {
      agent.destroy();
    }
  });

  it('refuses URLs that are not http(s), and reports network errors with their code', async () => {
    expect((await failure(base({ url: 'file:///etc/passwd' }))).code).toBe('ERR_OUTBOUND_URL');
    expect((await failure(base({ url: 'not a url' }))).code).toBe('ERR_OUTBOUND_URL');
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect((await failure(base({ url: `http://127.0.0.1:${closedPort}/` }))).code).toBe('ECONNREFUSED');
  });
});
