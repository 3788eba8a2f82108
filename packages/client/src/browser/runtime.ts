// Entry of the /svc.js runtime (rollup: IIFE `__svcRuntime`, socket.io-client bundled in).
import { io } from 'socket.io-client';
import { createClient } from '../createClient.js';
import type { OpenSocket } from '../internal/realtimeLink.js';
import type { ResourceList } from '../types.js';

/** dpd.js's `setBaseUrl` argument: a root URL, a host to build one from, or nothing (the script's own). */
export type BaseUrlArgument = string | { hostname?: string; port?: string | number; protocol?: string } | null | undefined;

interface SvcGlobals {
  svc?: unknown;
  dpd?: unknown;
  io?: unknown;
  _svc?: { ajax: { headers: Record<string, string> } };
  _dpd?: { ajax: { headers: Record<string, string> } };
}

/**
 * Defines `svc` (the client, with svc.<resource> for each top-level resource) and `_svc` (dpd.js's
 * `_dpd`: `_svc.ajax.headers` adds headers to every request), and Deployd's names for them, `dpd`
 * and `_dpd`, and `io` (the Socket.IO client) as dpd.js did. The server's root is the one svc.js
 * was loaded from, so a page on another origin works too. As in dpd.js, calls go through
 * XMLHttpRequest (the page's, at each call) and the socket opens at the first
 * on/once/off/socketReady, through `io.connect`.
 */
export function install(resources: ResourceList): void {
  // Kept: a later setBaseUrl() runs when document.currentScript is some other script, or none.
  // Its src is read again then, as dpd.js did: a page may have pointed the tag at another server.
  const script = typeof document === 'undefined' ? null : (document.currentScript as HTMLScriptElement | null);
  const ownSrc = (): string => script?.src ?? '';
  let root = rootOf(undefined, ownSrc());
  const client = createClient(root, { resources, cookies: false, xhr: typeof XMLHttpRequest === 'function', openSocket });
  const setRoot = client.setBaseUrl;
  Object.assign(client, {
    setBaseUrl(options?: BaseUrlArgument): void {
      root = rootOf(options, ownSrc(), root);
      setRoot(root);
    },
  });
  // Not enumerable: Object.keys(svc) stays the resources and the client's API.
  Object.defineProperty(client, 'getBaseUrl', { value: () => `${root}/`, enumerable: false, configurable: true });
  const globals = globalThis as SvcGlobals;
  globals.svc = client;
  globals.dpd = client;
  const internals = { ajax: client.ajax };
  globals._svc = internals;
  globals._dpd = internals;
  // A page that loaded another Socket.IO client (its own version, for another server) keeps it.
  if (typeof globals.io !== 'function') globals.io = io;
}

/**
 * Opens the socket through `io.connect` of the global `io` when it is this script's own (dpd.js
 * called `io.connect(root)`; a page or a test double may replace `connect`), else through the
 * bundled client: a page's own Socket.IO client of another version stays its own.
 */
const openSocket: OpenSocket = (url, options) => {
  const global = (globalThis as SvcGlobals).io;
  const replaced = global === io ? (global as { connect?: unknown }).connect : undefined;
  const connect = typeof replaced === 'function' ? (replaced as typeof io) : io;
  return url === undefined ? connect(options) : connect(url, options);
};

/**
 * The root URL (no trailing '/') for dpd.js's setBaseUrl: a string as it is; {hostname, port,
 * protocol} with the page's protocol and port for those missing; nothing: the directory of the
 * script svc.js was loaded by, else the page's origin, else the current root (a file: page).
 */
function rootOf(options: BaseUrlArgument, ownSrc: string, current = ''): string {
  if (typeof options === 'string') return options.replace(/\/+$/, '');
  const here = typeof location === 'undefined' ? undefined : location;
  if (options?.hostname) {
    const protocol = options.protocol ?? here?.protocol ?? 'http:';
    const port = options.port ?? here?.port ?? '';
    return `${protocol.endsWith(':') ? protocol : `${protocol}:`}//${options.hostname}${port === '' ? '' : `:${port}`}`;
  }
  const src = ownSrc !== '' ? ownSrc : findScript();
  if (src !== '') {
    try {
      const url = new URL(src, here?.href);
      if (url.protocol === 'http:' || url.protocol === 'https:') return `${url.origin}${url.pathname.slice(0, url.pathname.lastIndexOf('/'))}`;
    } catch {
      // An src URL cannot read: the page's origin below.
    }
  }
  if (here !== undefined && (here.protocol === 'http:' || here.protocol === 'https:')) return here.origin;
  return current;
}

/** The src of the page's <script> loading svc.js (or dpd.js, a page not migrated), '' if none. */
function findScript(): string {
  if (typeof document === 'undefined') return '';
  for (const element of Array.from(document.scripts)) {
    const path = element.src.split(/[?#]/)[0] ?? '';
    if (path.endsWith('/svc.js') || path.endsWith('/dpd.js')) return element.src;
  }
  return '';
}
