export { createRealtime, SESSION_ENDED_EVENT, SESSION_EVENT } from './createRealtime.js';
export { LIVE_EVENT, SUBSCRIBE_EVENT, UNSUBSCRIBE_EVENT } from './internal/live/protocol.js';
export type { EndReason, LiveMessage, SubscribeAnswer, SubscribeRequest } from './internal/live/protocol.js';
export type { FollowedChange, LiveOptions, RealtimeOptions, SessionAck, SocketBinding, SocketRealtime } from './createRealtime.js';
