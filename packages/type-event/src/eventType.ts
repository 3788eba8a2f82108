import { coreRangeOf, defineResourceType, SvcError } from '@svc/core';
import type { Context, EventScripts, Reply, ResourceImplementation, ResourceType } from '@svc/core';

/** The Event resource has no settings: its behaviour lives in its get.js and post.js scripts. */
export type EventSettings = Record<string, never>;

/** The events an Event resource runs, in the spec's order: On GET (get.js), On POST (post.js). */
export type EventName = 'get' | 'post';

/** The script files an Event resource loads, by event. */
export const EVENT_FILES: Readonly<Record<EventName, string>> = { get: 'get.js', post: 'post.js' };

/**
 * The Content-Type of a string result. Deployd sent strings as HTML, and apps rely on it for pages
 * such as "your address is confirmed"; `nosniff` keeps browsers from reading anything else into it.
 */
export const STRING_RESULT_TYPE = 'text/html; charset=utf-8';

/**
 * The names an Event script sees beside the common Script API (ctx, me, query, internal, isRoot,
 * cancel, emit, svc, ...): `url` is the path below the resource ('/' for the resource itself),
 * `parts` its segments, `query` the query string object and `body` the request body (`{}` when the
 * request has none).
 */
export interface EventLocals {
  url: string;
  parts: string[];
  query: Record<string, unknown>;
  body: unknown;
}

/** The locals of one run, from the request. */
export function eventLocals(ctx: Context): EventLocals {
  return { url: ctx.url, parts: [...ctx.parts], query: ctx.query, body: ctx.body ?? {} };
}

/**
 * Turns what a script passed to setResult() into the reply: a string is sent as it is (as HTML,
 * like Deployd); any other value as JSON with 200. No setResult(), or setResult(undefined),
 * answers 204 with no body.
 */
export function resultReply(resultSet: boolean, result: unknown): Reply {
  if (!resultSet || result === undefined) return { status: 204 };
  if (typeof result === 'string') {
    return { status: 200, body: result, headers: { 'content-type': STRING_RESULT_TYPE, 'x-content-type-options': 'nosniff' } };
  }
  return { status: 200, body: result };
}

function eventOf(method: string): EventName | undefined {
  if (method === 'GET') return 'get';
  if (method === 'POST') return 'post';
  return undefined;
}

/** Handles requests to one Event resource with its scripts. */
export function createEventResource(scripts: EventScripts): ResourceImplementation {
  const allowed = (['get', 'post'] as const).filter((e) => scripts.has(e)).map((e) => e.toUpperCase());
  return {
    async handle(ctx: Context): Promise<Reply> {
      const event = eventOf(ctx.method);
      if (event === undefined || !scripts.has(event)) {
        const message = allowed.length === 0 ? 'this event resource has no scripts yet (add get.js or post.js)' : `${ctx.method} is not handled here; use ${allowed.join(' or ')}`;
        throw new SvcError('METHOD_NOT_ALLOWED', message, { headers: { allow: allowed.join(', ') } });
      }
      const outcome = await scripts.run(event, ctx, { object: {}, locals: { ...eventLocals(ctx) } });
      return resultReply(outcome.resultSet, outcome.result);
    },
  };
}

/**
 * The Event resource type: a GET to the resource or any path below it runs On GET (get.js), a
 * POST runs On POST (post.js), and the response is what the script passed to setResult().
 */
export const eventType: ResourceType<EventSettings> = defineResourceType<EventSettings>({
  name: 'Event',
  core: coreRangeOf(import.meta.url),
  settings: {},
  events: [EVENT_FILES.get, EVENT_FILES.post],
  client: {},
  dashboard: { events: [{ file: EVENT_FILES.get, label: 'On GET' }, { file: EVENT_FILES.post, label: 'On POST' }] },
  create: (context) => createEventResource(context.scripts),
});
