import type { Server } from 'socket.io';
import WebSocket from 'ws';

/** The parts of engine.io's socket and websocket transport this path relies on (checked per socket). */
interface EngineSocketShape {
  readyState?: string;
  writeBuffer?: unknown[];
  transport?: {
    name?: string;
    writable?: boolean;
    perMessageDeflate?: unknown;
    socket?: { _sender?: { _queue?: unknown[]; sendFrame?: (frame: readonly Buffer[], cb?: () => void) => void } };
  };
}

/** A socket as far as this path needs it. */
interface SocketLike {
  conn: unknown;
  emit(event: string, ...args: unknown[]): unknown;
}

/** The Socket.IO server as far as this path needs it. */
export interface BroadcastTarget {
  readonly encoder: Server['encoder'];
  of(name: '/'): { readonly sockets: ReadonlyMap<string, SocketLike>; readonly adapter: { readonly rooms: ReadonlyMap<string, ReadonlySet<string>> } };
}

/** ws's frame builder (the one Socket.IO's adapter pre-encodes broadcasts with); untyped in @types/ws. */
const Sender = (WebSocket as unknown as { Sender: { frame(data: Buffer, options: { fin: boolean; rsv1: boolean; opcode: number; mask: boolean; readOnly: boolean }): Buffer[] } }).Sender;

// Socket.IO's EVENT packet type and Engine.IO's MESSAGE packet prefix.
const EVENT = 2;
const ENGINE_MESSAGE = '4';

/**
 * A local broadcast that encodes the packet once, down to the WebSocket frame, and writes that
 * frame to each recipient's connection: per recipient only a few checks and one write, where
 * engine.io would build a packet object, emit events and wait for a write callback per socket.
 * A socket not in the plain state (polling, a write in flight, data queued, compression) gets the
 * message through Socket.IO as usual, so order is kept. Answers false, having sent nothing, when
 * the packet needs Socket.IO's own encoding (binary data).
 */
export function fastBroadcast(io: BroadcastTarget, rooms: readonly string[] | undefined, event: string, args: readonly unknown[]): boolean {
  const encoded = io.encoder.encode({ type: EVENT, nsp: '/', data: [event, ...args] }) as unknown[];
  if (encoded.length !== 1 || typeof encoded[0] !== 'string') return false;
  const frame = Sender.frame(Buffer.from(ENGINE_MESSAGE + encoded[0]), { fin: true, rsv1: false, opcode: 1, mask: false, readOnly: false });
  const nsp = io.of('/');
  const send = (socket: SocketLike): void => {
    const conn = socket.conn as EngineSocketShape;
    const transport = conn.transport;
    const sender = transport?.socket?._sender;
    if (conn.readyState === 'open' && transport?.name === 'websocket' && transport.writable === true && !transport.perMessageDeflate && conn.writeBuffer?.length === 0 && typeof sender?.sendFrame === 'function' && !sender._queue?.length) {
      sender.sendFrame(frame);
    } else {
      socket.emit(event, ...args);
    }
  };
  if (rooms === undefined) {
    for (const socket of nsp.sockets.values()) send(socket);
    return true;
  }
  const ids = new Set<string>();
  for (const room of rooms) {
    const members = nsp.adapter.rooms.get(room);
    if (members) for (const id of members) ids.add(id);
  }
  for (const id of ids) {
    const socket = nsp.sockets.get(id);
    if (socket) send(socket);
  }
  return true;
}
