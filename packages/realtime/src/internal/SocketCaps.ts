import { isIPv6 } from 'node:net';

/**
 * Counts the open Socket.IO connections (engine.io sockets) of this process, in all and per client
 * address (the server's `clientOf`: behind trusted proxies, the client they name), and refuses a new handshake beyond the caps. An IPv6 client counts by its /64: one
 * host commonly holds a whole /64, as a household behind NAT holds one IPv4 address.
 *
 * A handshake is checked (allowRequest) and counted (the engine's connection event) in one turn
 * of the event loop, so a burst of handshakes cannot pass the check together.
 */
export class SocketCaps {
  private readonly perAddress = new Map<string, number>();
  private total = 0;

  /** 0 for either means no cap. */
  constructor(
    readonly maxPerAddress: number,
    readonly maxTotal: number,
  ) {}

  /** Why a new handshake is refused, or undefined when it may go on. */
  refusal(address: string): string | undefined {
    if (this.maxTotal > 0 && this.total >= this.maxTotal) return `too many realtime connections on this server (limit ${this.maxTotal}); try again later`;
    if (this.maxPerAddress > 0 && (this.perAddress.get(addressKey(address)) ?? 0) >= this.maxPerAddress) {
      return `too many realtime connections from this address (limit ${this.maxPerAddress}); close some and try again`;
    }
    return undefined;
  }

  /** Counts a connection just made; answers the key to give {@link closed} when it closes. */
  opened(address: string): string {
    const key = addressKey(address);
    this.perAddress.set(key, (this.perAddress.get(key) ?? 0) + 1);
    this.total++;
    return key;
  }

  closed(key: string): void {
    const left = (this.perAddress.get(key) ?? 1) - 1;
    if (left <= 0) this.perAddress.delete(key);
    else this.perAddress.set(key, left);
    this.total--;
  }

}

/** The client address a connection counts under: IPv4 as is, IPv6 by /64. */
export function addressKey(client: string): string {
  const address = client === '' ? 'unknown' : client;
  if (!isIPv6(address)) return address;
  return `${prefix64(address)}::/64`;
}

/** The first four groups of an IPv6 address, written out ('2001:db8:0:0'). */
function prefix64(address: string): string {
  const bare = address.split('%')[0]!;
  const [head = '', tail] = bare.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return groups
    .slice(0, 4)
    .map((g) => (g === '' ? '0' : g.replace(/^0+(?=.)/, '').toLowerCase()))
    .join(':');
}
