import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { request as httpRequest } from 'node:http';
import type { Agent as HttpAgent, ClientRequest, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import type { LookupFunction, Socket } from 'node:net';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import { SvcError } from '../errors.js';
import type { OutboundPolicy } from './outboundPolicy.js';

/** Resolves a host name to its addresses (tests and hosts files give their own). */
export type OutboundLookup = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

/** One outbound HTTP request through the guard ({@link outboundFetch}). */
export interface OutboundRequest {
  /** An absolute http: or https: URL. */
  url: string;
  /** Default GET. */
  method?: string;
  /** Header pairs (repeated names allowed) or an object of header values. */
  headers?: readonly (readonly [string, string])[] | Readonly<Record<string, string>>;
  body?: Uint8Array | string;
  /** What a 3xx answer with a Location does: followed (default), handed back, or an error. */
  redirect?: 'follow' | 'manual' | 'error';
  /** Redirects followed at most (default 5); each is checked as a request of its own. */
  maxRedirects?: number;
  /** Which addresses may be reached. */
  policy: OutboundPolicy;
  /** Time for the whole call (connects, redirects, the whole body), ms. */
  timeoutMs: number;
  /** Largest response body, bytes (after decoding when `decode`). */
  maxBytes: number;
  /**
   * Past `maxBytes`, cut the body there (the rest is not read; the connection is closed) and
   * answer `truncated: true`, instead of failing with ERR_OUTBOUND_TOO_LARGE: for callers that
   * keep only the start of an answer (a webhook's response excerpt). Not with `decode`.
   */
  truncate?: boolean;
  /** Decode gzip, deflate and br bodies (and ask for them when the caller did not say). */
  decode?: boolean;
  /**
   * Keep-alive agents to reuse connections with (a webhook's many deliveries to one receiver);
   * default none: a fresh connection per request. A connection is checked when it is made (its
   * address through this lookup, its peer once connected) and reused only for the same host and
   * port, so a reused one is one the policy allowed. Give agents only to calls of one policy.
   */
  agents?: { http?: HttpAgent; https?: HttpsAgent };
  /** Host name resolution; default the system's (getaddrinfo, as Node's http does). */
  lookup?: OutboundLookup;
  signal?: AbortSignal;
}

/** What {@link outboundFetch} answers: the whole body, read within the limits. */
export interface OutboundResponse {
  status: number;
  statusText: string;
  /** Header pairs as received. */
  headers: [string, string][];
  body: Buffer;
  /** The URL of the answer (after redirects). */
  url: string;
  redirected: boolean;
  /** The body was cut at `maxBytes` (only when the request asked for `truncate`). */
  truncated?: boolean;
}

/** The code of an outbound failure, as Node names its network errors (see outboundErrorCode). */
export type OutboundErrorCode = 'ERR_OUTBOUND_REFUSED' | 'ERR_OUTBOUND_URL' | 'ERR_OUTBOUND_TOO_LARGE' | 'ERR_OUTBOUND_REDIRECT' | 'ETIMEDOUT' | 'ABORT_ERR';

/** A failed outbound call: SvcError BAD_GATEWAY whose cause carries a Node-style `code`. */
function outboundError(code: string, message: string, cause?: unknown): SvcError {
  const detail = Object.assign(new Error(message, cause === undefined ? undefined : { cause }), { code });
  return new SvcError('BAD_GATEWAY', message, { cause: detail });
}

/**
 * The Node-style code of an error {@link outboundFetch} threw: one of {@link OutboundErrorCode}
 * or a network error's own (ECONNREFUSED, ENOTFOUND, ECONNRESET, ...); undefined for others.
 */
export function outboundErrorCode(err: unknown): string | undefined {
  if (!(err instanceof SvcError)) return undefined;
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers that carry the caller's credentials: not sent on to another origin by a redirect. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

/**
 * One HTTP request to the outside, within the guard: the URL's host is resolved, every address
 * it resolves to is checked against `policy` (a name with any refused address is refused), and
 * the connection goes to a checked address (Node's connect takes it from this lookup, so DNS
 * cannot answer one address to the check and another to the connect); the socket's peer is
 * checked again once connected. Redirects are followed as new requests, each checked the same
 * way, within one time limit; the body is read up to `maxBytes`. No proxy from the environment
 * is used. Failures throw SvcError BAD_GATEWAY ({@link outboundErrorCode} tells which).
 */
export async function outboundFetch(request: OutboundRequest): Promise<OutboundResponse> {
  const deadline = Date.now() + request.timeoutMs;
  let url = parseUrl(request.url);
  let method = (request.method ?? 'GET').toUpperCase();
  let headers = headerPairs(request.headers);
  if (request.decode === true && !headers.some(([name]) => name.toLowerCase() === 'accept-encoding')) headers.push(['accept-encoding', 'gzip, deflate, br']);
  let body = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
  const maxRedirects = request.maxRedirects ?? 5;
  for (let hops = 0; ; hops++) {
    const res = await once(url, method, headers, body, request, deadline);
    const location = res.headers['location'];
    if (!REDIRECTS.has(res.statusCode ?? 0) || typeof location !== 'string' || request.redirect === 'manual') {
      return { ...(await readAll(res, request, deadline)), url: url.href, redirected: hops > 0 };
    }
    res.resume();
    if (request.redirect === 'error') throw outboundError('ERR_OUTBOUND_REDIRECT', `${url.href} redirects to ${location} (redirect: 'error')`);
    if (hops >= maxRedirects) throw outboundError('ERR_OUTBOUND_REDIRECT', `more than ${maxRedirects} redirects from ${request.url}`);
    const next = parseUrl(location, url);
    if (next.origin !== url.origin) headers = headers.filter(([name]) => !CREDENTIAL_HEADERS.has(name.toLowerCase()));
    const status = res.statusCode as number;
    if (status === 303 ? method !== 'HEAD' : (status === 301 || status === 302) && method === 'POST') {
      method = 'GET';
      body = undefined;
      headers = headers.filter(([name]) => !/^content-/i.test(name));
    }
    url = next;
  }
}

function parseUrl(text: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw outboundError('ERR_OUTBOUND_URL', `${JSON.stringify(String(text).slice(0, 200))} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw outboundError('ERR_OUTBOUND_URL', `${url.protocol} URLs are not fetched (only http: and https:)`);
  return url;
}

function headerPairs(headers: OutboundRequest['headers']): [string, string][] {
  if (headers === undefined) return [];
  const list = Array.isArray(headers) ? (headers as readonly (readonly [string, string])[]) : Object.entries(headers as Record<string, string>);
  return list.map(([name, value]) => [String(name), String(value)]);
}

/** The host of a URL as a resolver and the policy take it: IPv6 without its brackets. */
const hostOf = (url: URL): string => (url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname);
const portOf = (url: URL): number => (url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80);

/** Resolves and checks the host: the checked addresses, or a refusal. */
async function resolved(url: URL, request: OutboundRequest): Promise<LookupAddress[]> {
  const host = hostOf(url);
  const port = portOf(url);
  if (isIP(host) !== 0) {
    const why = request.policy.refusal(host, host, port);
    if (why !== undefined) throw outboundError('ERR_OUTBOUND_REFUSED', `request to ${url.host} refused: ${why}`);
    return [{ address: host, family: isIP(host) }];
  }
  let addresses: readonly { address: string; family: number }[];
  try {
    addresses = request.lookup ? await request.lookup(host) : await dnsLookup(host, { all: true, verbatim: true });
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    throw outboundError(typeof code === 'string' ? code : 'ENOTFOUND', `${host} could not be resolved${typeof code === 'string' ? ` (${code})` : ''}`, err);
  }
  if (addresses.length === 0) throw outboundError('ENOTFOUND', `${host} has no address`);
  for (const { address } of addresses) {
    const why = request.policy.refusal(address, host, port);
    if (why !== undefined) throw outboundError('ERR_OUTBOUND_REFUSED', `request to ${url.host} refused: ${host} resolves to ${address}, and ${why}`);
  }
  return addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

/** One request (no redirects), to a checked address; resolves with the answer's head. */
async function once(url: URL, method: string, headers: [string, string][], body: Uint8Array | undefined, request: OutboundRequest, deadline: number): Promise<IncomingMessage> {
  const addresses = await resolved(url, request);
  const remaining = deadline - Date.now();
  if (remaining <= 0) throw outboundError('ETIMEDOUT', `${url.host} did not answer within ${request.timeoutMs} ms`);
  const host = hostOf(url);
  const port = portOf(url);
  const outgoing: OutgoingHttpHeaders = {};
  for (const [name, value] of headers) {
    const prior = outgoing[name];
    outgoing[name] = prior === undefined ? value : Array.isArray(prior) ? [...prior, value] : [String(prior), value];
  }
  if (body !== undefined && !headers.some(([name]) => name.toLowerCase() === 'content-length')) outgoing['content-length'] = String(body.byteLength);
  return new Promise<IncomingMessage>((resolve, reject) => {
    const fail = (err: unknown): void => {
      clearTimeout(timer);
      reject(err instanceof SvcError ? err : networkError(url, err));
    };
    const options = {
      method,
      headers: outgoing,
      // A fresh connection each time (no pool, no proxy from the environment) to the addresses
      // checked above, unless the caller pools its own (see OutboundRequest.agents).
      agent: (url.protocol === 'https:' ? request.agents?.https : request.agents?.http) ?? (false as const),
      lookup: ((_name: string, opts: LookupOptions, callback: (...args: unknown[]) => void): void => {
        const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : opts.family;
        const usable = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
        if (usable.length === 0) return callback(Object.assign(new Error(`${host} has no IPv${String(family)} address`), { code: 'ENOTFOUND' }));
        if (opts.all === true) callback(null, usable);
        else callback(null, (usable[0] as LookupAddress).address, (usable[0] as LookupAddress).family);
      }) as LookupFunction,
      ...(url.username !== '' || url.password !== '' ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
      ...(request.signal ? { signal: request.signal } : {}),
    };
    let req: ClientRequest;
    try {
      req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options);
    } catch (err) {
      reject(networkError(url, err));
      return;
    }
    const timer = setTimeout(() => req.destroy(outboundError('ETIMEDOUT', `${url.host} did not answer within ${request.timeoutMs} ms`)), remaining);
    req.once('socket', (socket: Socket) => {
      // The address connected to, checked again (an IPv4-mapped peer is decided as its IPv4 address).
      const check = (): void => {
        const peer = socket.remoteAddress;
        const why = peer === undefined ? 'no peer address' : request.policy.refusal(peer, host, port);
        if (why !== undefined) req.destroy(outboundError('ERR_OUTBOUND_REFUSED', `request to ${url.host} refused: connected to ${why}`));
      };
      // A pooled connection (agents) is connected already: checked now, no listener left on it.
      if (socket.connecting) socket.once('connect', check);
      else check();
    });
    req.once('error', fail);
    req.once('response', (res) => {
      clearTimeout(timer);
      resolve(res);
    });
    req.end(body);
  });
}

function networkError(url: URL, err: unknown): SvcError {
  const code = (err as { code?: unknown } | null)?.code;
  const name = typeof code === 'string' ? code : 'ECONNRESET';
  const message = name === 'ABORT_ERR' ? `request to ${url.host} aborted` : `request to ${url.host} failed: ${err instanceof Error ? err.message : String(err)}`;
  return outboundError(name, message, err);
}

/** Reads the body within the size and time limits, decoding it when asked to. */
async function readAll(res: IncomingMessage, request: OutboundRequest, deadline: number): Promise<Omit<OutboundResponse, 'url' | 'redirected'>> {
  const limit = request.maxBytes;
  const cut = request.truncate === true && request.decode !== true;
  const tooLarge = (): SvcError => outboundError('ERR_OUTBOUND_TOO_LARGE', `the answer is larger than ${limit} bytes`);
  const declared = Number(res.headers['content-length']);
  if (!cut && Number.isFinite(declared) && declared > limit) {
    res.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => res.destroy(outboundError('ETIMEDOUT', `the answer did not arrive within ${request.timeoutMs} ms`)), Math.max(0, deadline - Date.now()));
    res.on('data', (chunk: Buffer) => {
      if (truncated) return;
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (!cut) res.destroy(tooLarge());
      else {
        // Enough of it: the start is kept, the rest is neither read nor waited for.
        chunks.push(chunk.subarray(0, chunk.length - (size - limit)));
        truncated = true;
        clearTimeout(timer);
        resolve();
        res.destroy();
      }
    });
    res.once('end', () => {
      clearTimeout(timer);
      resolve();
    });
    res.once('error', (err) => {
      clearTimeout(timer);
      reject(err instanceof SvcError ? err : outboundError('ECONNRESET', `the answer was cut off: ${err.message}`, err));
    });
    res.once('close', () => {
      clearTimeout(timer);
      if (!res.complete) reject(res.errored instanceof SvcError ? res.errored : outboundError('ECONNRESET', 'the answer was cut off'));
    });
  });
  let body: Buffer = Buffer.concat(chunks);
  const headers: [string, string][] = [];
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.push([res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string]);
  const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (request.decode === true && (encoding === 'gzip' || encoding === 'x-gzip' || encoding === 'deflate' || encoding === 'br')) {
    body = await decoded(body, encoding, limit).catch((err: unknown) => {
      throw (err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE' ? tooLarge() : outboundError('ECONNRESET', `the answer's ${encoding} body cannot be decoded`, err);
    });
    // The body handed on is decoded: its encoding and length headers no longer describe it.
    for (let i = headers.length - 1; i >= 0; i--) if (/^content-(encoding|length)$/i.test((headers[i] as [string, string])[0])) headers.splice(i, 1);
  }
  return { status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers, body, ...(truncated ? { truncated } : {}) };
}

function decoded(body: Buffer, encoding: string, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, out: Buffer): void => (err ? reject(err) : resolve(out));
    if (encoding === 'br') brotliDecompress(body, { maxOutputLength: limit }, done);
    else if (encoding === 'deflate') inflate(body, { maxOutputLength: limit }, done);
    else gunzip(body, { maxOutputLength: limit }, done);
  });
}
