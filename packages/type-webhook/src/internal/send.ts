import { outboundErrorCode, outboundFetch } from '@svc/core';
import type { Agent as HttpAgent } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import type { OutboundLookup, OutboundPolicy, OutboundResponse } from '@svc/core';
import { SIGNATURE_HEADER, signPayload } from '../signature.js';

/** One attempt to send. */
export interface SendInput {
  url: URL;
  body: string;
  secret: string;
  /** The event's id and kind, and the attempt number, as headers. */
  id: string;
  event: string;
  attempt: number;
  policy: OutboundPolicy;
  timeoutMs: number;
  excerptBytes: number;
  maxRedirects: number;
  signal: AbortSignal;
  /** The webhook's keep-alive agents: its deliveries reuse connections to the receiver. */
  agents: { http: HttpAgent; https: HttpsAgent };
  lookup?: OutboundLookup;
}

/** How an attempt went. */
export interface SendOutcome {
  ok: boolean;
  /** The receiver's status (the last one, after redirects), when it answered. */
  status?: number;
  error?: string;
  excerpt: string;
  durationMs: number;
  /** A Retry-After the receiver asked for (429, 503), ms. */
  retryAfterMs?: number;
}

const USER_AGENT = 'svc-webhook/1';

/**
 * POSTs a delivery through the outbound guard of @svc/core (every address checked after DNS, on
 * every redirect, app.json outbound.allow), signed with a fresh timestamp, within `timeoutMs`
 * for the whole attempt. Only the first `excerptBytes` of the answer are read. 307 and 308 are
 * followed (they keep the POST and its body), each hop checked again; 301, 302 and 303 would
 * turn the POST into a GET without the payload, so they fail the attempt (as other webhook
 * senders do). A 2xx status is a delivery.
 */
export async function sendDelivery(input: SendInput): Promise<SendOutcome> {
  const started = Date.now();
  const deadline = started + input.timeoutMs;
  const timestamp = Math.floor(started / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'svc-webhook-id': input.id,
    'svc-webhook-event': input.event,
    'svc-webhook-attempt': String(input.attempt),
    [SIGNATURE_HEADER]: signPayload(input.secret, input.body, timestamp),
  };
  let url = input.url.href;
  for (let hops = 0; ; hops++) {
    const left = deadline - Date.now();
    if (left <= 0) return { ok: false, error: `no answer within ${input.timeoutMs} ms`, excerpt: '', durationMs: Date.now() - started };
    let res: OutboundResponse;
    try {
      res = await outboundFetch({ url, method: 'POST', headers, body: input.body, redirect: 'manual', policy: input.policy, timeoutMs: left, maxBytes: input.excerptBytes, truncate: true, signal: input.signal, agents: input.agents, ...(input.lookup ? { lookup: input.lookup } : {}) });
    } catch (err) {
      const code = outboundErrorCode(err);
      const message = err instanceof Error ? err.message : String(err);
      return { ok: false, error: code !== undefined && !message.includes(code) ? `${message} (${code})` : message, excerpt: '', durationMs: Date.now() - started };
    }
    const excerpt = textOf(res.body);
    const location = headerOf(res, 'location');
    if ((res.status === 307 || res.status === 308) && location !== undefined) {
      if (hops >= input.maxRedirects) return { ok: false, status: res.status, error: `more than ${input.maxRedirects} redirects (app.json outbound.maxRedirects)`, excerpt, durationMs: Date.now() - started };
      try {
        url = new URL(location, url).href;
      } catch {
        return { ok: false, status: res.status, error: `redirected to ${JSON.stringify(location.slice(0, 200))}, which is not a URL`, excerpt, durationMs: Date.now() - started };
      }
      continue;
    }
    const durationMs = Date.now() - started;
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status, excerpt, durationMs };
    const retryAfterMs = res.status === 429 || res.status === 503 ? retryAfter(headerOf(res, 'retry-after')) : undefined;
    const error = res.status >= 300 && res.status < 400 ? `answered ${res.status}${location ? ` (to ${location.slice(0, 200)})` : ''}: a webhook follows only 307 and 308, which keep the POST` : `answered ${res.status}`;
    return { ok: false, status: res.status, error, excerpt, durationMs, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
}

function headerOf(res: OutboundResponse, name: string): string | undefined {
  for (const [key, value] of res.headers) if (key.toLowerCase() === name) return value;
  return undefined;
}

/** The start of an answer as text (invalid UTF-8 replaced; a character cut at the end dropped). */
function textOf(body: Buffer): string {
  return body.toString('utf8').replace(/\uFFFD$/, '');
}

/** Retry-After as seconds or an HTTP date, in ms; undefined when it is neither. */
function retryAfter(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (/^\d{1,9}$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
