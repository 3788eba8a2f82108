import type { Doc } from '@svc/core';

/** Client -> server: start a live query. Answered (ack) with a {@link SubscribeAnswer}. */
export const SUBSCRIBE_EVENT = 'svc:subscribe';
/** Client -> server: end a live query by its id. */
export const UNSUBSCRIBE_EVENT = 'svc:unsubscribe';
/** Server -> client: one {@link LiveMessage} of a live query. */
export const LIVE_EVENT = 'svc:live';

/** What a client sends to subscribe. */
export interface SubscribeRequest {
  /** The client's own id for this subscription (unique on its socket), 1 to 64 characters. */
  id: string;
  /** The collection's path, '/todos'. */
  path: string;
  /** GET's query language: a filter with `$sort`, `$limit`, `$skip`, `$fields`. */
  query?: Record<string, unknown>;
  /** True: the objects matching now come first, as a `snapshot` message. */
  snapshot?: boolean;
  /** Resume after this sequence number (the last one this client got): missed events, or a fresh snapshot. */
  since?: number;
}

/** The answer to a subscribe: the collection's sequence number at the start, or an error as HTTP answers it. */
export type SubscribeAnswer = { ok: true; seq: number } | { ok: false; error: { status: number; message: string } };

/** Why the server ended a subscription. */
export type EndReason = 'session-ended' | 'unsubscribed' | 'closed';

/** What a subscriber receives, in order; `seq` is the collection's sequence number of the write. */
export type LiveMessage =
  | { sub: string; seq: number; type: 'snapshot'; objects: Record<string, unknown>[] }
  | { sub: string; seq: number; type: 'create'; object: Record<string, unknown> }
  | { sub: string; seq: number; type: 'update'; object: Record<string, unknown> }
  | { sub: string; seq: number; type: 'enter'; object: Record<string, unknown> }
  | { sub: string; seq: number; type: 'delete'; id: string }
  | { sub: string; seq: number; type: 'leave'; id: string }
  | { sub: string; type: 'ended'; reason: EndReason };

/** One write as the change log carries it between processes: sequence, path, kind, object(s). */
export interface WriteEntry {
  s: number;
  p: string;
  k: 'create' | 'update' | 'delete';
  /** The object after the write (before it, for a delete). */
  o: Doc;
  /** The object before an update. */
  v?: Doc;
}

/** Objects of `p` changed without being told one by one (a restore, a delete nobody read): subscriptions take a fresh snapshot. */
export interface ResyncEntry {
  s: number;
  p: string;
  k: 'resync';
}

/** One entry of a collection's change log. */
export type ChangeEntry = WriteEntry | ResyncEntry;
