import { RedisAdapter } from '@socket.io/redis-adapter';
import type { RedisAdapterOptions } from '@socket.io/redis-adapter';
import type { Namespace } from 'socket.io';
import { Adapter } from 'socket.io-adapter';
import type { BroadcastOptions } from 'socket.io-adapter';

/** The packet options socket.io-adapter's `_encode` fills: the broadcast's pre-encoded WebSocket frame. */
interface EncodeOptions {
  wsPreEncodedFrame?: readonly Buffer[];
}

/** A socket as far as delivery needs it (engine.io's socket and websocket transport). */
interface DeliverySocket {
  conn: {
    readyState?: string;
    writeBuffer?: unknown[];
    transport?: {
      name?: string;
      writable?: boolean;
      perMessageDeflate?: unknown;
      socket?: { _sender?: { _queue?: unknown[]; sendFrame?(frame: readonly Buffer[]): void } };
    };
  };
  listenersAnyOutgoing?(): unknown[];
}

type Deliver = (socket: DeliverySocket) => void;

/**
 * The two methods of socket.io-adapter's Adapter that a broadcast runs through: `_encode` (once per
 * broadcast) and `apply` (the recipients). Private in its typings, hence this view of them.
 */
interface AdapterInternals {
  _encode(packet: { id?: number }, packetOptions: EncodeOptions): unknown[];
  apply(options: BroadcastOptions, deliver: Deliver): void;
}

/** True when the installed socket.io-adapter has the methods this file overrides. */
export function fastDeliveryAvailable(): boolean {
  const proto = Adapter.prototype as unknown as Partial<AdapterInternals>;
  return typeof proto._encode === 'function' && typeof proto.apply === 'function';
}

/**
 * Writes the frame straight to the socket's WebSocket when it is in the plain state: open,
 * websocket transport, nothing being written or queued, no compression, no outgoing listeners.
 * Answers false otherwise, and the socket gets the packet through engine.io (so order is kept).
 */
function writeFrame(socket: DeliverySocket, frame: readonly Buffer[]): boolean {
  const conn = socket.conn;
  const transport = conn.transport;
  const sender = transport?.socket?._sender;
  if (conn.readyState !== 'open' || transport?.name !== 'websocket' || transport.writable !== true || transport.perMessageDeflate) return false;
  if (conn.writeBuffer?.length !== 0 || typeof sender?.sendFrame !== 'function' || (sender._queue?.length ?? 0) > 0) return false;
  if ((socket.listenersAnyOutgoing?.().length ?? 0) > 0) return false;
  sender.sendFrame(frame);
  return true;
}

/** The delivery of one broadcast: the frame for plain sockets, engine.io's path for the others. */
function deliverFrame(frame: readonly Buffer[], fallback: Deliver): Deliver {
  return (socket) => {
    if (!writeFrame(socket, frame)) fallback(socket);
  };
}

/** The frame of a packet just encoded, when it may be written as is (no acknowledgement id). */
function frameOf(packet: { id?: number }, options: EncodeOptions): readonly Buffer[] | undefined {
  return packet.id === undefined ? options.wsPreEncodedFrame : undefined;
}

/** An adapter class as far as this file needs it (the mixin below takes any constructor of one). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- TypeScript's mixin pattern needs `...args: any[]`
type AdapterClass = new (...args: any[]) => AdapterInternals;

/**
 * `base` delivering broadcasts by their pre-encoded frame: per recipient a few checks and one
 * write, where engine.io would build a packet, emit events and wait for a write callback per
 * socket. Everything else is the base adapter's own code.
 */
function withFrameDelivery<Base extends AdapterClass>(base: Base) {
  return class extends base {
    #frame: readonly Buffer[] | undefined;

    override _encode(packet: { id?: number }, options: EncodeOptions): unknown[] {
      const encoded = super._encode(packet, options);
      this.#frame = frameOf(packet, options);
      // Never left for a later apply: a broadcast's apply follows its _encode synchronously.
      if (this.#frame) queueMicrotask(() => (this.#frame = undefined));
      return encoded;
    }

    override apply(options: BroadcastOptions, deliver: Deliver): void {
      // A broadcast calls apply right after _encode; every other apply (joins, fetches) finds no frame.
      const frame = this.#frame;
      this.#frame = undefined;
      super.apply(options, frame ? deliverFrame(frame, deliver) : deliver);
    }
  };
}

/** The in-memory adapter (socket.io-adapter's) with the frame delivery. */
export const FastAdapter = withFrameDelivery(Adapter as unknown as new (nsp: Namespace) => AdapterInternals);

/** The Redis adapter with the same local delivery, for emits of this process and of its peers. */
export const FastRedisAdapter = withFrameDelivery(RedisAdapter as unknown as new (nsp: Namespace, pub: unknown, sub: unknown, options?: Partial<RedisAdapterOptions>) => AdapterInternals);
