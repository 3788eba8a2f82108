/** The server-side events (Socket.IO serverSideEmit) by which processes tell each other about sessions. */
export const PEER_ENDED = 'svc:sessions-ended';
export const PEER_MOVED = 'svc:session-moved';

/** Between processes: an end waits for every process's answer; a move does not. */
export interface PeerEvents {
  [PEER_ENDED]: (event: unknown, ack: (done: boolean) => void) => void;
  [PEER_MOVED]: (event: unknown) => void;
}

/** Session ids in one event at most (a sweep ends them in batches of 1000). */
const MAX_IDS = 10_000;

/** What one process tells the others about sessions (their sockets are bound by session). */
export type SessionEvent =
  /** These sessions ended: their sockets become anonymous. */
  | { t: 'end'; ids: string[] }
  /** A login moved the sockets of session `from` to session `to` of user `uid`. */
  | { t: 'move'; from: string; to: string; uid: string; lastSeen: number };

/** A session event from another process, or undefined when it is not one. */
export function parseSessionEvent(value: unknown): SessionEvent | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (v.t === 'end' && Array.isArray(v.ids) && v.ids.length <= MAX_IDS && v.ids.every((id) => typeof id === 'string')) return { t: 'end', ids: v.ids as string[] };
  if (v.t === 'move' && typeof v.from === 'string' && typeof v.to === 'string' && typeof v.uid === 'string' && typeof v.lastSeen === 'number') {
    return { t: 'move', from: v.from, to: v.to, uid: v.uid, lastSeen: v.lastSeen };
  }
  return undefined;
}
