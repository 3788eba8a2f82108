import type { SvcErrorBody } from '../types.js';
import type { CookieJar } from './cookieJar.js';

/** Options of a {@link Transport}. */
export interface TransportOptions {
  /** 'http://host:port' or '' for the page's own origin. */
  baseUrl: string;
  /** Extra headers, read on every request (so pages may replace the object). */
  headers(): Record<string, string>;
  /** Set in Node, where nothing keeps cookies for us. */
  jar?: CookieJar;
  /**
   * Send with XMLHttpRequest instead of fetch (/svc.js, as dpd.js did): pages and test tools that
   * wrap or stub XMLHttpRequest, as some written for Deployd do, see every call.
   */
  xhr?: boolean;
}

/** One HTTP call: path with its leading slash, query string without '?'. */
export interface CallRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: string;
  body?: unknown;
  /** Headers of this call only (If-Match, If-None-Match). */
  headers?: Record<string, string>;
}

/** Sends calls with fetch (or XMLHttpRequest): JSON in and out, credentials included, errors as error objects. */
export class Transport {
  constructor(private readonly options: TransportOptions) {}

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  set baseUrl(url: string) {
    this.options.baseUrl = url;
  }

  get jar(): CookieJar | undefined {
    return this.options.jar;
  }

  /** Resolves with the parsed result (null for an empty answer); rejects with an {@link SvcErrorBody}. */
  async send(call: CallRequest): Promise<unknown> {
    const headers: Record<string, string> = { ...this.options.headers(), ...call.headers };
    let body: string | RawBody | undefined;
    if (isRawBody(call.body)) {
      // A form (multipart, its boundary set by fetch) or a file's bytes: sent as they are.
      body = call.body;
    } else if (call.body !== undefined) {
      body = JSON.stringify(call.body);
      headers['content-type'] = 'application/json';
    }
    const cookie = this.options.jar?.header();
    if (cookie !== undefined) headers.cookie = cookie;
    const url = `${this.options.baseUrl}${call.path}${call.query ? `?${call.query}` : ''}`;
    if (this.options.xhr === true) return sendXhr(call.method, url, headers, body);
    let res: Response;
    try {
      res = await fetch(url, { method: call.method, headers, body: body as string | FormData | Blob | ArrayBuffer | Uint8Array<ArrayBuffer> | undefined, credentials: 'include' });
    } catch (err) {
      throw { status: 0, statusCode: 0, message: `cannot reach ${url}: ${(err as Error).message}` } satisfies SvcErrorBody;
    }
    this.options.jar?.store(res.headers.getSetCookie?.() ?? []);
    const text = await res.text();
    const value = parse(text, res.headers.get('content-type'));
    if (res.status >= 400) throw toError(res.status, res.statusText, value);
    return value;
  }
}

/** A body sent as it is: a FormData (a create's or update's files) or a file's bytes (a file property's path). */
export type RawBody = FormData | Blob | ArrayBuffer | Uint8Array;

/** Whether a call's body is sent as it is rather than as JSON. */
export function isRawBody(value: unknown): value is RawBody {
  return (
    (typeof FormData !== 'undefined' && value instanceof FormData) ||
    (typeof Blob !== 'undefined' && value instanceof Blob) ||
    value instanceof ArrayBuffer ||
    value instanceof Uint8Array
  );
}

/** What this file uses of XMLHttpRequest (typed here: the package is also compiled without the DOM types). */
interface Xhr {
  readonly readyState: number;
  readonly status: number;
  readonly statusText: string;
  readonly responseText: string;
  withCredentials: boolean;
  onreadystatechange: (() => void) | null;
  open(method: string, url: string, async: boolean): void;
  setRequestHeader(name: string, value: string): void;
  getResponseHeader(name: string): string | null;
  send(body: string | RawBody | null): void;
}

/** One call with XMLHttpRequest: the same answers as with fetch (credentials included). */
function sendXhr(method: string, url: string, headers: Record<string, string>, body: string | RawBody | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const Xhr = (globalThis as { XMLHttpRequest?: new () => Xhr }).XMLHttpRequest;
    if (Xhr === undefined) {
      reject({ status: 0, statusCode: 0, message: 'XMLHttpRequest is not available here' } satisfies SvcErrorBody);
      return;
    }
    const req = new Xhr();
    req.open(method, url, true);
    req.withCredentials = true;
    req.setRequestHeader('accept', 'application/json');
    for (const [name, value] of Object.entries(headers)) req.setRequestHeader(name, value);
    req.onreadystatechange = () => {
      if (req.readyState !== 4) return;
      // Status 0: no answer the page may read (network down, CORS refused, aborted).
      if (req.status === 0) {
        reject({ status: 0, statusCode: 0, message: `cannot reach ${url}` } satisfies SvcErrorBody);
        return;
      }
      const value = parse(req.responseText, req.getResponseHeader('content-type'));
      if (req.status >= 400) reject(toError(req.status, req.statusText, value));
      else resolve(value);
    };
    req.send(body ?? null);
  });
}

function parse(text: string, contentType: string | null): unknown {
  if (text === '') return null;
  if (contentType?.includes('json')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

function toError(resStatus: number, statusText: string, value: unknown): SvcErrorBody {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const obj = value as Partial<SvcErrorBody>;
    const status = typeof obj.status === 'number' ? obj.status : resStatus;
    return { ...obj, status, statusCode: status } as SvcErrorBody;
  }
  return { status: resStatus, statusCode: resStatus, message: typeof value === 'string' && value !== '' ? value : statusText };
}
