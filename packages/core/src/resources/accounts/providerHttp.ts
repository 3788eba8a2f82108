import { SvcError } from '../../errors.js';

const FETCH_TIMEOUT_MS = 10_000;
/** A provider's answer is a small JSON document; more is not read. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * A JSON object from a provider (`list`: a JSON array is answered as `{list}`), or a 502 naming
 * the provider: no redirects followed, a time and a size limit. An error answer that is a JSON
 * object with `error` (OAuth2's form, also Slack's `{ok: false, error}`) is answered for the
 * caller to refuse.
 */
export async function fetchJson(provider: string, url: string, init: RequestInit, list = false): Promise<Record<string, unknown>> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    const declared = Number(res.headers.get('content-length') ?? 0);
    if (declared > MAX_ANSWER_BYTES) throw new Error(`an answer of ${declared} bytes`);
    text = await res.text();
  } catch (err) {
    throw new SvcError('BAD_GATEWAY', `${provider} did not answer`, { cause: err });
  }
  if (text.length > MAX_ANSWER_BYTES) throw new SvcError('BAD_GATEWAY', `${provider} answered more than ${MAX_ANSWER_BYTES} bytes`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new SvcError('BAD_GATEWAY', `${provider} answered something other than JSON`, { cause: err });
  }
  if (list && Array.isArray(body)) return { list: body };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new SvcError('BAD_GATEWAY', `${provider} answered something other than a JSON object`);
  const object = body as Record<string, unknown>;
  if (!res.ok && typeof object.error !== 'string') throw new SvcError('BAD_GATEWAY', `${provider} answered ${res.status}`);
  return object;
}
