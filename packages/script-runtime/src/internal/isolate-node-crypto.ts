import type { SandboxInternals } from './isolate-node-web.js';

/**
 * `crypto` INSIDE the isolate: hashes, HMAC, random bytes, keys, signatures and their
 * verification, done by Node in the script process (node-host.ts) through one synchronous call
 * each (data collected here until digest()/sign()/verify()), so their CPU time is the run's.
 * What crosses is bytes and strings this module makes itself: a script's Proxy or getter never
 * reaches Node. Keys stay here as their DER (or secret bytes); Node imports them per use (cached).
 * Serialised with Function.prototype.toString: nothing from outside its body.
 */
export function nodeCrypto(module: { exports: unknown }, _exports: unknown, require: (name: string) => unknown, _globals: unknown, sandbox: SandboxInternals): void {
  const { Buffer } = require('buffer') as { Buffer: typeof globalThis.Buffer };
  const call = sandbox.deps.hostSync;
  const TypedArray = Object.getPrototypeOf(Uint8Array) as { prototype: object };
  const getter = (proto: object, key: string): ((this: unknown) => unknown) => (Object.getOwnPropertyDescriptor(proto, key) as PropertyDescriptor).get as (this: unknown) => unknown;
  const taBuffer = getter(TypedArray.prototype, 'buffer');
  const taOffset = getter(TypedArray.prototype, 'byteOffset');
  const taLength = getter(TypedArray.prototype, 'byteLength');
  const dvBuffer = getter(DataView.prototype, 'buffer');
  const dvOffset = getter(DataView.prototype, 'byteOffset');
  const dvLength = getter(DataView.prototype, 'byteLength');
  const apply = Reflect.apply;

  /** A fresh copy of data as bytes, read through the intrinsic getters (a subclass cannot lie). */
  function bytes(data: unknown, encoding?: unknown, what = 'data'): Uint8Array {
    if (typeof data === 'string') return new Uint8Array(Buffer.from(data, (typeof encoding === 'string' ? encoding : 'utf8') as BufferEncoding));
    if (data instanceof ArrayBuffer) return new Uint8Array(data.slice(0));
    if (ArrayBuffer.isView(data)) {
      const view = data instanceof DataView;
      const buffer = apply(view ? dvBuffer : taBuffer, data, []) as ArrayBuffer;
      const offset = apply(view ? dvOffset : taOffset, data, []) as number;
      const length = apply(view ? dvLength : taLength, data, []) as number;
      return new Uint8Array(buffer.slice(offset, offset + length));
    }
    if (data instanceof KeyObject) return new Uint8Array(data.export() as Uint8Array);
    throw Object.assign(new TypeError(`The "${what}" argument must be of type string or an instance of Buffer, TypedArray, or DataView`), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  const joined = (chunks: Uint8Array[]): Uint8Array => (chunks.length === 1 ? (chunks[0] as Uint8Array) : new Uint8Array(Buffer.concat(chunks)));
  const out = (result: unknown, encoding?: unknown): unknown => {
    const buf = Buffer.from(result as ArrayBuffer);
    return typeof encoding === 'string' && encoding !== 'buffer' ? buf.toString(encoding as BufferEncoding) : buf;
  };

  class Hash {
    #alg: string;
    #chunks: Uint8Array[] = [];
    #done = false;
    #key: Uint8Array | undefined;
    constructor(algorithm: unknown, key?: Uint8Array) {
      this.#alg = String(algorithm);
      this.#key = key;
      // Unknown algorithms fail here, as Node's do.
      call(key === undefined ? 'hashCheck' : 'hmacCheck', this.#alg);
    }
    update(data: unknown, encoding?: unknown): this {
      if (this.#done) throw Object.assign(new Error('Digest already called'), { code: 'ERR_CRYPTO_HASH_FINALIZED' });
      this.#chunks.push(bytes(data, encoding));
      return this;
    }
    digest(encoding?: unknown): unknown {
      if (this.#done) throw Object.assign(new Error('Digest already called'), { code: 'ERR_CRYPTO_HASH_FINALIZED' });
      this.#done = true;
      const data = joined(this.#chunks);
      this.#chunks = [];
      return out(this.#key === undefined ? call('hash', this.#alg, data) : call('hmac', this.#alg, this.#key, data), encoding);
    }
    copy(): Hash {
      const copy = new Hash(this.#alg, this.#key);
      for (const chunk of this.#chunks) copy.update(chunk);
      return copy;
    }
  }
  class Hmac extends Hash {}

  type KeyInfo = { type: 'secret' | 'public' | 'private'; asymmetricKeyType?: string; asymmetricKeyDetails?: Record<string, unknown>; symmetricKeySize?: number; der: ArrayBuffer };
  const INFO = new WeakMap<object, KeyInfo>();
  /** A key: its material stays in this isolate (DER, or the secret bytes). */
  class KeyObject {
    constructor() {
      throw new TypeError('KeyObject cannot be constructed: use createSecretKey, createPublicKey or createPrivateKey');
    }
    static _make(info: KeyInfo): KeyObject {
      const key = Object.create(KeyObject.prototype) as KeyObject;
      INFO.set(key, info);
      return key;
    }
    static _info(key: unknown): KeyInfo | undefined {
      return key !== null && typeof key === 'object' ? INFO.get(key) : undefined;
    }
    get type(): string {
      return (INFO.get(this) as KeyInfo).type;
    }
    get asymmetricKeyType(): string | undefined {
      return INFO.get(this)?.asymmetricKeyType;
    }
    get asymmetricKeyDetails(): Record<string, unknown> | undefined {
      const details = INFO.get(this)?.asymmetricKeyDetails;
      return details === undefined ? undefined : { ...details };
    }
    get symmetricKeySize(): number | undefined {
      return INFO.get(this)?.symmetricKeySize;
    }
    export(options?: { format?: unknown; type?: unknown; cipher?: unknown; passphrase?: unknown }): unknown {
      const info = INFO.get(this) as KeyInfo;
      if (info.type === 'secret') {
        if (options?.format === 'jwk') return { kty: 'oct', k: Buffer.from(info.der).toString('base64').replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_') };
        return Buffer.from(info.der.slice(0));
      }
      if (options?.cipher !== undefined) throw new Error('KeyObject.export: encrypting a key is not available in event scripts');
      const result = call('keyExport', info.type, new Uint8Array(info.der), String(options?.format ?? 'pem'), options?.type === undefined ? null : String(options.type));
      return typeof result === 'string' ? result : result instanceof ArrayBuffer ? Buffer.from(result) : result;
    }
    equals(other: unknown): boolean {
      const a = INFO.get(this) as KeyInfo;
      const b = KeyObject._info(other);
      return b !== undefined && a.type === b.type && Buffer.from(a.der).equals(Buffer.from(b.der));
    }
  }

  /** What Node needs to read a key: `{ key, format, type, passphrase, encoding }` with bytes and strings only. */
  function keySpec(input: unknown): Record<string, unknown> {
    const o = input !== null && typeof input === 'object' && !ArrayBuffer.isView(input) && !(input instanceof ArrayBuffer) && !(input instanceof KeyObject) ? (input as Record<string, unknown>) : { key: input };
    const key = o.key;
    const spec: Record<string, unknown> = {};
    const info = KeyObject._info(key);
    if (info !== undefined) {
      spec.key = new Uint8Array(info.der);
      spec.keyType = info.type;
    } else if (o.format === 'jwk') {
      spec.key = JSON.stringify(key);
      spec.format = 'jwk';
    } else if (typeof key === 'string') spec.key = key;
    else spec.key = bytes(key, o.encoding, 'key');
    for (const field of ['format', 'type', 'encoding']) if (typeof o[field] === 'string' && spec[field] === undefined) spec[field] = o[field];
    if (o.passphrase !== undefined) spec.passphrase = typeof o.passphrase === 'string' ? o.passphrase : bytes(o.passphrase, undefined, 'passphrase');
    for (const field of ['padding', 'saltLength']) if (typeof o[field] === 'number') spec[field] = o[field];
    if (o.dsaEncoding === 'der' || o.dsaEncoding === 'ieee-p1363') spec.dsaEncoding = o.dsaEncoding;
    return spec;
  }
  const importKey = (kind: 'public' | 'private', input: unknown): KeyObject => KeyObject._make(call('keyImport', kind, keySpec(input)) as KeyInfo);
  function createSecretKey(key: unknown, encoding?: unknown): KeyObject {
    const material = bytes(key, encoding, 'key');
    return KeyObject._make({ type: 'secret', symmetricKeySize: material.byteLength, der: material.slice().buffer });
  }
  const secretOf = (key: unknown): Uint8Array => {
    const info = KeyObject._info(key);
    if (info !== undefined) {
      if (info.type !== 'secret') throw Object.assign(new TypeError(`Invalid key object type ${info.type}, expected secret.`), { code: 'ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE' });
      return new Uint8Array(info.der);
    }
    return bytes(key, undefined, 'key');
  };

  class Sign {
    #alg: string;
    #chunks: Uint8Array[] = [];
    constructor(algorithm: unknown) {
      this.#alg = String(algorithm);
      call('hashCheck', this.#alg);
    }
    update(data: unknown, encoding?: unknown): this {
      this.#chunks.push(bytes(data, encoding));
      return this;
    }
    sign(key: unknown, encoding?: unknown): unknown {
      return out(call('sign', this.#alg, joined(this.#chunks), keySpec(key)), encoding);
    }
  }
  class Verify {
    #alg: string;
    #chunks: Uint8Array[] = [];
    constructor(algorithm: unknown) {
      this.#alg = String(algorithm);
      call('hashCheck', this.#alg);
    }
    update(data: unknown, encoding?: unknown): this {
      this.#chunks.push(bytes(data, encoding));
      return this;
    }
    verify(key: unknown, signature: unknown, encoding?: unknown): boolean {
      return call('verify', this.#alg, joined(this.#chunks), keySpec(key), bytes(signature, encoding, 'signature')) === true;
    }
  }

  const MAX_RANDOM = 16 * 1024 * 1024;
  function randomBytes(size: unknown, callback?: (err: Error | null, buf?: unknown) => void): unknown {
    const n = Number(size);
    if (!Number.isInteger(n) || n < 0 || n > MAX_RANDOM) throw Object.assign(new RangeError(`The value of "size" is out of range. It must be >= 0 && <= ${MAX_RANDOM}. Received ${String(size)}`), { code: 'ERR_OUT_OF_RANGE' });
    const buf = Buffer.from(call('random', n) as ArrayBuffer);
    if (typeof callback !== 'function') return buf;
    void Promise.resolve().then(() => callback(null, buf));
    return undefined;
  }
  function randomFillSync<T>(target: T, offset = 0, size?: number): T {
    if (!ArrayBuffer.isView(target)) throw new TypeError('The "buf" argument must be an instance of ArrayBuffer or ArrayBufferView');
    const view = new Uint8Array(target.buffer, target.byteOffset, target.byteLength);
    const length = size ?? view.byteLength - offset;
    view.set(randomBytes(length) as Uint8Array, offset);
    return target;
  }
  function timingSafeEqual(a: unknown, b: unknown): boolean {
    const x = bytes(a, undefined, 'buf1');
    const y = bytes(b, undefined, 'buf2');
    if (x.byteLength !== y.byteLength) throw Object.assign(new RangeError('Input buffers must have the same byte length'), { code: 'ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH' });
    let diff = 0;
    for (let i = 0; i < x.byteLength; i++) diff |= (x[i] as number) ^ (y[i] as number);
    return diff === 0;
  }
  const unavailable = (name: string) => () => {
    throw new Error(`crypto.${name} is not available in event scripts (hashes, HMAC, random bytes, keys, signatures and verification are)`);
  };
  const constants = call('constants') as Record<string, number>;

  module.exports = {
    createHash: (algorithm: unknown) => new Hash(algorithm),
    createHmac: (algorithm: unknown, key: unknown) => new Hmac(algorithm, secretOf(key)),
    hash: (algorithm: unknown, data: unknown, encoding: unknown = 'hex') => out(call('hash', String(algorithm), bytes(data)), encoding),
    createSign: (algorithm: unknown) => new Sign(algorithm),
    createVerify: (algorithm: unknown) => new Verify(algorithm),
    sign: (algorithm: unknown, data: unknown, key: unknown) => out(call('sign', algorithm === null || algorithm === undefined ? null : String(algorithm), bytes(data), keySpec(key))),
    verify: (algorithm: unknown, data: unknown, key: unknown, signature: unknown) => call('verify', algorithm === null || algorithm === undefined ? null : String(algorithm), bytes(data), keySpec(key), bytes(signature, undefined, 'signature')) === true,
    createSecretKey,
    createPublicKey: (input: unknown) => importKey('public', input),
    createPrivateKey: (input: unknown) => importKey('private', input),
    KeyObject,
    Hash,
    Hmac,
    Sign,
    Verify,
    randomBytes,
    pseudoRandomBytes: randomBytes,
    randomFillSync,
    randomUUID: () => call('uuid') as string,
    randomInt: (min: number, max?: number) => {
      const [lo, hi] = max === undefined ? [0, min] : [min, max];
      if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || hi <= lo || hi - lo > 2 ** 48) throw new RangeError('randomInt: bad range');
      return call('randomInt', lo, hi) as number;
    },
    getRandomValues: <T>(target: T) => randomFillSync(target),
    timingSafeEqual,
    getHashes: () => call('hashes') as string[],
    getCurves: () => call('curves') as string[],
    getCiphers: () => [],
    constants,
    createCipheriv: unavailable('createCipheriv'),
    createDecipheriv: unavailable('createDecipheriv'),
    generateKeyPair: unavailable('generateKeyPair'),
    generateKeyPairSync: unavailable('generateKeyPairSync'),
    pbkdf2: unavailable('pbkdf2'),
    pbkdf2Sync: unavailable('pbkdf2Sync'),
    scrypt: unavailable('scrypt'),
    scryptSync: unavailable('scryptSync'),
    createDiffieHellman: unavailable('createDiffieHellman'),
    createECDH: unavailable('createECDH'),
    publicEncrypt: unavailable('publicEncrypt'),
    privateDecrypt: unavailable('privateDecrypt'),
    webcrypto: undefined,
    subtle: undefined,
  };
}
