import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { clientAddress } from './svcHttpServer.js';

/**
 * Which peers are reverse proxies whose forwarding headers svc believes (app.json `trustProxy`):
 * a list of addresses and CIDR blocks (`"loopback"` stands for 127.0.0.0/8 and ::1), or a hop
 * count (that many proxies stand in front of svc, whatever their addresses). Absent: none.
 */
export type TrustProxySetting = readonly string[] | number;

/** Who sent a request, decided once per request ({@link ProxyTrust.clientOf}). */
export interface RequestClient {
  /** The client's address: the socket's peer, or the one trusted proxies name. */
  readonly address: string;
  /** The socket's peer address (IPv4-mapped written as IPv4); '' once the socket is gone. */
  readonly peer: string;
  /**
   * Why the request looks like it came through a proxy (a forwarding header it carries, or a
   * peer that is a trusted proxy), or undefined. Development never makes such a request root.
   */
  readonly proxied: string | undefined;
  /** Sent over TLS: the socket's own, or `https` as its trusted proxy says. */
  readonly secure: boolean;
}

/**
 * Headers that only a proxy (or a client pretending to be one) sends. Any of them on a request
 * means it did not come straight from a program on this machine.
 */
const FORWARDING_HEADERS = ['forwarded', 'via', 'x-real-ip', 'true-client-ip', 'cf-connecting-ip', 'x-client-ip', 'x-cluster-client-ip', 'fastly-client-ip'];

/** Keyword of the setting for this machine's own addresses. */
const LOOPBACK = 'loopback';

/** The client of each request, computed once (svc's request path, realtime's handshake). */
export class ProxyTrust {
  private readonly blocks: BlockList | undefined;
  private readonly hops: number;
  /**
   * Where a request keeps its client, once computed: a property of the request itself (a WeakMap
   * entry per request costs more to add and look up, and is an ephemeron for the GC to trace:
   * bench/RESULTS.md, "Figures from code comments").
   * Each ProxyTrust its own symbol: a request asked by two never gets the other's answer.
   */
  private readonly key = Symbol('svc.requestClient');

  /** Throws (naming the wrong entry) when the setting is not a hop count or a list of addresses/CIDRs. */
  constructor(setting: TrustProxySetting | undefined) {
    this.hops = 0;
    if (setting === undefined) return;
    if (typeof setting === 'number') {
      if (!Number.isInteger(setting) || setting < 0) throw new Error(`trustProxy must be a hop count (a whole number >= 0) or a list of addresses, not ${String(setting)}`);
      this.hops = setting;
      return;
    }
    const blocks = new BlockList();
    for (const entry of setting) addEntry(blocks, entry);
    this.blocks = setting.length > 0 ? blocks : undefined;
  }

  /** Whether any proxy is trusted at all. */
  get enabled(): boolean {
    return this.hops > 0 || this.blocks !== undefined;
  }

  /**
   * Whether connections from this peer address are a trusted proxy's, known before any request
   * (a listed address; with a hop count svc cannot tell a proxy from a client by its address).
   */
  listsPeer(peer: string): boolean {
    return this.blocks !== undefined && isIP(peer) !== 0 && this.blocks.check(peer, isIP(peer) === 6 ? 'ipv6' : 'ipv4');
  }

  /** The request's client, computed on the first call and remembered with the request. */
  clientOf(req: IncomingMessage): RequestClient {
    const held = req as IncomingMessage & Record<symbol, RequestClient | undefined>;
    let client = held[this.key];
    if (client === undefined) {
      client = this.compute(req);
      held[this.key] = client;
    }
    return client;
  }

  /**
   * The request's client address, as {@link clientOf} says, without making the rest when no proxy
   * is trusted (then it is the peer's): each access line asks it.
   */
  addressOf(req: IncomingMessage): string {
    const held = (req as IncomingMessage & Record<symbol, RequestClient | undefined>)[this.key];
    if (held !== undefined) return held.address;
    if (!this.enabled) return clientAddress(req.socket.remoteAddress) ?? '';
    return this.clientOf(req).address;
  }

  private compute(req: IncomingMessage): RequestClient {
    const peer = clientAddress(req.socket.remoteAddress) ?? '';
    const ownTls = (req.socket as { encrypted?: boolean }).encrypted === true;
    const header = forwardingHeader(req);
    const peerTrusted = peer !== '' && (this.hops > 0 || this.listsPeer(peer));
    if (!peerTrusted) return { address: peer, peer, proxied: header === undefined ? undefined : `it carries a ${header} header`, secure: ownTls };
    const proxied = `it came from ${peer}, a trusted proxy (app.json trustProxy)`;
    const xff = headerText(req, 'x-forwarded-for');
    const fwd = headerText(req, 'forwarded');
    const fromXff = xff === undefined ? undefined : this.walk(peer, xff.split(',').map(parseAddress));
    const fromFwd = fwd === undefined ? undefined : this.walk(peer, forwardedElements(fwd).map((e) => parseAddress(e.for ?? '')));
    // Both headers, naming different clients: one of them came from the client itself (a proxy
    // passes on headers it does not set). Neither is believed; the peer is the client.
    const address =
      fromXff !== undefined && fromFwd !== undefined ? (fromXff.address === fromFwd.address ? fromXff.address : peer) : ((fromXff ?? fromFwd)?.address ?? peer);
    return { address, peer, proxied, secure: ownTls || forwardedProto(req, fwd) === 'https' };
  }

  /**
   * Walks the hops from the nearest (the peer) outwards while each is trusted: the first one that
   * is not, or the last the list names, is the client. A hop count trusts that many hops; a list
   * trusts hops whose address it holds. An entry that is no address (garbage, "unknown", a
   * hidden name) ends the walk at the hop before it: a trusted proxy never writes one.
   */
  private walk(peer: string, entries: (string | undefined)[]): { address: string } {
    let client = peer;
    let hop = 0;
    for (let i = entries.length - 1; i >= 0; i--) {
      const trusted = this.hops > 0 ? hop < this.hops : this.listsPeer(client);
      if (!trusted) break;
      const next = entries[i];
      if (next === undefined) break;
      client = next;
      hop++;
    }
    return { address: client };
  }
}

function addEntry(blocks: BlockList, entry: unknown): void {
  if (entry === LOOPBACK) {
    blocks.addSubnet('127.0.0.0', 8, 'ipv4');
    blocks.addAddress('::1', 'ipv6');
    return;
  }
  const text = typeof entry === 'string' ? entry.trim() : '';
  const slash = text.indexOf('/');
  const address = clientAddress(slash === -1 ? text : text.slice(0, slash)) ?? '';
  const family = isIP(address);
  const bits = slash === -1 ? undefined : text.slice(slash + 1);
  const max = family === 6 ? 128 : 32;
  if (family === 0 || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max))) {
    throw new Error(`trustProxy: ${JSON.stringify(entry)} is not an address or CIDR block (such as "10.0.0.0/8", "::1" or "loopback")`);
  }
  const type = family === 6 ? 'ipv6' : 'ipv4';
  if (bits === undefined) blocks.addAddress(address, type);
  else blocks.addSubnet(address, Number(bits), type);
}

/** The first forwarding header a request carries, by name; undefined when none. */
export function forwardingHeader(req: IncomingMessage): string | undefined {
  const headers = req.headers;
  for (const name of Object.keys(headers)) if (name.startsWith('x-forwarded-')) return name;
  // A loop, not `find`: a closure per request.
  for (const name of FORWARDING_HEADERS) if (headers[name] !== undefined) return name;
  return undefined;
}

function headerText(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * One hop's address as a proxy writes it: '203.0.113.7', '203.0.113.7:4711', '2001:db8::1',
 * '[2001:db8::1]:4711', quoted or not. Undefined for anything else (a name, "unknown", garbage).
 */
export function parseAddress(raw: string): string | undefined {
  let text = raw.trim();
  if (text.startsWith('"') && text.endsWith('"') && text.length >= 2) text = text.slice(1, -1).trim();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end === -1) return undefined;
    text = text.slice(1, end);
  } else if (text.indexOf(':') === text.lastIndexOf(':') && text.includes('.')) {
    // IPv4 with a port.
    text = text.replace(/:\d{1,5}$/, '');
  }
  const normal = clientAddress(text);
  return normal !== undefined && isIP(normal) !== 0 ? normal : undefined;
}

/** RFC 7239 `Forwarded` elements (comma-separated), each a map of its pairs (lower-case keys). */
function forwardedElements(value: string): Record<string, string>[] {
  // Commas and semicolons inside quoted strings (IPv6 with ports are quoted) are not separators.
  const elements: Record<string, string>[] = [];
  let current: Record<string, string> = {};
  let pair = '';
  let quoted = false;
  const endPair = (): void => {
    const eq = pair.indexOf('=');
    if (eq > 0) current[pair.slice(0, eq).trim().toLowerCase()] = pair.slice(eq + 1).trim();
    pair = '';
  };
  for (const ch of value) {
    if (ch === '"') quoted = !quoted;
    if (!quoted && (ch === ';' || ch === ',')) {
      endPair();
      if (ch === ',') {
        elements.push(current);
        current = {};
      }
      continue;
    }
    pair += ch;
  }
  endPair();
  elements.push(current);
  return elements;
}

/** The scheme the client used, as the nearest trusted proxy says (X-Forwarded-Proto or Forwarded proto=). */
function forwardedProto(req: IncomingMessage, forwarded: string | undefined): string | undefined {
  const xfp = headerText(req, 'x-forwarded-proto');
  // A chain of proxies may list one scheme per hop: the first is the client's.
  if (xfp !== undefined) return xfp.split(',')[0]?.trim().toLowerCase();
  if (forwarded === undefined) return undefined;
  return forwardedElements(forwarded)[0]?.proto?.replace(/"/g, '').toLowerCase();
}
