import { coreRangeOf, defineResourceType, SvcError } from '@svc/core';
import type { Context, EventScripts, Reply, ResourceImplementation, ResourceType } from '@svc/core';

/** The Event resource has no settings: its behaviour lives in its get.js, post.js, put.js and delete.js scripts. */
export type EventSettings = Record<string, never>;

/**
 * The events an Event resource runs: the spec's On GET (get.js) and On POST (post.js), and, as
 * dpd-event 1.1 did, On PUT (put.js) and On DELETE (delete.js).
 */
export type EventName = 'get' | 'post' | 'put' | 'delete';

/** The script files an Event resource loads, by event. */
export const EVENT_FILES: Readonly<Record<EventName, string>> = { get: 'get.js', post: 'post.js', put: 'put.js', delete: 'delete.js' };

/** The HTTP method that runs each event (HEAD is answered as GET by the server). */
const METHOD_EVENTS: Readonly<Record<string, EventName>> = { GET: 'get', POST: 'post', PUT: 'put', DELETE: 'delete' };

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
 * answers `this` with 200: dpd-event's result starts as the script's `this` (`{}` unless the
 * script gave it properties), and apps read that `{}` as success.
 */
export function resultReply(resultSet: boolean, result: unknown, object: Record<string, unknown> = {}): Reply {
  if (!resultSet || result === undefined) return { status: 200, body: object };
  if (typeof result === 'string') {
    return { status: 200, body: result, headers: { 'content-type': STRING_RESULT_TYPE, 'x-content-type-options': 'nosniff' } };
  }
  return { status: 200, body: result };
}

/**
 * Handles requests to one Event resource with its scripts. A method with no script answers 404
 * "resource not found", as Deployd did when dpd-event passed the request on and nothing else took
 * it: Deployd apps test for that 404 (and the spec names no other answer).
 */
export function createEventResource(scripts: EventScripts): ResourceImplementation {
  return {
    async handle(ctx: Context): Promise<Reply> {
      const event = Object.hasOwn(METHOD_EVENTS, ctx.method) ? METHOD_EVENTS[ctx.method] : undefined;
      if (event === undefined || !scripts.has(event)) throw new SvcError('NOT_FOUND', 'resource not found');
      const outcome = await scripts.run(event, ctx, { object: {}, locals: { ...eventLocals(ctx) } });
      return resultReply(outcome.resultSet, outcome.result, outcome.object);
    },
  };
}

/**
 * The Event resource type (Deployd's `EventResource`): a GET to the resource or any path below it
 * runs On GET (get.js), a POST On POST (post.js), a PUT On PUT (put.js), a DELETE On DELETE
 * (delete.js), and the response is what the script passed to setResult().
 */
export const eventType: ResourceType<EventSettings> = defineResourceType<EventSettings>({
  name: 'Event',
  core: coreRangeOf(import.meta.url),
  settings: {},
  events: [EVENT_FILES.get, EVENT_FILES.post, EVENT_FILES.put, EVENT_FILES.delete],
  client: {},
  dashboard: {
    events: [
      { file: EVENT_FILES.get, label: 'On GET' },
      { file: EVENT_FILES.post, label: 'On POST' },
      { file: EVENT_FILES.put, label: 'On PUT' },
      { file: EVENT_FILES.delete, label: 'On DELETE' },
    ],
  },
  create: (context) => createEventResource(context.scripts),
});
