import { constants, createHash, createHmac, createPrivateKey, createPublicKey, getCurves, getHashes, randomBytes, randomInt, randomUUID, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { nodeCrypto } from './isolate-node-crypto.js';
import { nodeHttp } from './isolate-node-http.js';
import { nodeWeb } from './isolate-node-web.js';
import { builtinSource } from './node-builtins-bundle.js';

/**
 * The script process's side of the isolate's built-ins (isolate-node.ts): the synchronous calls
 * the isolate makes while a run executes (module sources, crypto, URL parsing). Every argument
 * is checked here as untrusted: only strings, numbers and typed arrays are taken (isolated-vm
 * copies them; a Proxy or a getter never crosses), sizes are bounded, and results cross as
 * copies (ArrayBuffers) or strings, so nothing in the isolate aliases this process's memory.
 *
 * The time of these calls is the run's: it is inside the call into the isolate, which the worker
 * charges to the run's request; isolated-vm's own timeout does not count it, so the worker checks
 * it here: past the call's time limit every call fails and the call is ended as a timeout.
 */
export interface HostClock {
  /** When the current call into the isolate started (performance.now()), and its limit, ms. */
  startedAt: number;
  limitMs: number;
  /** Set when a call found the limit spent: the worker ends the isolate as timed out. */
  overrun: boolean;
}

/** Sources of svc's own built-ins: module factories (module, exports, require, globals, sandbox). */
const OWN: Record<string, string> = {
  crypto: `(${nodeCrypto.toString()})`,
  http: `(${nodeHttp.toString()})`,
  https: `(function (m, e, r, g, s) { return (${nodeHttp.toString()})(m, e, r, g, s, 'https:'); })`,
  'svc:web': `(${nodeWeb.toString()})`,
  // The npm packages, with what they lack.
  url: `(function (module, exports, require) { var legacy = require('npm:url'), web = require('svc:web'); module.exports = Object.assign({}, legacy, { URL: web.URL, URLSearchParams: web.URLSearchParams, domainToASCII: function (d) { try { return new web.URL('http://' + d).hostname; } catch (e) { return ''; } } }); })`,
  util: `(function (module, exports, require) { var util = require('npm:util'), web = require('svc:web'); module.exports = Object.assign({}, util, { TextEncoder: web.TextEncoder, TextDecoder: web.TextDecoder }); })`,
};

/** Largest data one call takes: beyond it a script is burning the budget, not hashing a request. */
const MAX_BYTES = 64 * 1024 * 1024;
/** Largest RSA/DSA key: a signature with a 16384-bit key takes seconds of this process's time. */
const MAX_KEY_BITS = 8192;
const KEY_CACHE = 64;

const DIGESTS = new Set(getHashes().map((h) => h.toLowerCase()));

function str(value: unknown, what: string, max = 1024): string {
  if (typeof value !== 'string' || value.length > max) throw new TypeError(`${what} must be a string`);
  return value;
}
function data(value: unknown, what: string): Buffer {
  if (!(value instanceof Uint8Array) || value.byteLength > MAX_BYTES) throw new TypeError(`${what} must be bytes (at most ${MAX_BYTES})`);
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}
/** A copy of the bytes for the isolate (isolated-vm copies an ArrayBuffer it returns). */
const copyOut = (buf: Buffer): ArrayBuffer => buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
function digest(alg: unknown): string {
  const name = str(alg, 'the algorithm', 64);
  if (!DIGESTS.has(name.toLowerCase())) throw Object.assign(new Error('Digest method not supported'), { code: 'ERR_CRYPTO_INVALID_DIGEST' });
  return name;
}

/** Imported keys by their material: a script signing with one key over and over parses it once. */
const keys = new Map<string, KeyObject>();

function importKey(kind: 'public' | 'private', specValue: unknown): KeyObject {
  if (specValue === null || typeof specValue !== 'object') throw new TypeError('a key must be a string, bytes, a KeyObject or { key, format, type, passphrase }');
  const spec = specValue as Record<string, unknown>;
  const raw = spec.key;
  const material = typeof raw === 'string' ? str(raw, 'the key', 1024 * 1024) : data(raw, 'the key');
  const input: Record<string, unknown> = { key: material };
  if (spec.keyType === 'private' || spec.keyType === 'public') Object.assign(input, { format: 'der', type: spec.keyType === 'private' ? 'pkcs8' : 'spki' });
  else if (spec.format === 'jwk') input.key = JSON.parse(material as string) as unknown;
  else if (typeof spec.format === 'string') input.format = str(spec.format, 'format', 8);
  if (typeof spec.type === 'string' && spec.keyType === undefined) input.type = str(spec.type, 'type', 8);
  if (spec.format === 'jwk') input.format = 'jwk';
  if (typeof spec.encoding === 'string' && typeof raw === 'string') input.encoding = str(spec.encoding, 'encoding', 16);
  if (spec.passphrase !== undefined) input.passphrase = typeof spec.passphrase === 'string' ? str(spec.passphrase, 'passphrase', 1024) : data(spec.passphrase, 'passphrase');
  const cacheKey = `${kind}\n${spec.keyType === undefined ? JSON.stringify([spec.format, spec.type, spec.encoding, spec.passphrase === undefined ? '' : 'p']) : String(spec.keyType)}\n${typeof material === 'string' ? material : material.toString('base64')}`;
  const cached = spec.passphrase === undefined ? keys.get(cacheKey) : undefined;
  if (cached) return cached;
  // A public key asked of a private key's DER is the private key's public half.
  const key = kind === 'private' || spec.keyType === 'private' ? createPrivateKey(input as unknown as Parameters<typeof createPrivateKey>[0]) : createPublicKey(input as unknown as Parameters<typeof createPublicKey>[0]);
  const out = kind === 'public' && key.type === 'private' ? createPublicKey(key) : key;
  const bits = out.asymmetricKeyDetails?.modulusLength;
  if (bits !== undefined && bits > MAX_KEY_BITS) throw new Error(`keys over ${MAX_KEY_BITS} bits are not used in event scripts`);
  if (spec.passphrase === undefined) {
    if (keys.size >= KEY_CACHE) keys.delete(keys.keys().next().value as string);
    keys.set(cacheKey, out);
  }
  return out;
}

function keyInfo(key: KeyObject): Record<string, unknown> {
  const details = key.asymmetricKeyDetails ?? {};
  const plain: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(details)) plain[k] = typeof v === 'bigint' ? Number(v) : v;
  const der = key.export({ format: 'der', type: key.type === 'private' ? 'pkcs8' : 'spki' });
  return { type: key.type, asymmetricKeyType: key.asymmetricKeyType, asymmetricKeyDetails: plain, der: copyOut(der) };
}

/** Sign and verify options from a key spec (padding, saltLength, dsaEncoding). */
function signKey(kind: 'public' | 'private', spec: unknown): Parameters<typeof sign>[2] {
  const key = importKey(kind, spec);
  const s = spec as Record<string, unknown>;
  const out: Record<string, unknown> = { key };
  if (typeof s.padding === 'number') out.padding = s.padding;
  if (typeof s.saltLength === 'number') out.saltLength = s.saltLength;
  if (s.dsaEncoding === 'der' || s.dsaEncoding === 'ieee-p1363') out.dsaEncoding = s.dsaEncoding;
  return out as unknown as Parameters<typeof sign>[2];
}

type Parts = { href: string; origin: string; protocol: string; username: string; password: string; host: string; hostname: string; port: string; pathname: string; search: string; hash: string };
const partsOf = (url: URL): Parts => ({ href: url.href, origin: url.origin, protocol: url.protocol, username: url.username, password: url.password, host: url.host, hostname: url.hostname, port: url.port, pathname: url.pathname, search: url.search, hash: url.hash });
const URL_KEYS = new Set(['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash']);

const OPS: Record<string, (...args: unknown[]) => unknown> = {
  builtin: (name) => {
    const id = str(name, 'the module name', 64);
    const own = Object.hasOwn(OWN, id) ? OWN[id] : undefined;
    const source = own ?? `(function (module, exports, require, __svcGlobals) {${builtinSource(id)}\n})`;
    return `${source}\n//# sourceURL=node:${id}`;
  },
  hashCheck: (alg) => void digest(alg),
  hmacCheck: (alg) => void digest(alg),
  hash: (alg, input) => copyOut(createHash(digest(alg)).update(data(input, 'data')).digest()),
  hmac: (alg, key, input) => copyOut(createHmac(digest(alg), data(key, 'the key')).update(data(input, 'data')).digest()),
  random: (n) => {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 16 * 1024 * 1024) throw new RangeError('randomBytes: size out of range');
    return copyOut(randomBytes(n));
  },
  randomInt: (lo, hi) => randomInt(lo as number, hi as number),
  uuid: () => randomUUID(),
  keyImport: (kind, spec) => keyInfo(importKey(kind === 'private' ? 'private' : 'public', spec)),
  keyExport: (type, der, format, kind) => {
    const key = importKey(type === 'private' ? 'private' : 'public', { key: der, keyType: type });
    const fmt = str(format, 'format', 8);
    if (fmt === 'jwk') return key.export({ format: 'jwk' });
    const exported = key.export({ format: fmt as 'pem', type: (kind === null ? (key.type === 'private' ? 'pkcs8' : 'spki') : str(kind, 'type', 8)) as 'pkcs8' });
    return typeof exported === 'string' ? exported : copyOut(exported);
  },
  sign: (alg, input, spec) => copyOut(sign(alg === null ? null : digest(alg), data(input, 'data'), signKey('private', spec))),
  verify: (alg, input, spec, signature) => verify(alg === null ? null : digest(alg), data(input, 'data'), signKey('public', spec) as Parameters<typeof verify>[2], data(signature, 'the signature')),
  constants: () => ({ ...constants }),
  hashes: () => getHashes(),
  curves: () => getCurves(),
  url: (input, base) => {
    const text = str(input, 'the URL', 64 * 1024);
    const parsed = base === null ? URL.parse(text) : URL.parse(text, str(base, 'the base URL', 64 * 1024));
    return parsed === null ? null : partsOf(parsed);
  },
  urlSet: (href, key, value) => {
    const url = new URL(str(href, 'the URL', 64 * 1024));
    const name = str(key, 'the part', 16);
    if (!URL_KEYS.has(name)) throw new TypeError(`URL has no part ${name}`);
    (url as unknown as Record<string, string>)[name] = str(value, 'the value', 64 * 1024);
    return partsOf(url);
  },
};

/** Loading a built-in is not the run's doing: its time does not count against the call's limit. */
const UNTIMED = new Set(['builtin']);

/** The synchronous host function the isolate gets (as an ivm.Callback). */
export function makeHostSync(clock: HostClock): (op: unknown, ...args: unknown[]) => unknown {
  return (op, ...args) => {
    const name = typeof op === 'string' && Object.hasOwn(OPS, op) ? op : undefined;
    if (name === undefined) throw new TypeError('unknown host operation');
    if (!UNTIMED.has(name) && (clock.overrun || performance.now() - clock.startedAt > clock.limitMs)) {
      clock.overrun = true;
      throw new Error(`the script ran longer than its time limit of ${clock.limitMs} ms`);
    }
    if (!UNTIMED.has(name)) return (OPS[name] as (...a: unknown[]) => unknown)(...args);
    const started = performance.now();
    try {
      return (OPS[name] as (...a: unknown[]) => unknown)(...args);
    } finally {
      clock.startedAt += performance.now() - started;
    }
  };
}
