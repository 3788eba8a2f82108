/**
 * @svc/type-event: the Event resource. Its On GET, On POST, On PUT and On DELETE scripts answer
 * requests with setResult(); the default export is the resource type the server loads.
 */
import { eventType } from './eventType.js';

export { eventType, createEvent, createEventResource, eventLocals, resultReply, runScheduled, scheduledContext, EVENT_FILES, STRING_RESULT_TYPE } from './eventType.js';
export type { EventLocals, EventName, EventSettings, ScheduleLocal } from './eventType.js';
export { parseSchedule, startSchedule, CLAIM_TTL_MS, MAX_TIMER_MS } from './schedule.js';
export type { RunOutcome, Schedule, ScheduleHandle, ScheduleOptions } from './schedule.js';
export default eventType;
