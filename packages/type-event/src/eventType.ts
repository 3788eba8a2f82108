import { coreRangeOf, createRequestScope, defineResourceType, SvcError } from '@svc/core';
import type { Context, EventScripts, Reply, ResourceImplementation, ResourceType, ResourceTypeContext } from '@svc/core';
import { parseSchedule, startSchedule } from './schedule.js';
import type { RunOutcome, Schedule } from './schedule.js';

/**
 * The Event resource's settings: its behaviour lives in its scripts; `schedule` (cron) runs its
 * schedule.js at those times, read in `timezone`.
 */
export interface EventSettings {
  schedule?: string;
  timezone?: string;
}

/**
 * The events an Event resource runs: the spec's On GET (get.js) and On POST (post.js), and, as
 * dpd-event 1.1 did, On PUT (put.js) and On DELETE (delete.js).
 */
export type EventName = 'get' | 'post' | 'put' | 'delete' | 'schedule';

/** The script files an Event resource loads, by event (schedule.js: On Schedule, run by `schedule`). */
export const EVENT_FILES: Readonly<Record<EventName, string>> = { get: 'get.js', post: 'post.js', put: 'put.js', delete: 'delete.js', schedule: 'schedule.js' };

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

/** What a scheduled run's script sees as `schedule`. */
export interface ScheduleLocal {
  /** The planned time of this run (ISO 8601, UTC), not when it started. */
  time: string;
  /** The cron pattern from config.json. */
  pattern: string;
  timezone: string;
}

/**
 * The request a scheduled run stands in for: there is none, so the script runs as root (`isRoot`
 * and `internal` true, its svc.* calls act as root), with no user, no query, no body, no headers
 * and a session of its own that nothing stores; `ctx.method` is 'SCHEDULE'. Each run has its own
 * scope: its own script budget (scripts.requestCpuMs / requestWallMs) and recursion counts.
 */
export function scheduledContext(resource: string): Context {
  return {
    method: 'SCHEDULE',
    originalMethod: 'SCHEDULE',
    url: '/',
    parts: [],
    query: {},
    body: undefined,
    bodyKind: 'none',
    headers: {},
    session: { id: `schedule:${resource}`, isNew: true },
    me: undefined,
    isRoot: true,
    internal: true,
    scope: createRequestScope(`schedule ${resource}`),
  };
}

/** Runs schedule.js for one planned time: 'cancelled' when it called cancel(); rejects when it failed. */
export async function runScheduled(scripts: EventScripts, resource: string, schedule: Schedule, planned: Date): Promise<RunOutcome> {
  const ctx = scheduledContext(resource);
  const local: ScheduleLocal = { time: planned.toISOString(), pattern: schedule.pattern, timezone: schedule.timezone };
  try {
    await scripts.run(EVENT_FILES.schedule.slice(0, -3), ctx, { object: {}, locals: { url: '/', parts: [], query: {}, body: {}, schedule: local } });
    return 'ok';
  } catch (err) {
    if (err instanceof SvcError && err.code === 'CANCELLED') return 'cancelled';
    throw err;
  }
}

/**
 * An Event resource: its request handler and, when config.json has a `schedule`, the timers that
 * run its schedule.js. A schedule that does not parse stops the start (or the reload), naming the
 * resource.
 */
export function createEvent(context: ResourceTypeContext<EventSettings>): ResourceImplementation {
  const resource = createEventResource(context.scripts);
  const { schedule: pattern, timezone } = context.settings;
  if (pattern === undefined) {
    if (context.scripts.has('schedule')) context.logger.warn(`resource ${context.name}: schedule.js never runs: config.json has no "schedule"`);
    return resource;
  }
  const schedule = parseSchedule(context.name, pattern, timezone);
  if (!context.jobs) throw new Error(`resource ${context.name}: this server runs no scheduled jobs, so "schedule" cannot be kept`);
  if (!context.scripts.has('schedule')) {
    context.logger.warn(`resource ${context.name}: "schedule" is set but there is no schedule.js: nothing runs`);
    return resource;
  }
  if (context.jobs.scope === 'each') {
    context.logger.warn(`resource ${context.name}: schedule "${pattern}" runs in each process of the app (--db without --redis); pass --redis to run it once across them`);
  }
  const handle = startSchedule({
    resource: context.name,
    schedule,
    jobs: context.jobs,
    logger: context.logger,
    run: (planned) => runScheduled(context.scripts, context.name, schedule, planned),
  });
  return { ...resource, close: () => handle.stop() };
}

/**
 * The Event resource type (Deployd's `EventResource`): a GET to the resource or any path below it
 * runs On GET (get.js), a POST On POST (post.js), a PUT On PUT (put.js), a DELETE On DELETE
 * (delete.js), and the response is what the script passed to setResult().
 */
export const eventType: ResourceType<EventSettings> = defineResourceType<EventSettings>({
  name: 'Event',
  core: coreRangeOf(import.meta.url),
  settings: {
    schedule: {
      type: 'string',
      description: 'Cron schedule of schedule.js, run as root: "*/15 * * * *" (minute hour day month weekday), 6 fields with seconds first, or @hourly, @daily...',
    },
    timezone: { type: 'string', default: 'UTC', description: 'Time zone the schedule is read in (IANA name: "Europe/Paris")' },
  },
  events: [EVENT_FILES.get, EVENT_FILES.post, EVENT_FILES.put, EVENT_FILES.delete, EVENT_FILES.schedule],
  client: {},
  dashboard: {
    events: [
      { file: EVENT_FILES.get, label: 'On GET' },
      { file: EVENT_FILES.post, label: 'On POST' },
      { file: EVENT_FILES.put, label: 'On PUT' },
      { file: EVENT_FILES.delete, label: 'On DELETE' },
      { file: EVENT_FILES.schedule, label: 'On Schedule' },
    ],
  },
  create: createEvent,
});
