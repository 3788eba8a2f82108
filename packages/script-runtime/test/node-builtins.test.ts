import { createHash, createHmac, createPublicKey, generateKeyPairSync, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { ScriptRuntimeError, ScriptTimeoutError } from '@svc/script-runtime';
import type { ScriptModule } from '@svc/script-runtime';
import { setup } from './helpers.js';

// Issue 38 item 11: the Node built-ins scripts and modules get inside the sandbox. Generous time
// limits: these tests load the built-ins into isolates on a busy machine, and time nothing.
const SLOW = { isolates: 1, timeoutMs: 10_000 };

describe('pure built-ins', () => {
  test('buffer, url, querystring, util, events, string_decoder, path, assert, punycode and stream work as in Node', async () => {
    const { exec } = setup(SLOW);
    const out = await exec(`
      var Buffer = require('buffer').Buffer, url = require('node:url'), qs = require('querystring'), util = require('util');
      var EventEmitter = require('events'), StringDecoder = require('string_decoder').StringDecoder, path = require('path');
      var assert = require('assert'), punycode = require('punycode/'), stream = require('stream');
      var e = new EventEmitter(), seen = [];
      e.on('x', function (v) { seen.push(v); }); e.once('x', function (v) { seen.push('once ' + v); }); e.emit('x', 1); e.emit('x', 2);
      var parsed = url.parse('https://user:pw@example.com:8080/p/a?x=1&y=2#h', true);
      var decoder = new StringDecoder('utf8'); var euro = Buffer.from('€');
      var text = decoder.write(euro.subarray(0, 1)) + decoder.write(euro.subarray(1)) + decoder.end();
      var threw; try { assert.strictEqual(1, 2); } catch (err) { threw = err.name + ' ' + err.code; }
      var chunks = []; var r = new stream.Readable({ read: function () {} }); r.on('data', function (c) { chunks.push(String(c)); }); r.push('a'); r.push('b'); r.push(null);
      this.out = {
        b64: Buffer.from('hello').toString('base64'), hex: Buffer.from([1, 255]).toString('hex'), isBuffer: Buffer.isBuffer(Buffer.alloc(2)),
        host: parsed.host, query: parsed.query, resolved: url.resolve('http://a/b/c', '../d'), formatted: url.format({ protocol: 'http', host: 'x.org', pathname: '/p' }),
        qs: qs.stringify({ a: 1, b: 'x y' }), qsParsed: qs.parse('a=1&b=2&b=3'),
        format: util.format('%s=%d %j', 'a', 5, { k: 1 }), inspect: util.inspect({ a: [1, 2] }), inherits: typeof util.inherits,
        seen: seen, text: text, join: path.join('/a/b', '../c', 'd.txt'), ext: path.extname('x.tar.gz'), threw: threw,
        puny: punycode.toASCII('mañana.com'), sys: require('sys') === util, strict: typeof require('assert/strict'),
      };
      var self = this; require('timers').setImmediate(function () { self.out.chunks = chunks.join(''); });
      await null; await null;`);
    expect(out.thisObj.out).toEqual({
      b64: 'aGVsbG8=', hex: '01ff', isBuffer: true,
      host: 'example.com:8080', query: { x: '1', y: '2' }, resolved: 'http://a/d', formatted: 'http://x.org/p',
      qs: 'a=1&b=x%20y', qsParsed: { a: '1', b: ['2', '3'] },
      format: 'a=5 {"k":1}', inspect: '{ a: [ 1, 2 ] }', inherits: 'function',
      seen: [1, 'once 1', 2], text: '€', join: '/a/c/d.txt', ext: '.gz', threw: 'AssertionError ERR_ASSERTION',
      puny: 'xn--maana-pta.com', sys: true, strict: 'function', chunks: 'ab',
    });
  });

  test('web globals: Buffer, URL, URLSearchParams, TextEncoder, TextDecoder, atob, btoa', async () => {
    const { exec } = setup(SLOW);
    const out = await exec(`
      var u = new URL('/a/../b?x=1#f', 'https://Example.COM:443'); u.searchParams.append('y', 'z w'); u.hash = '';
      var p = new URLSearchParams('a=1&a=2&b=%C3%A9+x');
      this.out = {
        href: u.href, host: u.host, origin: u.origin, json: JSON.stringify({ u: u }),
        all: p.getAll('a'), b: p.get('b'), str: p.toString(), canParse: URL.canParse('nope'),
        bad: (function () { try { new URL('nope'); } catch (e) { return e.name + ' ' + e.code; } })(),
        enc: Array.from(new TextEncoder().encode('é')), dec: new TextDecoder().decode(new Uint8Array([0xe2, 0x82, 0xac])),
        atob: atob('aGk='), btoa: btoa('hi'), buf: Buffer.from('x').length, utilEnc: typeof require('util').TextEncoder,
        legacyAndWeb: typeof require('url').URL + ' ' + typeof require('url').parse,
      };`);
    expect(out.thisObj.out).toEqual({
      href: 'https://example.com/b?x=1&y=z+w', host: 'example.com', origin: 'https://example.com', json: '{"u":"https://example.com/b?x=1&y=z+w"}',
      all: ['1', '2'], b: 'é x', str: 'a=1&a=2&b=%C3%A9+x', canParse: false, bad: 'TypeError ERR_INVALID_URL',
      enc: [0xc3, 0xa9], dec: '€', atob: 'hi', btoa: 'aGk=', buf: 1, utilEnc: 'function', legacyAndWeb: 'function function',
    });
  });
});

describe('crypto through the script process', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const ed = generateKeyPairSync('ed25519');
  const pem = (k: { export(o: object): string | Buffer }, type: string): string => k.export({ format: 'pem', type }) as string;
  const keys = {
    rsaPrivate: pem(rsa.privateKey, 'pkcs8'), rsaPublic: pem(rsa.publicKey, 'spki'),
    ecPrivate: pem(ec.privateKey, 'sec1'), ecPublic: pem(ec.publicKey, 'spki'),
    edPrivate: pem(ed.privateKey, 'pkcs8'), edPublic: pem(ed.publicKey, 'spki'),
  };

  test('hashes, HMAC, random bytes and timingSafeEqual answer what Node answers', async () => {
    const { exec } = setup(SLOW);
    const out = await exec(`var c = require('crypto');
      this.sha256 = c.createHash('sha256').update('ab').update(Buffer.from('c')).digest('hex');
      this.md5 = c.createHash('md5').update('abc').digest('base64');
      this.hmac = c.createHmac('sha256', 'key').update('data').digest('hex');
      this.hmacKey = c.createHmac('sha512', c.createSecretKey(Buffer.from('key'))).update('data').digest('base64');
      var r1 = c.randomBytes(16), r2 = c.randomBytes(16); this.random = [r1.length, r1.equals(r2)];
      this.uuid = /^[0-9a-f-]{36}$/.test(c.randomUUID());
      this.tse = [c.timingSafeEqual(Buffer.from('ab'), Buffer.from('ab')), c.timingSafeEqual(Buffer.from('ab'), Buffer.from('ac'))];
      try { c.createHash('nope'); } catch (e) { this.bad = e.message; }
      try { c.createCipheriv('aes-256-gcm'); } catch (e) { this.cipher = e.message; }`);
    expect(out.thisObj).toMatchObject({
      sha256: createHash('sha256').update('abc').digest('hex'),
      md5: createHash('md5').update('abc').digest('base64'),
      hmac: createHmac('sha256', 'key').update('data').digest('hex'),
      hmacKey: createHmac('sha512', 'key').update('data').digest('base64'),
      random: [16, false],
      uuid: true,
      tse: [true, false],
      bad: 'Digest method not supported',
      cipher: expect.stringContaining('crypto.createCipheriv is not available in event scripts'),
    });
  });

  test('keys, signatures and verification: RSA, PSS, EC and Ed25519, checked by Node', async () => {
    const { exec } = setup(SLOW);
    const out = await exec(`var c = require('crypto'); var k = keys;
      var priv = c.createPrivateKey(k.rsaPrivate), pub = c.createPublicKey(k.rsaPrivate);
      this.types = [priv.type, pub.type, priv.asymmetricKeyType, priv.asymmetricKeyDetails.modulusLength, priv instanceof c.KeyObject];
      this.rsa = c.createSign('RSA-SHA256').update('msg').sign(priv, 'base64');
      this.rsaOk = c.createVerify('RSA-SHA256').update('msg').verify(k.rsaPublic, this.rsa, 'base64');
      this.rsaBad = c.createVerify('RSA-SHA256').update('other').verify(pub, this.rsa, 'base64');
      this.pss = c.createSign('sha256').update('msg').sign({ key: priv, padding: c.constants.RSA_PKCS1_PSS_PADDING, saltLength: c.constants.RSA_PSS_SALTLEN_DIGEST }, 'base64');
      this.ec = c.createSign('sha256').update('msg').sign(k.ecPrivate).toString('base64');
      this.ecCurve = c.createPublicKey(k.ecPublic).asymmetricKeyDetails.namedCurve;
      this.ed = c.sign(null, Buffer.from('msg'), k.edPrivate).toString('base64');
      this.edOk = c.verify(null, Buffer.from('msg'), k.edPublic, Buffer.from(this.ed, 'base64'));
      this.spki = pub.export({ format: 'pem', type: 'spki' });
      this.jwk = pub.export({ format: 'jwk' }).kty;
      try { c.createPrivateKey('not a key'); } catch (e) { this.notKey = typeof e.message; }`, { locals: { keys } });
    const o = out.thisObj;
    expect(o.types).toEqual(['private', 'public', 'rsa', 2048, true]);
    expect(nodeVerify('sha256', Buffer.from('msg'), keys.rsaPublic, Buffer.from(o.rsa as string, 'base64'))).toBe(true);
    expect([o.rsaOk, o.rsaBad, o.edOk]).toEqual([true, false, true]);
    expect(nodeVerify('sha256', Buffer.from('msg'), { key: keys.rsaPublic, padding: 6, saltLength: 32 }, Buffer.from(o.pss as string, 'base64'))).toBe(true);
    expect(nodeVerify('sha256', Buffer.from('msg'), keys.ecPublic, Buffer.from(o.ec as string, 'base64'))).toBe(true);
    expect(o.ecCurve).toBe('prime256v1');
    expect(o.ed).toBe(nodeSign(null, Buffer.from('msg'), keys.edPrivate).toString('base64'));
    expect(o.spki).toBe(createPublicKey(keys.rsaPrivate).export({ format: 'pem', type: 'spki' }));
    expect(o.jwk).toBe('RSA');
    expect(o.notKey).toBe('string');
  });

  test('what crosses to Node is bytes the built-in made: a lying typed array, a Proxy, a getter', async () => {
    const { exec } = setup(SLOW);
    const out = await exec(`var c = require('crypto');
      class Liar extends Uint8Array { get buffer() { return new ArrayBuffer(64); } get byteLength() { return 64; } }
      var liar = new Liar([97, 98, 99]);
      this.liar = c.createHash('sha256').update(liar).digest('hex');
      try { c.createHash('sha256').update(new Proxy(new Uint8Array(3), {})); } catch (e) { this.proxy = e.name; }
      var reads = 0; var getter = { get key() { reads++; return 'k'; } };
      try { c.createHmac('sha256', getter); } catch (e) { this.getter = e.name; }
      this.reads = reads;
      // An algorithm name whose toString calls crypto itself: converted before the call, no reentry.
      this.nested = c.createHash({ toString: function () { return c.createHash('md5').update('x').digest('hex') ? 'sha1' : 'md5'; } }).update('a').digest('hex');
      this.noHost = typeof globalThis.hostSync + typeof $0 === 'undefinedundefined';`);
    expect(out.thisObj).toEqual({ liar: createHash('sha256').update('abc').digest('hex'), proxy: 'TypeError', getter: 'TypeError', reads: 0, nested: createHash('sha1').update('a').digest('hex'), noHost: true });
  });

  test('crypto work counts against the time limit: hashing in a loop is stopped like any loop', async () => {
    const { exec } = setup({ isolates: 1, timeoutMs: 300 });
    const err = await exec(`var c = require('crypto'); var big = Buffer.alloc(4 * 1024 * 1024, 1);
      for (;;) { try { c.createHash('sha512').update(big).digest(); } catch (e) { /* keeps going */ } }`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScriptTimeoutError);
  });
});

describe('isolation between runs', () => {
  test('a run cannot change the built-ins another run gets, nor pollute prototypes through them', async () => {
    const { exec } = setup(SLOW);
    await exec(`var b = require('buffer'), events = require('events'), qs = require('querystring'), util = require('util');
      try { b.Buffer.prototype.toString = function () { return 'stolen'; }; } catch (e) {}
      try { Buffer.prototype.evil = 1; events.prototype.emit = function () { return 'hijacked'; }; } catch (e) {}
      try { qs.parse = function () { return { hijacked: true }; }; } catch (e) {}
      try { util.format = null; require('url').URL.prototype.toString = null; } catch (e) {}
      qs.parse('__proto__[isAdmin]=1&constructor[prototype][isAdmin]=1');
      require('url').parse('http://x/?__proto__[isAdmin]=1', true);
      var secret = Buffer.from('secret of run one'); secret.copy(Buffer.allocUnsafe(64));`);
    const out = await exec(`var e = new (require('events'))(); var fired = 0; e.on('x', function () { fired++; }); e.emit('x');
      this.out = [Buffer.from('ok').toString(), Buffer.prototype.evil, fired, JSON.stringify(require('querystring').parse('a=1')), typeof require('util').format,
        ({}).isAdmin, Buffer.allocUnsafe(64).includes('secret'), Object.isFrozen(require('events').prototype)];`);
    // (undefined crosses in a list as null)
    expect(out.thisObj.out).toEqual(['ok', null, 1, '{"a":"1"}', 'function', null, false, true]);
  });
});

describe('built-ins that are not offered', () => {
  const USES_NET: ScriptModule = {
    name: 'uses-net',
    // As forever-agent (in request, in sparkpost) does at load: keeps a function of a built-in.
    source: `var net = require('net'), fs = require('fs'); var keep = { create: net.createConnection, Socket: net.Socket };
      module.exports = { ok: function () { return 'loaded'; }, connect: function () { return net.connect(80); }, read: function () { return fs.readFileSync('/etc/passwd'); }, kept: function () { return new keep.Socket(); } };`,
  };

  test('a script requiring one fails by name; a module naming one loads and fails by name when it uses it', async () => {
    const { exec } = setup({ ...SLOW, modules: [USES_NET] });
    for (const name of ['fs', 'node:net', 'child_process', 'worker_threads', 'vm', 'dgram', 'node:tls']) {
      const err = await exec(`require('${name}');`).catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(ScriptRuntimeError);
      expect((err as Error).message, name).toBe(`module '${name}' is a Node built-in and cannot be used in event scripts`);
    }
    expect((await exec(`this.v = require('uses-net').ok();`)).thisObj).toEqual({ v: 'loaded' });
    const connect = await exec(`require('uses-net').connect();`).catch((e: unknown) => e);
    expect((connect as Error).message).toBe(`module 'net' is a Node built-in that event scripts cannot use (net.connect)`);
    const read = await exec(`require('uses-net').read();`).catch((e: unknown) => e);
    expect((read as Error).message).toBe(`module 'fs' is a Node built-in that event scripts cannot use (fs.readFileSync)`);
    const kept = await exec(`require('uses-net').kept();`).catch((e: unknown) => e);
    expect((kept as Error).message).toBe(`module 'net' is a Node built-in that event scripts cannot use (net.Socket)`);
  });
});
