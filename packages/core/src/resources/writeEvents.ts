import { isPlainObject } from '../query/parseQueryString.js';
import type { Context } from '../types.js';
import type { CollectionEvent, CollectionEventRunner, EventOutcome } from './events.js';

/**
 * The event steps of a Collection's writes around the store (Deployd 1.2's order): On
 * BeforeRequest first, On Validate then On Post or On Put, On AfterCommit once stored.
 */

/**
 * On BeforeRequest (Deployd 1.2): before any other event of a GET, POST, PUT or DELETE, with
 * `event` the method; it may cancel, change `query`, and (POST, PUT) change the body as `this`.
 */
export async function beforeRequest(events: CollectionEventRunner, ctx: Context): Promise<void> {
  if (ctx.isRoot && skipEventsAsked(ctx, isPlainObject(ctx.body) ? ctx.body : undefined)) return;
  const hasBody = (ctx.method === 'POST' || ctx.method === 'PUT') && isPlainObject(ctx.body);
  const outcome = await events.run('beforerequest', { ctx, object: hasBody ? { ...(ctx.body as Record<string, unknown>) } : {}, locals: { event: ctx.method } });
  if (outcome.query !== undefined) ctx.query = outcome.query;
  if (hasBody) ctx.body = outcome.object;
}

/**
 * On AfterCommit (Deployd 1.2): after a write is stored, with the stored object as `this` and
 * `event` the method. The write stands whatever the script does; its errors go to `warn`.
 */
export async function afterCommit(
  events: CollectionEventRunner,
  ctx: Context,
  object: Record<string, unknown>,
  previous: Record<string, unknown> | undefined,
  warn: (message: string) => void,
): Promise<void> {
  if (!events.has('aftercommit') || (ctx.isRoot && skipEventsAsked(ctx, isPlainObject(ctx.body) ? ctx.body : undefined))) return;
  try {
    await events.run('aftercommit', { ctx, object: { ...object }, previous: previous ?? {}, locals: { event: ctx.method } });
  } catch (err) {
    warn(`On AfterCommit: ${err instanceof Error ? err.message : String(err)} (the write is stored)`);
  }
}

/**
 * On Validate, then On Post or On Put, unless a script cancelled or reported errors. As in
 * Deployd, the two share one object: what On Validate hid or protected still is in On Post/Put,
 * and on an update `id` is protected from the start. `id` (create) is given before On Post.
 */
export async function runWriteEvents(
  events: CollectionEventRunner,
  ctx: Context,
  event: CollectionEvent,
  object: Record<string, unknown>,
  previous: Record<string, unknown>,
  id?: string,
): Promise<EventOutcome> {
  let hidden: readonly string[] = [];
  let protectedProps: readonly string[] = event === 'put' ? ['id'] : [];
  let current = object;
  for (const name of ['validate', event] as const) {
    if (name === event && id !== undefined) current = { ...current, id };
    if (!events.has(name)) continue;
    const outcome = await events.run(name, { ctx, object: current, previous, hidden, protectedProps });
    current = outcome.object;
    hidden = outcome.hidden;
    protectedProps = outcome.protectedProps;
  }
  return { object: current, hidden, protectedProps };
}

/** Root's `$skipEvents` (query or body): the write runs no event script. */
export function skipEventsAsked(ctx: Context, body: Record<string, unknown> | undefined): boolean {
  const q = ctx.query.$skipEvents;
  return q === true || q === 'true' || body?.$skipEvents === true;
}

/** A precondition is the query without its id and commands. */
export function preconditionOf(query: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(query)) {
    if (key === 'id' || key === '_method') continue;
    if (key.startsWith('$') && key !== '$or' && key !== '$and' && key !== '$nor') continue;
    out[key] = query[key];
  }
  return out;
}
