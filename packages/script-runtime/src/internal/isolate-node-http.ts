import type { IsolateRun } from './isolate-types.js';
import type { NetReply, NetRequest, SandboxInternals } from './isolate-node-web.js';

/**
 * `http` and `https` INSIDE the isolate: request() and get() as Node's, each request sent as one
 * host call (`#net`) of its run when it ends, answered by the server through its outbound guard
 * (address checks, redirects handed back as Node does, time and size limits, the request's
 * budget). The answer arrives whole and is given to the IncomingMessage stream in one piece.
 * There is no socket: `socket` is a stand-in, `timeout` never fires (svc's own limit does).
 * Serialised with Function.prototype.toString: nothing from outside its body.
 */
export function nodeHttp(module: { exports: unknown }, _exports: unknown, require: (name: string) => unknown, _globals: unknown, sandbox: SandboxInternals, defaultProtocol = 'http:'): void {
  type Emitter = { on(e: string, f: (...a: unknown[]) => void): unknown; once(e: string, f: (...a: unknown[]) => void): unknown; emit(e: string, ...a: unknown[]): boolean; listenerCount(e: string): number };
  const EventEmitter = require('events') as new () => Emitter;
  const { Readable } = require('stream') as { Readable: new (options?: object) => Emitter & { push(chunk: unknown): boolean } };
  const { Buffer } = require('buffer') as { Buffer: typeof globalThis.Buffer };

  const STATUS_CODES: Record<number, string> = {
    100: 'Continue', 101: 'Switching Protocols', 200: 'OK', 201: 'Created', 202: 'Accepted', 203: 'Non-Authoritative Information', 204: 'No Content', 205: 'Reset Content', 206: 'Partial Content',
    300: 'Multiple Choices', 301: 'Moved Permanently', 302: 'Found', 303: 'See Other', 304: 'Not Modified', 307: 'Temporary Redirect', 308: 'Permanent Redirect',
    400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 406: 'Not Acceptable', 408: 'Request Timeout', 409: 'Conflict', 410: 'Gone', 411: 'Length Required', 412: 'Precondition Failed', 413: 'Payload Too Large', 414: 'URI Too Long', 415: 'Unsupported Media Type', 416: 'Range Not Satisfiable', 418: "I'm a Teapot", 422: 'Unprocessable Entity', 425: 'Too Early', 426: 'Upgrade Required', 428: 'Precondition Required', 429: 'Too Many Requests', 431: 'Request Header Fields Too Large',
    500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout', 505: 'HTTP Version Not Supported',
  };
  const METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];

  class Agent extends EventEmitter {
    options: Record<string, unknown>;
    maxSockets = Infinity;
    maxFreeSockets = 256;
    requests: Record<string, unknown> = {};
    sockets: Record<string, unknown> = {};
    freeSockets: Record<string, unknown> = {};
    defaultPort = defaultProtocol === 'https:' ? 443 : 80;
    protocol = defaultProtocol;
    constructor(options?: Record<string, unknown>) {
      super();
      this.options = { ...options };
    }
    destroy(): void {}
  }
  const globalAgent = new Agent();

  /** A stand-in socket: what modules call on one (setTimeout, setNoDelay, ...) does nothing. */
  class Socket extends EventEmitter {
    remoteAddress: string | undefined = undefined;
    setTimeout(): this { return this; }
    setNoDelay(): this { return this; }
    setKeepAlive(): this { return this; }
    ref(): this { return this; }
    unref(): this { return this; }
    destroy(): this { return this; }
  }

  class IncomingMessage extends Readable {
    statusCode: number;
    statusMessage: string;
    headers: Record<string, string | string[]> = {};
    rawHeaders: string[] = [];
    trailers: Record<string, string> = {};
    rawTrailers: string[] = [];
    httpVersion = '1.1';
    httpVersionMajor = 1;
    httpVersionMinor = 1;
    method = null;
    url: string;
    complete = false;
    socket: Socket;
    constructor(reply: { status: number; statusText: string; headers: [string, string][]; url: string }, socket: Socket) {
      super();
      this.statusCode = reply.status;
      this.statusMessage = reply.statusText || STATUS_CODES[reply.status] || '';
      this.url = '';
      this.socket = socket;
      for (const [name, value] of reply.headers) {
        this.rawHeaders.push(name, value);
        const key = name.toLowerCase();
        const prior = this.headers[key];
        if (key === 'set-cookie') this.headers[key] = [...((prior as string[] | undefined) ?? []), value];
        else this.headers[key] = prior === undefined ? value : `${prior as string}, ${value}`;
      }
    }
    _read(): void {}
    setTimeout(): this {
      return this;
    }
  }

  /** The URL a request goes to, from Node's options ({ protocol, hostname|host, port, path, auth }). */
  function target(options: Record<string, unknown>): string {
    const protocol = typeof options.protocol === 'string' ? options.protocol : defaultProtocol;
    if (protocol !== 'http:' && protocol !== 'https:') throw Object.assign(new TypeError(`Protocol "${protocol}" not supported. Expected "${defaultProtocol}"`), { code: 'ERR_INVALID_PROTOCOL' });
    let host = String(options.hostname ?? options.host ?? 'localhost');
    if (options.hostname === undefined && options.host !== undefined && /^[^[]*:\d+$/.test(host)) host = host.replace(/:\d+$/, '');
    if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
    const port = options.port === undefined || options.port === null || options.port === '' ? '' : `:${String(options.port)}`;
    const auth = typeof options.auth === 'string' ? `${options.auth.split(':').map(encodeURIComponent).join(':')}@` : '';
    const path = typeof options.path === 'string' ? options.path : '/';
    return `${protocol}//${auth}${host}${port}${path.startsWith('/') ? path : `/${path}`}`;
  }

  class ClientRequest extends EventEmitter {
    method: string;
    path: string;
    host: string;
    protocol: string;
    aborted = false;
    destroyed = false;
    finished = false;
    writable = true;
    reusedSocket = false;
    socket: Socket = new Socket();
    #url: string;
    #headers = new Map<string, [string, unknown]>();
    #body: Uint8Array[] = [];
    #run: IsolateRun | undefined;
    constructor(options: Record<string, unknown>, callback?: (res: IncomingMessage) => void) {
      super();
      this.#run = sandbox.currentRun();
      this.#url = target(options);
      this.method = String(options.method ?? 'GET').toUpperCase();
      this.path = typeof options.path === 'string' ? options.path : '/';
      this.host = String(options.hostname ?? options.host ?? 'localhost');
      this.protocol = typeof options.protocol === 'string' ? options.protocol : defaultProtocol;
      const headers = options.headers !== null && typeof options.headers === 'object' ? (options.headers as Record<string, unknown>) : {};
      for (const name of Object.keys(headers)) this.setHeader(name, headers[name]);
      if (typeof callback === 'function') this.once('response', callback as (...a: unknown[]) => void);
      // Node emits `socket` on a later tick; modules set socket timeouts in its listener.
      void Promise.resolve().then(() => this.emit('socket', this.socket));
    }
    setHeader(name: unknown, value: unknown): this {
      if (this.finished) throw Object.assign(new Error('Cannot set headers after they are sent to the client'), { code: 'ERR_HTTP_HEADERS_SENT' });
      this.#headers.set(String(name).toLowerCase(), [String(name), value]);
      return this;
    }
    getHeader(name: unknown): unknown {
      return this.#headers.get(String(name).toLowerCase())?.[1];
    }
    hasHeader(name: unknown): boolean {
      return this.#headers.has(String(name).toLowerCase());
    }
    removeHeader(name: unknown): void {
      this.#headers.delete(String(name).toLowerCase());
    }
    getHeaders(): Record<string, unknown> {
      const out: Record<string, unknown> = {};
      for (const [key, [, value]] of this.#headers) out[key] = value;
      return out;
    }
    getHeaderNames(): string[] {
      return [...this.#headers.keys()];
    }
    setTimeout(_ms?: unknown, callback?: () => void): this {
      if (typeof callback === 'function') this.once('timeout', callback);
      return this;
    }
    setNoDelay(): void {}
    setSocketKeepAlive(): void {}
    flushHeaders(): void {}
    write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
      if (this.finished) throw Object.assign(new Error('write after end'), { code: 'ERR_STREAM_WRITE_AFTER_END' });
      const cb = typeof encoding === 'function' ? encoding : callback;
      if (chunk !== undefined && chunk !== null) this.#body.push(typeof chunk === 'string' ? Buffer.from(chunk, (typeof encoding === 'string' ? encoding : 'utf8') as BufferEncoding) : Buffer.from(chunk as Uint8Array));
      if (typeof cb === 'function') void Promise.resolve().then(() => (cb as () => void)());
      return true;
    }
    end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
      if (typeof chunk === 'function') return this.end(undefined, undefined, chunk);
      if (typeof encoding === 'function') return this.end(chunk, undefined, encoding);
      if (this.finished) return this;
      if (chunk !== undefined && chunk !== null) this.write(chunk, encoding);
      this.finished = true;
      this.writable = false;
      if (typeof callback === 'function') this.once('finish', callback as () => void);
      this.#send();
      return this;
    }
    #send(): void {
      const run = this.#run ?? sandbox.currentRun();
      const fail = (message: string, code: string): void => {
        if (this.aborted || this.destroyed) return;
        const err = Object.assign(new Error(message), { code });
        void Promise.resolve().then(() => this.emit('error', err));
      };
      if (run === undefined) return fail('http: svc cannot tell which script run makes this request (one made after an await by code of several runs, such as a module in a list\'s On Get)', 'ERR_SVC_NO_RUN');
      const headers: [string, string][] = [];
      for (const [, [name, value]] of this.#headers) {
        if (Array.isArray(value)) for (const v of value) headers.push([name, String(v)]);
        else headers.push([name, String(value)]);
      }
      const request: NetRequest = { url: this.#url, method: this.method, headers, redirect: 'manual', decode: false };
      if (this.#body.length > 0) request.body = Buffer.concat(this.#body).toString('base64');
      this.#body = [];
      const delivered = (reply: NetReply): void => {
        if (this.aborted || this.destroyed) return;
        if ('error' in reply) return fail(reply.error.message, reply.error.code);
        this.emit('finish');
        const res = new IncomingMessage(reply, this.socket);
        this.emit('response', res);
        const body = Buffer.from(reply.body, 'base64');
        if (body.length > 0) res.push(body);
        res.push(null);
        res.once('end', () => {
          res.complete = true;
        });
        this.emit('close');
      };
      sandbox.deps.call(run, '#net', [request]).then(
        (reply) => sandbox.within(run, () => delivered(reply as NetReply)),
        (err: unknown) => sandbox.within(run, () => fail(`http: ${String((err as { message?: unknown } | null)?.message ?? err)}`, 'ERR_SVC_OUTBOUND')),
      );
    }
    abort(): void {
      if (this.aborted) return;
      this.aborted = true;
      void Promise.resolve().then(() => {
        this.emit('abort');
        this.emit('close');
      });
    }
    destroy(err?: unknown): this {
      if (this.destroyed) return this;
      this.destroyed = true;
      void Promise.resolve().then(() => {
        if (err !== undefined && err !== null) this.emit('error', err);
        this.emit('close');
      });
      return this;
    }
  }

  /** request(url | options, [options], [callback]), as Node takes it. */
  function request(...args: unknown[]): ClientRequest {
    let options: Record<string, unknown> = {};
    let callback: ((res: IncomingMessage) => void) | undefined;
    for (const arg of args) {
      if (typeof arg === 'function') callback = arg as (res: IncomingMessage) => void;
      else if (typeof arg === 'string' || (arg !== null && typeof arg === 'object' && typeof (arg as { href?: unknown }).href === 'string' && typeof (arg as { searchParams?: unknown }).searchParams === 'object')) {
        type Parts = { protocol: string; hostname: string; port: string; pathname: string; search: string; username: string; password: string };
        const url = new (require('url') as { URL: new (u: string) => Parts }).URL(typeof arg === 'string' ? arg : String((arg as { href: string }).href));
        options = { ...options, protocol: url.protocol, hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port, path: `${url.pathname}${url.search}`, ...(url.username !== '' ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}) };
      } else if (arg !== null && typeof arg === 'object') options = { ...options, ...(arg as Record<string, unknown>) };
    }
    return new ClientRequest(options, callback);
  }
  function get(...args: unknown[]): ClientRequest {
    const req = request(...args);
    req.end();
    return req;
  }
  const createServer = (): never => {
    throw new Error('http.createServer is not available in event scripts');
  };

  module.exports = { request, get, Agent, globalAgent, ClientRequest, IncomingMessage, METHODS, STATUS_CODES, createServer, Server: createServer, maxHeaderSize: 16384 };
}
