import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ProxyTrust, parseAddress } from '../src/http/ProxyTrust.js';
import type { TrustProxySetting } from '../src/http/ProxyTrust.js';
import { developmentRootRefusal } from '../src/rootKeys.js';

// Issue 23 (1): the client of a request behind reverse proxies, and hostile forwarding headers.

interface FakeRequest {
  peer: string;
  headers?: Record<string, string>;
  version?: string;
  localPort?: number;
}

function request({ peer, headers = {}, version = '1.1', localPort = 2403 }: FakeRequest): IncomingMessage {
  const [major, minor] = version.split('.').map(Number);
  return { socket: { remoteAddress: peer, localPort }, headers, httpVersionMajor: major, httpVersionMinor: minor } as unknown as IncomingMessage;
}

const clientOf = (setting: TrustProxySetting | undefined, r: FakeRequest) => new ProxyTrust(setting).clientOf(request(r));

describe('ProxyTrust: the client address', () => {
  const many = Array.from({ length: 2000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.1`).join(', ');
  it.each<[string, TrustProxySetting | undefined, FakeRequest, string]>([
    ['no trust: the peer, whatever the headers say', undefined, { peer: '127.0.0.1', headers: { 'x-forwarded-for': '6.6.6.6' } }, '127.0.0.1'],
    ['IPv4-mapped peer written as IPv4', undefined, { peer: '::ffff:127.0.0.1' }, '127.0.0.1'],
    ['spoofed X-Forwarded-For from an untrusted peer is ignored', ['127.0.0.1'], { peer: '127.0.0.2', headers: { 'x-forwarded-for': '6.6.6.6' } }, '127.0.0.2'],
    ['trusted peer: the last entry', ['127.0.0.1'], { peer: '127.0.0.1', headers: { 'x-forwarded-for': '6.6.6.6, 203.0.113.9' } }, '203.0.113.9'],
    ['trusted peer without a header: the peer', ['127.0.0.1'], { peer: '127.0.0.1' }, '127.0.0.1'],
    ['a chain of trusted proxies (CIDR)', ['10.0.0.0/8', 'loopback'], { peer: '127.0.0.1', headers: { 'x-forwarded-for': '6.6.6.6, 203.0.113.9, 10.1.2.3' } }, '203.0.113.9'],
    ['hop count 1: the last entry', 1, { peer: '192.0.2.1', headers: { 'x-forwarded-for': '6.6.6.6, 203.0.113.9' } }, '203.0.113.9'],
    ['hop count 2: the one before', 2, { peer: '192.0.2.1', headers: { 'x-forwarded-for': '6.6.6.6, 203.0.113.9' } }, '6.6.6.6'],
    ['hop count larger than the list: its first entry', 5, { peer: '192.0.2.1', headers: { 'x-forwarded-for': '203.0.113.9' } }, '203.0.113.9'],
    ['hop count 0 trusts nobody', 0, { peer: '192.0.2.1', headers: { 'x-forwarded-for': '203.0.113.9' } }, '192.0.2.1'],
    ['2,000 entries: only the trusted end is read', ['127.0.0.1'], { peer: '127.0.0.1', headers: { 'x-forwarded-for': `${many}, 198.51.100.7` } }, '198.51.100.7'],
    ['garbage entry from the client end: the walk stops before it', ['127.0.0.1'], { peer: '127.0.0.1', headers: { 'x-forwarded-for': "'; DROP TABLE, 198.51.100.7" } }, '198.51.100.7'],
    ['garbage as the nearest entry: the trusted peer', ['127.0.0.1'], { peer: '127.0.0.1', headers: { 'x-forwarded-for': '198.51.100.7, not-an-ip' } }, '127.0.0.1'],
    ['empty entries', 2, { peer: '127.0.0.1', headers: { 'x-forwarded-for': ',,' } }, '127.0.0.1'],
    ['IPv6 entry with brackets and port', ['::1'], { peer: '::1', headers: { 'x-forwarded-for': '[2001:DB8::7]:4711' } }, '2001:db8::7'],
    ['IPv4 entry with a port', ['::1'], { peer: '::1', headers: { 'x-forwarded-for': '203.0.113.9:4711' } }, '203.0.113.9'],
    ['IPv6 trusted block', ['2001:db8:1::/48'], { peer: '2001:db8:1::5', headers: { 'x-forwarded-for': '2001:db8:2::9' } }, '2001:db8:2::9'],
    ['Forwarded: for= of the nearest element', ['127.0.0.1'], { peer: '127.0.0.1', headers: { forwarded: 'for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https' } }, '2001:db8:cafe::17'],
    ['Forwarded: for=unknown ends the walk', ['127.0.0.1'], { peer: '127.0.0.1', headers: { forwarded: 'for=unknown' } }, '127.0.0.1'],
    ['both headers naming different clients: the peer', ['127.0.0.1'], { peer: '127.0.0.1', headers: { forwarded: 'for=6.6.6.6', 'x-forwarded-for': '203.0.113.9' } }, '127.0.0.1'],
    ['both headers naming the same client', ['127.0.0.1'], { peer: '127.0.0.1', headers: { forwarded: 'for=203.0.113.9', 'x-forwarded-for': '203.0.113.9' } }, '203.0.113.9'],
  ])('%s', (_name, setting, r, expected) => {
    expect(clientOf(setting, r).address).toBe(expected);
    // The access line's shortcut says the same, asked first or after clientOf.
    expect(new ProxyTrust(setting).addressOf(request(r))).toBe(expected);
    const trust = new ProxyTrust(setting);
    const req = request(r);
    expect([trust.clientOf(req).address, trust.addressOf(req)]).toEqual([expected, expected]);
  });

  it('X-Forwarded-Proto counts from a trusted peer only', () => {
    expect(clientOf(['127.0.0.1'], { peer: '127.0.0.1', headers: { 'x-forwarded-proto': 'https' } }).secure).toBe(true);
    expect(clientOf(['127.0.0.1'], { peer: '127.0.0.1', headers: { 'x-forwarded-proto': 'HTTPS, http' } }).secure).toBe(true);
    expect(clientOf(['127.0.0.1'], { peer: '127.0.0.1', headers: { forwarded: 'for=1.2.3.4;proto=https' } }).secure).toBe(true);
    expect(clientOf(['127.0.0.1'], { peer: '127.0.0.2', headers: { 'x-forwarded-proto': 'https' } }).secure).toBe(false);
    expect(clientOf(undefined, { peer: '127.0.0.1', headers: { 'x-forwarded-proto': 'https' } }).secure).toBe(false);
  });

  it('a request is proxied when its peer is trusted or it carries any forwarding header', () => {
    expect(clientOf(undefined, { peer: '127.0.0.1' }).proxied).toBeUndefined();
    for (const name of ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'forwarded', 'via', 'x-real-ip', 'true-client-ip']) {
      expect(clientOf(undefined, { peer: '127.0.0.1', headers: { [name]: 'x' } }).proxied).toContain(name);
    }
    expect(clientOf(['loopback'], { peer: '127.0.0.1' }).proxied).toContain('trusted proxy');
    expect(clientOf(1, { peer: '127.0.0.1' }).proxied).toContain('trusted proxy');
  });

  it('computes a request client once', () => {
    const trust = new ProxyTrust(['127.0.0.1']);
    const req = request({ peer: '127.0.0.1', headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(trust.clientOf(req)).toBe(trust.clientOf(req));
  });

  it('refuses settings that are no addresses', () => {
    for (const bad of [['10.0.0.0/33'], ['nginx'], ['10.0.0.0/'], ['::1/129'], [''], -1, 1.5]) {
      expect(() => new ProxyTrust(bad as TrustProxySetting), JSON.stringify(bad)).toThrow(/trustProxy/);
    }
    expect(new ProxyTrust(['10.0.0.0/8', '::1', '::ffff:127.0.0.1', 'loopback']).listsPeer('10.9.9.9')).toBe(true);
    expect(new ProxyTrust(2).listsPeer('10.9.9.9')).toBe(false);
  });

  it('parses hop addresses as proxies write them', () => {
    expect(parseAddress(' "[::1]:80" ')).toBe('::1');
    expect(parseAddress('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(parseAddress('_hidden')).toBeUndefined();
    expect(parseAddress('[::1')).toBeUndefined();
    expect(parseAddress('1.2.3.4.5')).toBeUndefined();
  });
});

describe('development root: what shows a proxy', () => {
  const refusal = (r: FakeRequest, setting?: TrustProxySetting) => developmentRootRefusal(request(r), new ProxyTrust(setting).clientOf(request(r)))?.kind;
  const local = { 'svc-ssh-key': 'x', host: '127.0.0.1:2403' };
  it.each<[string, FakeRequest, TrustProxySetting | undefined, string | undefined]>([
    ['curl / a browser on this machine', { peer: '127.0.0.1', headers: local }, undefined, undefined],
    ['keep-alive (fetch, node)', { peer: '127.0.0.1', headers: { ...local, connection: 'keep-alive' } }, undefined, undefined],
    ['a WebSocket upgrade', { peer: '127.0.0.1', headers: { ...local, connection: 'Upgrade', upgrade: 'websocket' } }, undefined, undefined],
    ['localhost:2403', { peer: '::1', headers: { ...local, host: 'localhost:2403' } }, undefined, undefined],
    ["nginx's default (HTTP/1.0, Connection: close)", { peer: '127.0.0.1', version: '1.0', headers: { ...local, connection: 'close' } }, undefined, 'http10'],
    // Issue 38 (6): a client's own Connection: close is no sign of a proxy; nginx with only
    // proxy_http_version 1.1 sends the same and stays the documented blind spot.
    ["Python's urllib, node with agent: false (Connection: close)", { peer: '127.0.0.1', headers: { ...local, connection: 'close' } }, undefined, undefined],
    ['a Via header', { peer: '127.0.0.1', headers: { ...local, via: '1.1 gateway' } }, undefined, 'proxy'],
    ["nginx's WebSocket settings on a plain request", { peer: '127.0.0.1', headers: { ...local, connection: 'upgrade' } }, undefined, 'connection'],
    ['nginx with Host $host (no port)', { peer: '127.0.0.1', headers: { ...local, host: '127.0.0.1' } }, undefined, 'port'],
    ['a forwarded port', { peer: '127.0.0.1', headers: { ...local, host: 'localhost:8080' } }, undefined, 'port'],
    ['any forwarding header', { peer: '127.0.0.1', headers: { ...local, 'x-forwarded-host': 'example.com' } }, undefined, 'proxy'],
    ['a trusted proxy without headers', { peer: '127.0.0.1', headers: local }, ['127.0.0.1'], 'proxy'],
  ])('%s', (_name, r, setting, expected) => {
    expect(refusal(r, setting)).toBe(expected);
  });
});
