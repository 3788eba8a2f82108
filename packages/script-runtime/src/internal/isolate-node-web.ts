import type { IsolateRun } from './isolate-types.js';
import type { NodeSandboxDeps } from './isolate-node.js';

/** What the built-ins' factories get as their fifth argument (isolate-node.ts `sandbox`). */
export interface SandboxInternals {
  freeze(value: unknown): void;
  deps: NodeSandboxDeps;
  currentRun(): IsolateRun | undefined;
  within<T>(run: IsolateRun, fn: () => T): T;
}

/** One outbound request as the server's `#net` host function takes it (scriptOutbound.ts). */
export interface NetRequest {
  url: string;
  method: string;
  headers: [string, string][];
  /** base64 */
  body?: string;
  redirect: 'follow' | 'manual' | 'error';
  decode: boolean;
}

/** Its answer: the body as base64, or the failure with a Node-style code. */
export type NetReply = { status: number; statusText: string; headers: [string, string][]; body: string; url: string; redirected: boolean } | { error: { message: string; code: string } };

/**
 * The web globals of event scripts and modules, INSIDE the isolate (module 'svc:web'): URL
 * (parsed by Node's own parser in the script process), URLSearchParams, TextEncoder,
 * TextDecoder, atob, btoa, Headers, Response, AbortController and fetch (the server's outbound
 * function, through the guard). Serialised with Function.prototype.toString: nothing from outside
 * its body. Module-shaped: (module, exports, require, globals, sandbox).
 */
export function nodeWeb(module: { exports: unknown }, _exports: unknown, require: (name: string) => unknown, _globals: unknown, sandbox: SandboxInternals): void {
  const { Buffer } = require('buffer') as { Buffer: typeof globalThis.Buffer };
  const hostSync = sandbox.deps.hostSync;
  const bytesOf = (value: unknown): Uint8Array => {
    if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
    if (ArrayBuffer.isView(value)) return Uint8Array.prototype.slice.call(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    throw new TypeError('expected an ArrayBuffer or a typed array');
  };

  class TextEncoder {
    get encoding(): string {
      return 'utf-8';
    }
    encode(input: unknown = ''): Uint8Array {
      return new Uint8Array(Buffer.from(String(input), 'utf8'));
    }
  }
  class TextDecoder {
    readonly encoding: string;
    readonly fatal: boolean;
    constructor(label: unknown = 'utf-8', options: { fatal?: boolean } = {}) {
      const name = String(label).trim().toLowerCase();
      const known: Record<string, string> = { 'utf-8': 'utf-8', utf8: 'utf-8', 'unicode-1-1-utf-8': 'utf-8', 'utf-16le': 'utf-16le', 'utf-16': 'utf-16le', latin1: 'latin1', 'iso-8859-1': 'latin1', ascii: 'latin1', 'us-ascii': 'latin1', 'windows-1252': 'latin1' };
      const found = known[name];
      if (found === undefined) throw new RangeError(`The "${String(label)}" encoding is not supported`);
      this.encoding = found;
      this.fatal = options?.fatal === true;
    }
    decode(input?: unknown): string {
      if (input === undefined) return '';
      const bytes = Buffer.from(bytesOf(input));
      const text = bytes.toString(this.encoding === 'utf-8' ? 'utf8' : this.encoding === 'utf-16le' ? 'utf16le' : 'latin1');
      if (this.fatal && this.encoding === 'utf-8' && !Buffer.from(text, 'utf8').equals(bytes)) throw new TypeError('The encoded data was not valid for encoding utf-8');
      return this.encoding === 'utf-8' && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    }
  }

  const B64 = /^[A-Za-z0-9+/]*={0,2}$/;
  const atob = (data: unknown): string => {
    const text = String(data).replace(/[\t\n\f\r ]/g, '');
    if (!B64.test(text) || text.replace(/=+$/, '').length % 4 === 1) throw new Error('The string to be decoded is not correctly encoded.');
    return Buffer.from(text, 'base64').toString('latin1');
  };
  const btoa = (data: unknown): string => {
    const text = String(data);
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 255) throw new Error('Invalid character');
    return Buffer.from(text, 'latin1').toString('base64');
  };

  /** application/x-www-form-urlencoded, as the URL standard writes and reads it. */
  const formEncode = (text: string): string =>
    encodeURIComponent(text)
      .replace(/%20/g, '+')
      .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const formDecode = (text: string): string => {
    const bytes = Buffer.from(text.replace(/\+/g, ' '), 'utf8');
    const out: number[] = [];
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i] as number;
      const hex = b === 0x25 && i + 2 < bytes.length ? String.fromCharCode(bytes[i + 1] as number, bytes[i + 2] as number) : '';
      if (/^[0-9a-fA-F]{2}$/.test(hex)) {
        out.push(parseInt(hex, 16));
        i += 2;
      } else out.push(b);
    }
    return Buffer.from(out).toString('utf8');
  };

  class URLSearchParams {
    #list: [string, string][] = [];
    #owner: URL | undefined;
    constructor(init: unknown = '', owner?: URL) {
      this.#owner = owner;
      if (typeof init === 'string') this.#parse(init);
      else if (init !== null && typeof init === 'object') {
        if (typeof (init as Iterable<unknown>)[Symbol.iterator] === 'function') {
          for (const pair of init as Iterable<unknown>) {
            const list = [...(pair as Iterable<unknown>)];
            if (list.length !== 2) throw new TypeError('Each query pair must be an iterable [name, value] tuple');
            this.#list.push([String(list[0]), String(list[1])]);
          }
        } else for (const key of Object.keys(init)) this.#list.push([key, String((init as Record<string, unknown>)[key])]);
      }
    }
    #parse(text: string): void {
      this.#list = [];
      for (const part of (text.startsWith('?') ? text.slice(1) : text).split('&')) {
        if (part === '') continue;
        const eq = part.indexOf('=');
        this.#list.push(eq < 0 ? [formDecode(part), ''] : [formDecode(part.slice(0, eq)), formDecode(part.slice(eq + 1))]);
      }
    }
    /** URL's search changed: read again (no update back). */
    static _reset(params: URLSearchParams, search: string): void {
      params.#parse(search);
    }
    #changed(): void {
      this.#owner?._setSearch(this.toString());
    }
    get size(): number {
      return this.#list.length;
    }
    append(name: unknown, value: unknown): void {
      this.#list.push([String(name), String(value)]);
      this.#changed();
    }
    delete(name: unknown, value?: unknown): void {
      this.#list = this.#list.filter(([n, v]) => n !== String(name) || (value !== undefined && v !== String(value)));
      this.#changed();
    }
    get(name: unknown): string | null {
      return this.#list.find(([n]) => n === String(name))?.[1] ?? null;
    }
    getAll(name: unknown): string[] {
      return this.#list.filter(([n]) => n === String(name)).map(([, v]) => v);
    }
    has(name: unknown, value?: unknown): boolean {
      return this.#list.some(([n, v]) => n === String(name) && (value === undefined || v === String(value)));
    }
    set(name: unknown, value: unknown): void {
      const at = this.#list.findIndex(([n]) => n === String(name));
      if (at < 0) this.#list.push([String(name), String(value)]);
      else this.#list = [...this.#list.slice(0, at), [String(name), String(value)], ...this.#list.slice(at + 1).filter(([n]) => n !== String(name))];
      this.#changed();
    }
    sort(): void {
      this.#list = this.#list.map((pair, i) => [pair, i] as const).sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1])).map(([pair]) => pair);
      this.#changed();
    }
    forEach(fn: (value: string, name: string, params: this) => void, thisArg?: unknown): void {
      for (const [n, v] of [...this.#list]) fn.call(thisArg, v, n, this);
    }
    keys(): IterableIterator<string> {
      return this.#list.map(([n]) => n)[Symbol.iterator]();
    }
    values(): IterableIterator<string> {
      return this.#list.map(([, v]) => v)[Symbol.iterator]();
    }
    entries(): IterableIterator<[string, string]> {
      return this.#list.map(([n, v]) => [n, v] as [string, string])[Symbol.iterator]();
    }
    [Symbol.iterator](): IterableIterator<[string, string]> {
      return this.entries();
    }
    toString(): string {
      return this.#list.map(([n, v]) => `${formEncode(n)}=${formEncode(v)}`).join('&');
    }
  }

  type Parts = { href: string; origin: string; protocol: string; username: string; password: string; host: string; hostname: string; port: string; pathname: string; search: string; hash: string };
  /** A WHATWG URL: parsed and changed by Node's own parser (one synchronous call each). */
  class URL {
    #parts: Parts;
    #params: URLSearchParams | undefined;
    constructor(input: unknown, base?: unknown) {
      const parts = hostSync('url', String(input), base === undefined ? null : String(base)) as Parts | null;
      if (parts === null) throw Object.assign(new TypeError('Invalid URL'), { code: 'ERR_INVALID_URL', input: String(input) });
      this.#parts = parts;
    }
    static canParse(input: unknown, base?: unknown): boolean {
      return hostSync('url', String(input), base === undefined ? null : String(base)) !== null;
    }
    static parse(input: unknown, base?: unknown): URL | null {
      return URL.canParse(input, base) ? new URL(input, base) : null;
    }
    #set(key: string, value: unknown): void {
      this.#parts = hostSync('urlSet', this.#parts.href, key, String(value)) as Parts;
      if ((key === 'search' || key === 'href') && this.#params) URLSearchParams._reset(this.#params, this.#parts.search);
    }
    _setSearch(search: string): void {
      this.#parts = hostSync('urlSet', this.#parts.href, 'search', search) as Parts;
    }
    get href(): string { return this.#parts.href; }
    set href(v: unknown) { this.#set('href', v); }
    get origin(): string { return this.#parts.origin; }
    get protocol(): string { return this.#parts.protocol; }
    set protocol(v: unknown) { this.#set('protocol', v); }
    get username(): string { return this.#parts.username; }
    set username(v: unknown) { this.#set('username', v); }
    get password(): string { return this.#parts.password; }
    set password(v: unknown) { this.#set('password', v); }
    get host(): string { return this.#parts.host; }
    set host(v: unknown) { this.#set('host', v); }
    get hostname(): string { return this.#parts.hostname; }
    set hostname(v: unknown) { this.#set('hostname', v); }
    get port(): string { return this.#parts.port; }
    set port(v: unknown) { this.#set('port', v); }
    get pathname(): string { return this.#parts.pathname; }
    set pathname(v: unknown) { this.#set('pathname', v); }
    get search(): string { return this.#parts.search; }
    set search(v: unknown) { this.#set('search', v); }
    get hash(): string { return this.#parts.hash; }
    set hash(v: unknown) { this.#set('hash', v); }
    get searchParams(): URLSearchParams {
      return (this.#params ??= new URLSearchParams(this.#parts.search, this));
    }
    toString(): string { return this.#parts.href; }
    toJSON(): string { return this.#parts.href; }
  }

  class Headers {
    #map = new Map<string, { name: string; values: string[] }>();
    constructor(init?: unknown) {
      if (init instanceof Headers) init.forEach((v, n) => this.append(n, v));
      else if (Array.isArray(init)) for (const [n, v] of init as [unknown, unknown][]) this.append(n, v);
      else if (init !== null && typeof init === 'object') for (const key of Object.keys(init)) this.append(key, (init as Record<string, unknown>)[key]);
    }
    append(name: unknown, value: unknown): void {
      const key = String(name).toLowerCase();
      const entry = this.#map.get(key);
      if (entry) entry.values.push(String(value).trim());
      else this.#map.set(key, { name: key, values: [String(value).trim()] });
    }
    set(name: unknown, value: unknown): void {
      this.#map.set(String(name).toLowerCase(), { name: String(name).toLowerCase(), values: [String(value).trim()] });
    }
    get(name: unknown): string | null {
      return this.#map.get(String(name).toLowerCase())?.values.join(', ') ?? null;
    }
    getSetCookie(): string[] {
      return [...(this.#map.get('set-cookie')?.values ?? [])];
    }
    has(name: unknown): boolean {
      return this.#map.has(String(name).toLowerCase());
    }
    delete(name: unknown): void {
      this.#map.delete(String(name).toLowerCase());
    }
    forEach(fn: (value: string, name: string, headers: this) => void, thisArg?: unknown): void {
      for (const [n, v] of this.entries()) fn.call(thisArg, v, n, this);
    }
    *entries(): IterableIterator<[string, string]> {
      for (const key of [...this.#map.keys()].sort()) yield [key, this.get(key) as string];
    }
    *keys(): IterableIterator<string> {
      for (const [n] of this.entries()) yield n;
    }
    *values(): IterableIterator<string> {
      for (const [, v] of this.entries()) yield v;
    }
    [Symbol.iterator](): IterableIterator<[string, string]> {
      return this.entries();
    }
    /** Pairs for the wire, every value of a repeated header on its own. */
    static _pairs(headers: Headers): [string, string][] {
      const out: [string, string][] = [];
      for (const { name, values } of headers.#map.values()) for (const value of values) out.push([name, value]);
      return out;
    }
  }

  class AbortSignal {
    aborted = false;
    reason: unknown = undefined;
    onabort: ((event: unknown) => void) | null = null;
    #listeners: ((event: unknown) => void)[] = [];
    addEventListener(type: string, fn: (event: unknown) => void): void {
      if (type === 'abort' && typeof fn === 'function') this.#listeners.push(fn);
    }
    removeEventListener(type: string, fn: (event: unknown) => void): void {
      if (type === 'abort') this.#listeners = this.#listeners.filter((l) => l !== fn);
    }
    throwIfAborted(): void {
      if (this.aborted) throw this.reason;
    }
    static _abort(signal: AbortSignal, reason: unknown): void {
      if (signal.aborted) return;
      signal.aborted = true;
      signal.reason = reason ?? Object.assign(new Error('This operation was aborted'), { name: 'AbortError', code: 20 });
      const event = { type: 'abort', target: signal };
      for (const fn of [signal.onabort, ...signal.#listeners]) if (typeof fn === 'function') fn.call(signal, event);
    }
    static abort(reason?: unknown): AbortSignal {
      const signal = new AbortSignal();
      AbortSignal._abort(signal, reason);
      return signal;
    }
  }
  class AbortController {
    readonly signal = new AbortSignal();
    abort(reason?: unknown): void {
      AbortSignal._abort(this.signal, reason);
    }
  }

  /** A finished answer: the whole body arrived with it (within the outbound size limit). */
  class Response {
    readonly status: number;
    readonly statusText: string;
    readonly headers: Headers;
    readonly url: string;
    readonly redirected: boolean;
    readonly type = 'basic';
    #body: Uint8Array;
    #used = false;
    constructor(body: unknown = null, init: { status?: number; statusText?: string; headers?: unknown } = {}) {
      this.status = init.status ?? 200;
      this.statusText = init.statusText ?? '';
      this.headers = new Headers(init.headers);
      this.url = '';
      this.redirected = false;
      this.#body = body === null || body === undefined ? new Uint8Array(0) : typeof body === 'string' ? new Uint8Array(Buffer.from(body)) : bytesOf(body);
    }
    static _from(reply: { status: number; statusText: string; headers: [string, string][]; body: string; url: string; redirected: boolean }): Response {
      const res = new Response(Buffer.from(reply.body, 'base64'), { status: reply.status, statusText: reply.statusText, headers: reply.headers });
      Object.defineProperty(res, 'url', { value: reply.url });
      Object.defineProperty(res, 'redirected', { value: reply.redirected });
      return res;
    }
    static json(data: unknown, init: { status?: number; statusText?: string; headers?: unknown } = {}): Response {
      const res = new Response(JSON.stringify(data), init);
      if (!res.headers.has('content-type')) res.headers.set('content-type', 'application/json');
      return res;
    }
    get ok(): boolean {
      return this.status >= 200 && this.status <= 299;
    }
    get bodyUsed(): boolean {
      return this.#used;
    }
    #take(): Promise<Uint8Array> {
      if (this.#used) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
      this.#used = true;
      return Promise.resolve(this.#body);
    }
    text(): Promise<string> {
      return this.#take().then((b) => Buffer.from(b).toString('utf8'));
    }
    json(): Promise<unknown> {
      return this.text().then((t) => JSON.parse(t) as unknown);
    }
    arrayBuffer(): Promise<ArrayBuffer> {
      return this.#take().then((b) => b.slice().buffer);
    }
    bytes(): Promise<Uint8Array> {
      return this.#take().then((b) => b.slice());
    }
    clone(): Response {
      if (this.#used) throw new TypeError('Response.clone: Body has already been consumed.');
      const copy = new Response(this.#body, { status: this.status, statusText: this.statusText, headers: this.headers });
      Object.defineProperty(copy, 'url', { value: this.url });
      Object.defineProperty(copy, 'redirected', { value: this.redirected });
      return copy;
    }
  }

  /** fetch(): one outbound call of the run that makes it (redirects followed by the server, bodies decoded). */
  function fetch(input: unknown, init: { method?: unknown; headers?: unknown; body?: unknown; redirect?: unknown; signal?: unknown } = {}): Promise<Response> {
    try {
      const run = sandbox.currentRun();
      if (run === undefined) {
        const why = "svc cannot tell which script run makes this call (one made after an await by code of several runs, such as a module in a list's On Get): make it from the script itself";
        throw Object.assign(new TypeError(`fetch failed: ${why}`), { cause: Object.assign(new Error(why), { code: 'ERR_SVC_NO_RUN' }) });
      }
      const url = input instanceof URL ? input.href : String(input);
      const headers = new Headers(init.headers);
      let body: string | undefined;
      const raw = init.body;
      if (raw !== undefined && raw !== null) {
        if (raw instanceof URLSearchParams) {
          body = Buffer.from(raw.toString()).toString('base64');
          if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
        } else if (typeof raw === 'string') {
          body = Buffer.from(raw).toString('base64');
          if (!headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
        } else body = Buffer.from(bytesOf(raw)).toString('base64');
      }
      const redirect = init.redirect === undefined ? 'follow' : String(init.redirect);
      if (redirect !== 'follow' && redirect !== 'manual' && redirect !== 'error') throw new TypeError(`redirect must be 'follow', 'manual' or 'error'`);
      const signal = init.signal instanceof AbortSignal ? init.signal : undefined;
      if (signal?.aborted) return Promise.reject(signal.reason);
      const request: NetRequest = { url, method: init.method === undefined ? 'GET' : String(init.method).toUpperCase(), headers: Headers._pairs(headers), redirect, decode: true };
      if (body !== undefined) request.body = body;
      const answer = sandbox.deps.call(run, '#net', [request]).then((reply) => {
        const r = reply as NetReply;
        if ('error' in r) throw Object.assign(new TypeError(`fetch failed: ${r.error.message}`), { cause: Object.assign(new Error(r.error.message), { code: r.error.code }) });
        return Response._from(r);
      });
      if (!signal) return answer;
      return new Promise<Response>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason));
        answer.then(resolve, reject);
      });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  module.exports = { URL, URLSearchParams, TextEncoder, TextDecoder, atob, btoa, fetch, Headers, Response, AbortController, AbortSignal };
}
