import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestClient } from './http/ProxyTrust.js';

/**
 * The root check of the `svc-ssh-key` header. Development accepts any value from this machine (a
 * loopback client address: a development server listening on a network, or attached to a host
 * server that does, is no open admin door); production only a key of `.svc/keys.json`, compared in constant time (hashes of equal length, so neither the
 * content nor the length of a key leaks through timing).
 */
export class RootKeys {
  private readonly source: () => readonly string[];
  private seen: readonly string[] | undefined;
  private digests: Buffer[] = [];

  /**
   * `keys` is a list, or a function asked at every production root check (the server's keys.json
   * is read again when it changes, so that a removed key stops working at once); it answers the
   * same array while nothing changed, and the digests are kept for it.
   */
  constructor(keys: readonly string[] | (() => readonly string[])) {
    this.source = typeof keys === 'function' ? keys : () => keys;
  }

  /**
   * `request` (its Host and Origin headers) narrows development's root further: the Host must be a
   * loopback name and a browser's Origin, when sent, that same host. Otherwise any web page open in
   * the developer's browser could be root on the development server, by a cross-origin call (CORS
   * admits any origin in development) or by pointing a name of its own at 127.0.0.1 (DNS rebinding).
   */
  isRoot(header: string | undefined, production: boolean, clientAddress?: string, request?: { host?: string | undefined; origin?: string | undefined }): boolean {
    if (header === undefined || header === '') return false;
    if (!production) return localRefusal(clientAddress, request) === undefined;
    const keys = this.source();
    if (keys !== this.seen) {
      this.digests = keys.map(digest);
      this.seen = keys;
    }
    const candidate = digest(header);
    let ok = false;
    for (const key of this.digests) ok = timingSafeEqual(key, candidate) || ok;
    return ok;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

/** A Host header naming this machine: localhost (and *.localhost), 127.x.x.x or [::1], any port. */
export function isLocalHostName(host: string): boolean {
  const lower = host.toLowerCase();
  const name = lower.startsWith('[') ? lower.slice(0, lower.indexOf(']') + 1) : lower.replace(/:\d+$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) || name === '[::1]';
}

function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return undefined;
  }
}

/** Why a development request that carries a root key is not made root. */
export interface DevelopmentRootRefusal {
  /** One word per kind of reason (the server logs each kind once). */
  kind: 'proxy' | 'http10' | 'connection' | 'port' | 'remote' | 'host' | 'origin';
  why: string;
}

/**
 * Development's own-machine rules, {@link RootKeys.isRoot}'s in development: a loopback peer, a
 * Host naming this machine and a browser's Origin naming that Host. Undefined when they hold.
 */
export function localRefusal(clientAddress: string | undefined, request?: { host?: string | undefined; origin?: string | undefined }): DevelopmentRootRefusal | undefined {
  if (clientAddress !== undefined && !isLoopback(clientAddress)) return { kind: 'remote', why: `it came from ${clientAddress || 'a closed connection'}, not from this machine` };
  if (request === undefined) return undefined;
  const host = request.host ?? '';
  if (!isLocalHostName(host)) return { kind: 'host', why: `its Host header (${host || 'none'}) does not name this machine (a name pointed at 127.0.0.1 by another site: DNS rebinding)` };
  if (request.origin !== undefined && originHost(request.origin) !== host.toLowerCase()) {
    return { kind: 'origin', why: `a page of another origin (${request.origin}) sent it` };
  }
  return undefined;
}

/**
 * Development gives root to any key, for a developer's own machine: a request from a loopback
 * peer is taken to be the developer's. A reverse proxy on the same machine breaks that: it is a
 * loopback peer too, and passes on what remote clients send. So a request that shows a proxy's
 * hand is refused, whatever its key. Only positive evidence counts, never a client's habit
 * (Python's urllib and node with `agent: false` send `Connection: close` on their own):
 * - it came through a proxy (a forwarding header, `Via`, or a peer that app.json trustProxy names);
 * - HTTP/1.0: nginx's default towards its upstream (browsers, curl, node, Python speak 1.1);
 * - `Connection: upgrade` without an Upgrade header: nginx's usual WebSocket settings on a plain
 *   request (no client asks for an upgrade to nothing);
 * - a Host whose port is not the one the request came in on: nginx's `proxy_set_header Host $host`
 *   (no port) and ports forwarded from elsewhere.
 * A proxy that sends none of these (nginx with `proxy_http_version 1.1` and its default Host
 * `127.0.0.1:<port>`, no header of its own) cannot be told apart from a program on this machine:
 * a development server must never be reachable by others (docs/deploying.md).
 */
export function developmentRootRefusal(req: IncomingMessage, client: RequestClient): DevelopmentRootRefusal | undefined {
  if (client.proxied !== undefined) return { kind: 'proxy', why: `it came through a proxy (${client.proxied})` };
  if (req.httpVersionMajor < 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor < 1)) {
    return { kind: 'http10', why: "it speaks HTTP/1.0, as nginx's proxy_pass does by default (browsers, curl and node speak HTTP/1.1)" };
  }
  const connection = String(req.headers.connection ?? '').toLowerCase();
  if (req.headers.upgrade === undefined && connection.split(',').some((t) => t.trim() === 'upgrade')) {
    return { kind: 'connection', why: `its Connection header is "${connection}" without an Upgrade header, as nginx's WebSocket settings send on every request` };
  }
  const port = hostPort(req.headers.host ?? '');
  const local = req.socket.localPort;
  if (local !== undefined && port !== local) {
    return { kind: 'port', why: `its Host header (${req.headers.host ?? 'none'}) does not name port ${local}, where it came in (a proxy setting Host, or a forwarded port)` };
  }
  return undefined;
}

/** The port a Host header names (80 when it names none); undefined when it is not a Host. */
function hostPort(host: string): number | undefined {
  const afterName = host.startsWith('[') ? host.slice(host.indexOf(']') + 1) : host.slice(host.lastIndexOf(':') === -1 ? host.length : host.lastIndexOf(':'));
  if (afterName === '') return 80;
  const match = /^:(\d{1,5})$/.exec(afterName);
  return match ? Number(match[1]) : undefined;
}
