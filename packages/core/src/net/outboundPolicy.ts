import { isIP } from 'node:net';
import { classifyAddress, formatIp, inPrefix, isMetadataAddress, parseIp } from './addresses.js';

/** One entry of app.json `outbound.allow`, parsed. */
type AllowEntry =
  | { kind: 'address'; bytes: Uint8Array; port: number | undefined; text: string }
  | { kind: 'range'; bytes: Uint8Array; bits: number; text: string }
  | { kind: 'host'; host: string; wildcard: boolean; port: number | undefined; text: string };

const HOST_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

function parsePort(text: string, entry: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65535) throw new Error(`outbound.allow: ${JSON.stringify(entry)} has a bad port`);
  return Number(text);
}

/** Parses one allow entry; throws an Error naming it when it is none of the accepted forms. */
function parseEntry(entry: unknown): AllowEntry {
  if (typeof entry !== 'string' || entry.trim() === '') throw new Error(`outbound.allow: ${JSON.stringify(entry)} is not an address, a range or a host name`);
  const text = entry.trim().toLowerCase();
  const slash = text.indexOf('/');
  if (slash >= 0) {
    const bytes = parseIp(text.slice(0, slash));
    const bits = /^\d{1,3}$/.test(text.slice(slash + 1)) ? Number(text.slice(slash + 1)) : NaN;
    if (bytes === undefined || !(bits >= 0 && bits <= bytes.length * 8)) throw new Error(`outbound.allow: ${JSON.stringify(entry)} is not a CIDR range such as "10.0.0.0/8" or "fd00::/8"`);
    return { kind: 'range', bytes, bits, text };
  }
  const bracket = /^\[([^\]]+)\](?::(.*))?$/.exec(text);
  if (bracket) {
    const bytes = parseIp(bracket[1] as string);
    if (bytes === undefined) throw new Error(`outbound.allow: ${JSON.stringify(entry)} is not an IPv6 address`);
    return { kind: 'address', bytes, port: bracket[2] === undefined ? undefined : parsePort(bracket[2], entry), text };
  }
  if (isIP(text) === 6) return { kind: 'address', bytes: parseIp(text) as Uint8Array, port: undefined, text };
  const colon = text.lastIndexOf(':');
  const name = colon >= 0 ? text.slice(0, colon) : text;
  const port = colon >= 0 ? parsePort(text.slice(colon + 1), entry) : undefined;
  const bytes = parseIp(name);
  if (bytes !== undefined) return { kind: 'address', bytes, port, text };
  const wildcard = name.startsWith('*.');
  const host = wildcard ? name.slice(2) : name;
  if (!host.split('.').every((label) => HOST_LABEL.test(label))) {
    throw new Error(`outbound.allow: ${JSON.stringify(entry)} is not an address ("10.0.0.5", "[fd00::1]:8443"), a range ("10.0.0.0/8") or a host name ("api.internal", "*.corp.example", "api.internal:8443")`);
  }
  return { kind: 'host', host, wildcard, port, text };
}

/**
 * Which addresses outbound requests (event scripts' http/https/fetch, webhooks) may connect to.
 * Every address of the public Internet may be reached; the machine itself, private networks and
 * the other special ranges (see classifyAddress) only when app.json `outbound.allow` names them:
 *
 * - an address, optionally with a port: `"10.0.0.5"`, `"10.0.0.5:8080"`, `"fd00::1"`, `"[fd00::1]:8443"`;
 * - a CIDR range: `"10.1.0.0/16"`, `"fd00::/8"`;
 * - a host name, optionally with a port, or every name under a domain: `"api.internal"`,
 *   `"api.internal:8443"`, `"*.corp.example"`. A request to that name may reach whatever address
 *   it resolves to; a request to any other name (or to an IP address) is decided by the address.
 *
 * A cloud metadata address (169.254.169.254, fd00:ec2::254, ...) is reached only when an entry
 * names that exact address or a host name without `*` resolves to it: no range or pattern
 * covers it. The decision is made on the address actually connected to, after DNS, so a name
 * that resolves to a refused address is refused whatever it is called.
 */
export class OutboundPolicy {
  private readonly entries: readonly AllowEntry[];

  /** Throws an Error naming the first entry that is not an address, a range or a host name. */
  constructor(allow: readonly unknown[] = []) {
    this.entries = allow.map(parseEntry);
  }

  /** The allow entries as given (lower-cased), for messages. */
  get allowed(): readonly string[] {
    return this.entries.map((entry) => entry.text);
  }

  /**
   * Why connecting to `address` for a request to `host` (the URL's host name, without brackets)
   * and `port` is refused, or undefined when it may go ahead.
   */
  refusal(address: string, host: string, port: number): string | undefined {
    const bytes = parseIp(address);
    if (bytes === undefined) return `${address} is not an IP address`;
    const found = classifyAddress(bytes);
    if (found === undefined) return undefined;
    const metadata = found.metadata || isMetadataAddress(bytes);
    const name = host.toLowerCase();
    const named = isIP(name) === 0;
    for (const entry of this.entries) {
      if (entry.kind === 'host') {
        if (!named || (entry.port !== undefined && entry.port !== port)) continue;
        if (entry.wildcard ? name.endsWith(`.${entry.host}`) && !metadata : name === entry.host) return undefined;
      } else if (entry.kind === 'address') {
        if ((entry.port === undefined || entry.port === port) && sameAddress(entry.bytes, bytes)) return undefined;
      } else if (!metadata && (inPrefix(bytes, entry.bytes, entry.bits) || inPrefix(mappedOf(bytes), entry.bytes, entry.bits))) {
        return undefined;
      }
    }
    const shown = found.embedded === undefined ? formatIp(bytes) : `${formatIp(bytes)} (${found.embedded})`;
    const what = metadata ? 'a cloud metadata address' : `a ${found.kind} address`;
    return `${shown} is ${what}; app.json outbound.allow may name it`;
  }
}

/** The IPv4 address an IPv4-mapped IPv6 address stands for (a socket may report either form). */
function mappedOf(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 16 && bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12);
  if (bytes.length === 4) {
    const out = new Uint8Array(16);
    out[10] = out[11] = 0xff;
    out.set(bytes, 12);
    return out;
  }
  return bytes;
}

function sameAddress(a: Uint8Array, b: Uint8Array): boolean {
  const x = a.length === b.length ? b : mappedOf(b);
  return x.length === a.length && a.every((byte, i) => byte === x[i]);
}
