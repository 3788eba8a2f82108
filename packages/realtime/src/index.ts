export { createRealtime, SESSION_EVENT } from './createRealtime.js';
export type { RealtimeOptions, SessionAck, SocketBinding, SocketRealtime } from './createRealtime.js';
