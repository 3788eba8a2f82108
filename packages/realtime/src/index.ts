export { createRealtime, SESSION_ENDED_EVENT, SESSION_EVENT } from './createRealtime.js';
export type { RealtimeOptions, SessionAck, SocketBinding, SocketRealtime } from './createRealtime.js';
