/**
 * @svc/type-event: the Event resource. Its On GET, On POST, On PUT and On DELETE scripts answer
 * requests with setResult(); the default export is the resource type the server loads.
 */
import { eventType } from './eventType.js';

export { eventType, createEventResource, eventLocals, resultReply, EVENT_FILES, STRING_RESULT_TYPE } from './eventType.js';
export type { EventLocals, EventName, EventSettings } from './eventType.js';
export default eventType;
