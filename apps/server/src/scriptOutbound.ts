import { OutboundPolicy, outboundErrorCode, outboundFetch } from '@svc/core';
import type { Context, OutboundLookup } from '@svc/core';
import type { RunBudget } from '@svc/script-runtime';

/** app.json `outbound`: what event scripts' http, https and fetch may reach, and their limits. */
export interface OutboundSettings {
  /** Addresses, ranges and host names beyond the public Internet (OutboundPolicy). */
  allow?: string[];
  /** Time for one call, redirects and the whole body included, ms (default 10 s). */
  timeoutMs?: number;
  /** Largest answer body (and request body), bytes (default 2 MB). */
  maxBytes?: number;
  /** Redirects a fetch() follows (default 5). */
  maxRedirects?: number;
  /** Calls one request's scripts may make in all, its internal calls' included (default 20). */
  requestCalls?: number;
  /** Calls of one request under way at once; more wait for one to end (default 4). */
  concurrent?: number;
}

export const OUTBOUND_DEFAULTS = { timeoutMs: 10_000, maxBytes: 2 * 1024 * 1024, maxRedirects: 5, requestCalls: 20, concurrent: 4 } as const;

/** What the isolate's http/https/fetch send (isolate-node-web.ts NetRequest), unchecked. */
type NetReply = { status: number; statusText: string; headers: [string, string][]; body: string; url: string; redirected: boolean } | { error: { message: string; code: string } };

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
const MAX_HEADERS = 100;

/** One request's outbound calls: counted when made (before any wait), and those under way. */
interface Usage {
  calls: number;
  active: number;
  waiting: (() => void)[];
}

const failure = (message: string, code: string): NetReply => ({ error: { message, code } });

/**
 * The `#net` host function of event scripts: one outbound HTTP request through the guard of
 * @svc/core (addresses checked after DNS and on every redirect, app.json outbound.allow), within
 * the request's budgets: its script deadline (requestWallMs) bounds every call, and it may make
 * `requestCalls` calls in all, `concurrent` at once. The isolate's request is untrusted: every
 * field is checked here. Failures are answered (`{ error: { message, code } }`), not thrown: the
 * script's http gets an 'error' event, its fetch a rejection.
 */
export function createScriptOutbound(settings: OutboundSettings | undefined, options: { lookup?: OutboundLookup } = {}) {
  const policy = new OutboundPolicy(settings?.allow ?? []);
  const limits = { ...OUTBOUND_DEFAULTS, ...settings };
  const usage = new WeakMap<object, Usage>();

  async function call(ctx: Context, budget: RunBudget, raw: unknown): Promise<NetReply> {
    // Counted before anything waits: a burst of calls in one turn sees each other.
    let used = usage.get(ctx.scope);
    if (used === undefined) usage.set(ctx.scope, (used = { calls: 0, active: 0, waiting: [] }));
    const spent = budget.failure;
    if (spent) return failure(`${spent.message}: no more outbound calls`, 'ERR_SVC_BUDGET');
    if (used.calls >= limits.requestCalls) return failure(`the request's scripts made ${limits.requestCalls} outbound calls already (app.json outbound.requestCalls)`, 'ERR_SVC_BUDGET');
    used.calls++;
    const request = parse(raw, limits.maxBytes);
    if (typeof request === 'string') return failure(request, 'ERR_INVALID_ARG_VALUE');
    if (used.active >= limits.concurrent) await new Promise<void>((resolve) => (used as Usage).waiting.push(resolve));
    used.active++;
    try {
      const left = budget.deadline - Date.now();
      // Read again: the budget may have run out while this call waited for a slot.
      const stopped = (budget as RunBudget).failure;
      if (left <= 0 || stopped !== undefined) return failure(`${stopped?.message ?? "the request's scripts ran past their time budget"}: no more outbound calls`, 'ERR_SVC_BUDGET');
      const res = await outboundFetch({
        ...request,
        policy,
        timeoutMs: Math.min(limits.timeoutMs, left),
        maxBytes: limits.maxBytes,
        maxRedirects: limits.maxRedirects,
        ...(options.lookup ? { lookup: options.lookup } : {}),
      });
      return { status: res.status, statusText: res.statusText, headers: res.headers, body: res.body.toString('base64'), url: res.url, redirected: res.redirected };
    } catch (err) {
      return failure(err instanceof Error ? err.message : String(err), outboundErrorCode(err) ?? 'ECONNRESET');
    } finally {
      used.active--;
      used.waiting.shift()?.();
    }
  }

  return {
    policy,
    /** The host function for one request's runs. */
    hostFunction: (ctx: Context, budget: () => RunBudget) => (raw: unknown) => call(ctx, budget(), raw),
  };
}

/** The checked request, or why it cannot be sent. */
function parse(raw: unknown, maxBytes: number): { url: string; method: string; headers: [string, string][]; body?: Buffer; redirect: 'follow' | 'manual' | 'error'; decode: boolean } | string {
  if (raw === null || typeof raw !== 'object') return 'an outbound request must be an object';
  const r = raw as Record<string, unknown>;
  if (typeof r.url !== 'string' || r.url.length > 16 * 1024) return 'the URL must be a string of at most 16 KB';
  const method = typeof r.method === 'string' ? r.method : 'GET';
  if (!TOKEN.test(method)) return `${JSON.stringify(method.slice(0, 64))} is not an HTTP method`;
  if (!Array.isArray(r.headers) || r.headers.length > MAX_HEADERS) return `headers must be at most ${MAX_HEADERS} [name, value] pairs`;
  const headers: [string, string][] = [];
  for (const pair of r.headers as unknown[]) {
    if (!Array.isArray(pair) || typeof pair[0] !== 'string' || typeof pair[1] !== 'string' || !TOKEN.test(pair[0]) || /[\r\n\0]/.test(pair[1]) || pair[1].length > 16 * 1024) {
      return `a header must be a [name, value] pair of strings (a token and a value without line breaks): ${JSON.stringify(pair).slice(0, 100)}`;
    }
    headers.push([pair[0], pair[1]]);
  }
  let body: Buffer | undefined;
  if (r.body !== undefined) {
    if (typeof r.body !== 'string' || r.body.length > Math.ceil((maxBytes * 4) / 3) + 4) return `the request body must be at most ${maxBytes} bytes (app.json outbound.maxBytes)`;
    body = Buffer.from(r.body, 'base64');
  }
  const redirect = r.redirect === 'manual' || r.redirect === 'error' ? r.redirect : 'follow';
  return { url: r.url, method, headers, ...(body !== undefined ? { body } : {}), redirect, decode: r.decode === true };
}
