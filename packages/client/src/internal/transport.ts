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
}

/** One HTTP call: path with its leading slash, query string without '?'. */
export interface CallRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: string;
  body?: unknown;
}

/** Sends calls with fetch: JSON in and out, credentials included, errors as error objects. */
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
    const headers: Record<string, string> = { ...this.options.headers() };
    let body: string | undefined;
    if (call.body !== undefined) {
      body = JSON.stringify(call.body);
      headers['content-type'] = 'application/json';
    }
    const cookie = this.options.jar?.header();
    if (cookie !== undefined) headers.cookie = cookie;
    const url = `${this.options.baseUrl}${call.path}${call.query ? `?${call.query}` : ''}`;
    let res: Response;
    try {
      res = await fetch(url, { method: call.method, headers, body, credentials: 'include' });
    } catch (err) {
      throw { status: 0, statusCode: 0, message: `cannot reach ${url}: ${(err as Error).message}` } satisfies SvcErrorBody;
    }
    this.options.jar?.store(res.headers.getSetCookie?.() ?? []);
    const text = await res.text();
    const value = parse(text, res.headers.get('content-type'));
    if (res.status >= 400) throw toError(res, value);
    return value;
  }
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

function toError(res: Response, value: unknown): SvcErrorBody {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const obj = value as Partial<SvcErrorBody>;
    const status = typeof obj.status === 'number' ? obj.status : res.status;
    return { ...obj, status, statusCode: status } as SvcErrorBody;
  }
  return { status: res.status, statusCode: res.status, message: typeof value === 'string' && value !== '' ? value : res.statusText };
}
