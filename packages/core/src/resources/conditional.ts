import { SvcError } from '../errors.js';
import type { Context, Reply } from '../types.js';

/**
 * Conditional requests on one object (docs/offline.md). An ETag is made from the answer the caller
 * gets (the JSON text of a GET by id), never from the store's revision: two callers who see
 * different properties of one object get different ETags, and a change to a property a caller may
 * not read leaves that caller's ETag as it was (the revision moves, the ETag does not, so it tells
 * nothing of what the caller cannot see). The store's revision only makes the write's
 * compare-and-set atomic (Store.update's condition).
 */

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The ETag of a JSON text: 64 bits of two 32-bit multiply-xor lanes over its UTF-16 code units
 * (cyrb53's mixing, both lanes kept), in hex, quoted. Not a cryptographic hash (it needs none: it
 * is made from what the caller already reads); @svc/client computes the same on
 * `JSON.stringify(object)` to name the version its offline writes were based on.
 */
export function etagOf(text: string): string {
  // The constants as int32 (`| 0`, the same bits for Math.imul): the lanes stay small integers in
  // V8 instead of starting as heap numbers above 2^31.
  let h1 = 0xdeadbeef | 0;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761 | 0);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507 | 0) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909 | 0);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507 | 0) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909 | 0);
  return `"${hex32(h2)}${hex32(h1)}"`;
}

/** Two hex digits per byte value. */
const HEX_BYTES: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * The 32 bits of `h` as 8 hex digits: what `(h >>> 0).toString(16).padStart(8, '0')` gives,
 * without the radix conversion of a number above 2^31 (a heap number), most of etagOf's time on
 * a short answer (bench/RESULTS.md, "Issue 39: GET by id and POST, round 6").
 */
function hex32(h: number): string {
  return (HEX_BYTES[h >>> 24] as string) + (HEX_BYTES[(h >>> 16) & 255] as string) + (HEX_BYTES[(h >>> 8) & 255] as string) + (HEX_BYTES[h & 255] as string);
}

/** A conditional header's entity tags (`*` alone: any), undefined when the request has none. */
export function conditionOf(ctx: Context, header: 'if-match' | 'if-none-match'): readonly string[] | '*' | undefined {
  if (ctx.internal) return undefined;
  const raw = ctx.req?.headers[header];
  if (raw === undefined) return undefined;
  const text = Array.isArray(raw) ? raw.join(',') : raw;
  if (text.trim() === '*') return '*';
  if (text.length > 4096) throw new SvcError('BAD_REQUEST', `${header} is too long`);
  // Weak tags compare as strong ones: svc's tags are made from the whole answer.
  return text.split(',').map((tag) => tag.trim().replace(/^W\//, '')).filter((tag) => tag !== '');
}

/** Whether a condition's tags name this ETag (`*`: any object). */
export function conditionHolds(condition: readonly string[] | '*', etag: string): boolean {
  return condition === '*' || condition.includes(etag);
}

/** The If-Match failure: 412 with the object as the caller may read it now, and its ETag. */
export function preconditionFailed(current: Record<string, unknown>): SvcError {
  const text = JSON.stringify(current);
  return new SvcError('PRECONDITION_FAILED', 'the object changed since the version named in If-Match', { current, headers: { etag: etagOf(text) } });
}

/** Whether a request is a GET of one object by id (`/<c>/<id>`). */
export function isGetById(ctx: Context): boolean {
  if (ctx.method !== 'GET' || ctx.parts.length !== 1) return false;
  const id = ctx.parts[0];
  return id !== '' && id !== 'count' && id !== 'aggregate';
}

/**
 * A GET by id's answer with its ETag, or 304 when If-None-Match names it. The body becomes the
 * JSON text it would have been written as (made once here, not again by the writer).
 */
export function taggedGet(ctx: Context, reply: Reply): Reply {
  if (reply.status !== 200 || reply.body === undefined || ctx.internal || ctx.req === undefined) return reply;
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  const etag = etagOf(text);
  const condition = conditionOf(ctx, 'if-none-match');
  // The plan that answered stays told (access line, /metrics), 304 or not.
  const plan = reply.plan === undefined ? {} : { plan: reply.plan };
  if (condition !== undefined && conditionHolds(condition, etag)) return { status: 304, headers: { etag }, ...plan };
  return { status: 200, body: text, headers: { ...reply.headers, 'content-type': JSON_TYPE, etag }, ...plan };
}

/** A client-chosen id for a create (`POST` with `If-None-Match: *`): 16 to 64 of [A-Za-z0-9_-]. */
export function assertClientId(id: string): void {
  if (!/^[A-Za-z0-9_-]{16,64}$/.test(id)) throw new SvcError('BAD_REQUEST', 'an id chosen by the client must be 16 to 64 characters of A-Z, a-z, 0-9, _ and - (with If-None-Match: *)');
}

/** A conditional write found the object's revision moved since it was read: run it again. */
export const MOVED: unique symbol = Symbol('moved');
const MAX_CONDITIONAL_ATTEMPTS = 3;

/**
 * A conditional write lost its compare-and-set: run again when no event script ran in it (rules,
 * validation and reads only), else 409 at once, nothing written: the scripts' effects happened
 * once and a run again would repeat them (docs/offline.md). The client sends the request again.
 */
export function movedAfter(scriptsRan: boolean): typeof MOVED {
  if (scriptsRan) throw new SvcError('CONFLICT', 'the object changed while this write\'s event scripts ran; nothing was written: send it again', { headers: { 'retry-after': '0' } });
  return MOVED;
}

/**
 * Runs a conditional write (`attempt`) again while it answers {@link MOVED}, at most 3 times, then
 * answers 409: the object kept changing while it was being `doing` ('updated', 'deleted').
 */
export async function settled(attempt: () => Promise<Reply | typeof MOVED>, doing: string): Promise<Reply> {
  for (let tries = 1; ; tries++) {
    const reply = await attempt();
    if (reply !== MOVED) return reply;
    if (tries === MAX_CONDITIONAL_ATTEMPTS) throw new SvcError('CONFLICT', `the object kept changing while it was being ${doing}; try again`);
  }
}
