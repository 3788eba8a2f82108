import type { Socket } from 'socket.io-client';
import type { LiveEvent, LiveHandler, SubscribeOptions, SvcErrorBody } from '../types.js';
import { LiveView } from './liveView.js';

/** The server's messages (see @svc/realtime). */
const SUBSCRIBE_EVENT = 'svc:subscribe';
const UNSUBSCRIBE_EVENT = 'svc:unsubscribe';
const LIVE_EVENT = 'svc:live';
const SUBSCRIBE_TIMEOUT_MS = 10_000;

type Item = Record<string, unknown> & { id: string };
type ServerMessage =
  | { sub: string; seq: number; type: 'snapshot'; objects: Item[] }
  | { sub: string; seq: number; type: 'create' | 'update' | 'enter'; object: Item }
  | { sub: string; seq: number; type: 'delete' | 'leave'; id: string }
  | { sub: string; type: 'ended'; reason: string };
type Answer = { ok: true; seq: number } | { ok: false; error: { status: number; message: string } };

/** One subscription as the client keeps it: across reconnects it resumes after `lastSeq`. */
interface Live {
  serverId: string;
  path: string;
  query: Record<string, unknown>;
  handler: LiveHandler<Item>;
  snapshot: boolean;
  view: LiveView;
  lastSeq: number | undefined;
  active: boolean;
  /** The connection (socket id) it was last subscribed on: a resume on the same one is not needed. */
  connection: string | undefined;
}

let counter = 0;

/**
 * The client's live queries over its socket: subscribe, dispatch the server's messages in order,
 * resubscribe after a reconnect from the last sequence number (the server replays what was
 * missed, or sends a fresh snapshot), and keep each one's ordered window.
 */
export class LiveSubscriptions {
  private readonly byServerId = new Map<string, Live>();
  private socket: Socket | undefined;

  /** Uses a (new) socket: listens to its messages; open subscriptions resume on it once it is ready. */
  attach(socket: Socket): void {
    this.socket = socket;
    socket.on(LIVE_EVENT, (message: ServerMessage) => this.onMessage(message));
  }

  /** The socket (re)connected and is bound to its session: resume every subscription. */
  resume(): void {
    for (const live of [...this.byServerId.values()]) this.start(live, true);
  }

  subscribe(socket: Socket, path: string, query: Record<string, unknown>, handler: LiveHandler<Item>, options: SubscribeOptions): () => void {
    if (this.socket !== socket) this.attach(socket);
    const live: Live = { serverId: nextId(), path, query, handler, snapshot: options.snapshot !== false, view: new LiveView(query), lastSeq: undefined, active: true, connection: undefined };
    this.byServerId.set(live.serverId, live);
    if (socket.connected) this.start(live, false);
    return () => this.stop(live);
  }

  private start(live: Live, resuming: boolean): void {
    const socket = this.socket;
    if (!socket?.connected || !live.active || (resuming && live.connection === socket.id)) return;
    live.connection = socket.id;
    const request: Record<string, unknown> = { id: live.serverId, path: live.path, query: live.query, snapshot: live.snapshot };
    if (resuming && live.lastSeq !== undefined) request.since = live.lastSeq;
    socket
      .timeout(SUBSCRIBE_TIMEOUT_MS)
      .emitWithAck(SUBSCRIBE_EVENT, request)
      .then(
        (answer: Answer) => {
          if (answer.ok) {
            live.lastSeq ??= answer.seq;
            return;
          }
          this.forget(live);
          this.tell(live, { type: 'error', error: errorBody(answer.error.status, answer.error.message) });
        },
        () => {
          // No answer (a server without live queries, or the socket dropped): a reconnect retries.
        },
      );
  }

  private stop(live: Live): void {
    if (!live.active) return;
    this.forget(live);
    if (this.socket?.connected) this.socket.emit(UNSUBSCRIBE_EVENT, live.serverId);
  }

  private forget(live: Live): void {
    live.active = false;
    this.byServerId.delete(live.serverId);
  }

  private onMessage(message: ServerMessage): void {
    const live = this.byServerId.get(message?.sub);
    if (!live) return;
    if (message.type === 'ended') {
      this.forget(live);
      return this.tell(live, { type: 'ended', reason: message.reason });
    }
    live.lastSeq = message.seq;
    if (message.type === 'snapshot') {
      live.view.reset(message.objects);
      return this.tell(live, { type: 'snapshot', objects: message.objects });
    }
    let stale: boolean;
    if ('id' in message) {
      stale = live.view.remove(message.id).stale;
      this.tell(live, { type: message.type, id: message.id });
    } else {
      stale = live.view.upsert(message.object).stale;
      this.tell(live, { type: message.type, object: message.object });
    }
    if (stale) this.refresh(live);
  }

  /** The window lost track of what the server has: the same query again, with a snapshot. */
  private refresh(live: Live): void {
    const socket = this.socket;
    this.byServerId.delete(live.serverId);
    if (socket?.connected) socket.emit(UNSUBSCRIBE_EVENT, live.serverId);
    live.serverId = nextId();
    live.snapshot = true;
    live.lastSeq = undefined;
    this.byServerId.set(live.serverId, live);
    this.start(live, false);
  }

  private tell(live: Live, event: LiveEvent<Item>): void {
    live.handler(event, live.view.objects);
  }
}

function nextId(): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `l${counter.toString(36)}`;
}

function errorBody(status: number, message: string): SvcErrorBody {
  return { status, statusCode: status, message };
}
