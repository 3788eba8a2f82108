import { isIPv4, isIPv6 } from 'node:net';

/**
 * IP addresses as bytes, and which of them outbound requests must not reach by default: the
 * machine itself, private networks, link-local and cloud metadata addresses, and every IPv6 form
 * that carries such an IPv4 address inside it (IPv4-mapped, -compatible, -translated, NAT64,
 * 6to4). Written as bytes, not text patterns, so that `::ffff:7f00:1`, `::ffff:127.0.0.1` and
 * `0:0:0:0:0:ffff:127.0.0.1` are one address.
 */

/** Why an address is not reached by default, e.g. 'loopback'. */
export type AddressKind =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared (CGNAT)'
  | 'link-local'
  | 'unique-local'
  | 'site-local'
  | 'multicast'
  | 'reserved'
  | 'documentation'
  | 'broadcast'
  | 'benchmarking'
  | 'NAT64 local-use'
  | 'Teredo'
  | 'discard-only';

/** What {@link classifyAddress} says of an address that is not a public one. */
export interface AddressClass {
  kind: AddressKind;
  /** A cloud provider's instance metadata service: reached only when allowed by that exact address. */
  metadata: boolean;
  /** The IPv4 address an IPv6 form carries, when that is what decided (written as IPv4). */
  embedded?: string;
}

/** The 4 (IPv4) or 16 (IPv6) bytes of an IP address written as text; undefined for anything else. */
export function parseIp(text: string): Uint8Array | undefined {
  if (isIPv4(text)) return parseIPv4(text);
  // A zone (`fe80::1%eth0`) names an interface: no outbound request needs one.
  if (!isIPv6(text) || text.includes('%')) return undefined;
  return parseIPv6(text);
}

function parseIPv4(text: string): Uint8Array {
  return Uint8Array.from(text.split('.').map(Number));
}

function parseIPv6(text: string): Uint8Array | undefined {
  // A trailing dotted IPv4 part (`::ffff:127.0.0.1`) is two words written in another way.
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    if (!isIPv4(last)) return undefined;
    const [a, b, c, d] = parseIPv4(last);
    text = `${text.slice(0, lastColon + 1)}${(((a as number) << 8) | (b as number)).toString(16)}:${(((c as number) << 8) | (d as number)).toString(16)}`;
  }
  const gap = text.indexOf('::');
  let words: string[];
  if (gap >= 0) {
    const left = gap === 0 ? [] : text.slice(0, gap).split(':');
    const right = gap + 2 === text.length ? [] : text.slice(gap + 2).split(':');
    if (left.length + right.length > 7) return undefined;
    words = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  } else {
    words = text.split(':');
  }
  if (words.length !== 8) return undefined;
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    const word = words[i] as string;
    if (!/^[0-9a-fA-F]{1,4}$/.test(word)) return undefined;
    const value = parseInt(word, 16);
    out[i * 2] = value >> 8;
    out[i * 2 + 1] = value & 0xff;
  }
  return out;
}

/** An address as text: IPv4 dotted, IPv6 in its usual compressed form. */
export function formatIp(bytes: Uint8Array): string {
  if (bytes.length === 4) return bytes.join('.');
  const words: number[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((bytes[i] as number) << 8) | (bytes[i + 1] as number));
  // The longest run of zero words (2 or more) becomes '::'.
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLength).join(':')}`;
}

/** Whether the first `bits` bits of `bytes` are those of `prefix`. */
export function inPrefix(bytes: Uint8Array, prefix: Uint8Array, bits: number): boolean {
  if (bytes.length !== prefix.length) return false;
  const whole = bits >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== prefix[i]) return false;
  const rest = bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] as number) & mask) === ((prefix[whole] as number) & mask);
}

type Range = [prefix: Uint8Array, bits: number, kind: AddressKind];

const v4 = (text: string, bits: number, kind: AddressKind): Range => [parseIPv4(text), bits, kind];
const v6 = (text: string, bits: number, kind: AddressKind): Range => [parseIPv6(text) as Uint8Array, bits, kind];

/** IPv4 ranges that are not the public Internet (IANA special-purpose registry). */
const IPV4_RANGES: readonly Range[] = [
  v4('0.0.0.0', 8, 'unspecified'),
  v4('10.0.0.0', 8, 'private'),
  v4('100.64.0.0', 10, 'shared (CGNAT)'),
  v4('127.0.0.0', 8, 'loopback'),
  v4('169.254.0.0', 16, 'link-local'),
  v4('172.16.0.0', 12, 'private'),
  v4('192.0.0.0', 24, 'reserved'),
  v4('192.0.2.0', 24, 'documentation'),
  v4('192.88.99.0', 24, 'reserved'),
  v4('192.168.0.0', 16, 'private'),
  v4('198.18.0.0', 15, 'benchmarking'),
  v4('198.51.100.0', 24, 'documentation'),
  v4('203.0.113.0', 24, 'documentation'),
  v4('224.0.0.0', 4, 'multicast'),
  v4('255.255.255.255', 32, 'broadcast'),
  v4('240.0.0.0', 4, 'reserved'),
];

/** IPv6 ranges that are not the public Internet; the forms carrying IPv4 are handled apart. */
const IPV6_RANGES: readonly Range[] = [
  v6('::', 128, 'unspecified'),
  v6('::1', 128, 'loopback'),
  v6('64:ff9b:1::', 48, 'NAT64 local-use'),
  v6('100::', 64, 'discard-only'),
  v6('2001::', 32, 'Teredo'),
  v6('2001:db8::', 32, 'documentation'),
  v6('3fff::', 20, 'documentation'),
  v6('fc00::', 7, 'unique-local'),
  v6('fe80::', 10, 'link-local'),
  v6('fec0::', 10, 'site-local'),
  v6('ff00::', 8, 'multicast'),
];

/** IPv6 prefixes whose last 32 bits are an IPv4 address (decided as that address). */
const IPV4_IN_LAST_32: readonly [Uint8Array, number][] = [
  [parseIPv6('::ffff:0:0') as Uint8Array, 96], // IPv4-mapped
  [parseIPv6('::ffff:0:0:0') as Uint8Array, 96], // IPv4-translated (SIIT)
  [parseIPv6('64:ff9b::') as Uint8Array, 96], // NAT64 well-known prefix
  [parseIPv6('::') as Uint8Array, 96], // IPv4-compatible (deprecated; :: and ::1 are decided above)
];
const SIX_TO_FOUR = parseIPv6('2002::') as Uint8Array;

/**
 * Instance metadata services of cloud providers (AWS, GCP, Azure, OpenStack, Oracle, Alibaba,
 * AWS ECS task metadata and time and DNS services): all inside ranges refused anyway, and
 * reached only when app.json names the exact address, never through a range or a host pattern.
 */
const METADATA = new Set(['169.254.169.254', '169.254.170.2', '169.254.169.253', '169.254.169.123', '100.100.100.200', '192.0.0.192', 'fd00:ec2::254', 'fd00:ec2::23', 'fd00:ec2::123']);

/** Whether the address (bytes) is a metadata service's, in any IPv6 form that carries it. */
export function isMetadataAddress(bytes: Uint8Array): boolean {
  if (METADATA.has(formatIp(bytes))) return true;
  const inner = embeddedIPv4(bytes);
  return inner !== undefined && METADATA.has(formatIp(inner));
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, translated, NAT64, 6to4). */
export function embeddedIPv4(bytes: Uint8Array): Uint8Array | undefined {
  if (bytes.length !== 16) return undefined;
  if (inPrefix(bytes, SIX_TO_FOUR, 16)) return bytes.slice(2, 6);
  for (const [prefix, bits] of IPV4_IN_LAST_32) if (inPrefix(bytes, prefix, bits)) return bytes.slice(12, 16);
  return undefined;
}

/**
 * What kind of non-public address this is, or undefined for an address of the public Internet.
 * Takes bytes (see {@link parseIp}) or text; text that is not an IP address is refused as
 * 'reserved' (nothing may be connected to an address svc cannot read).
 */
export function classifyAddress(address: Uint8Array | string): AddressClass | undefined {
  const bytes = typeof address === 'string' ? parseIp(address) : address;
  if (bytes === undefined) return { kind: 'reserved', metadata: false };
  const metadata = isMetadataAddress(bytes);
  if (bytes.length === 4) {
    for (const [prefix, bits, kind] of IPV4_RANGES) if (inPrefix(bytes, prefix, bits)) return { kind, metadata };
    return metadata ? { kind: 'reserved', metadata } : undefined;
  }
  for (const [prefix, bits, kind] of IPV6_RANGES) if (inPrefix(bytes, prefix, bits)) return { kind, metadata };
  const inner = embeddedIPv4(bytes);
  if (inner !== undefined) {
    const found = classifyAddress(inner);
    return found === undefined ? undefined : { ...found, metadata, embedded: formatIp(inner) };
  }
  return undefined;
}
