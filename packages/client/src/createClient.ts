import { makeAccessor } from './internal/accessors.js';
import { CLIENT_API, propertyName } from './internal/names.js';
import type { AccessorContext } from './internal/accessors.js';
import { CookieJar } from './internal/cookieJar.js';
import { RealtimeLink } from './internal/realtimeLink.js';
import type { OpenSocket } from './internal/realtimeLink.js';
import { Transport } from './internal/transport.js';
import { offlineApi } from './offline/offlineApi.js';
import type { ClientTypes, ResourceAccessor, ResourceInfo, ResourceList, SvcClient, UntypedClientTypes } from './types.js';

export { CLIENT_API, propertyName } from './internal/names.js';

/** Options of {@link createClient}. */
export interface ClientOptions {
  /**
   * The app's resources (what `svc types` exports as `resources`). With it, names map to paths
   * (`addfollower` -> `/add-follower`) and only those names exist; without it any name is the
   * resource of that path.
   */
  resources?: ResourceList;
  /** 'lazy' (default): the socket opens on the first on/once/socketReady; 'eager': at once. */
  connect?: 'lazy' | 'eager';
  /** Keep cookies between calls. Default: on where there is no `document` (Node), off in browsers. */
  cookies?: boolean;
  /** Headers for every request, the same object as `client.ajax.headers`. */
  headers?: Record<string, string>;
  /** Send with XMLHttpRequest instead of fetch (what /svc.js does, as dpd.js did). Default false. */
  xhr?: boolean;
  /**
   * Opens the Socket.IO connection (default: socket.io-client's `io`). /svc.js passes one that
   * calls the page's `io.connect`, as dpd.js did, so that a page or a test double replacing it
   * sees the connection.
   */
  openSocket?: OpenSocket;
}


/** Names a Proxy must not invent resources for (promise resolution, inspection, JSON). */
const RESERVED = new Set(['then', 'catch', 'finally', 'toJSON', 'constructor', 'prototype', 'inspect', 'valueOf', 'toString', 'name', 'length', 'caller', 'arguments', 'apply', 'call', 'bind']);

/**
 * Creates an svc client for the server at `baseUrl` ('' for the page's own origin). Every call
 * answers an {@link SvcPromise} and takes an optional callback `fn(result, error)`.
 *
 * @example
 * const svc = createClient<Types>('http://127.0.0.1:2403', { resources });
 * const todos = await svc.todos.get({ done: false, $sort: { order: 1 } });
 */
export function createClient<T extends ClientTypes = UntypedClientTypes>(baseUrl: string, options: ClientOptions = {}): SvcClient<T> {
  const base = baseUrl.replace(/\/+$/, '');
  const ajax = { headers: options.headers ?? {} };
  const keepCookies = options.cookies ?? (globalThis as { document?: unknown }).document === undefined;
  const jar = keepCookies ? new CookieJar() : undefined;
  const ctx: AccessorContext = {
    transport: new Transport({ baseUrl: base, headers: () => ajax.headers, ...(jar ? { jar } : {}), ...(options.xhr === true ? { xhr: true } : {}) }),
    realtime: new RealtimeLink(base, jar, options.openSocket),
  };
  const infos = new Map<string, ResourceInfo>();
  for (const info of options.resources ?? []) infos.set(normalisePath(info.path), info);
  const byProperty = new Map<string, ResourceInfo>();
  for (const info of infos.values()) {
    const name = propertyName(info.path);
    if (name !== undefined) byProperty.set(name, info);
  }

  const lookup = (name: string): { path: string; info: ResourceInfo | undefined } => {
    const path = normalisePath(name);
    const info = infos.get(path) ?? byProperty.get(name);
    return { path: info ? normalisePath(info.path) : path, info };
  };
  const resource = (name: string): ResourceAccessor => {
    const { path, info } = lookup(name);
    return makeAccessor(ctx, path, info, false) as unknown as ResourceAccessor;
  };
  const core = Object.assign(resource, {
    ajax,
    offline: offlineApi(ctx, [...infos.values()]),
    on: (message: string, fn: (data: unknown) => void) => ctx.realtime.on(message, fn as (...args: unknown[]) => void),
    off: (message: string, fn?: (data: unknown) => void) => ctx.realtime.off(message, fn as ((...args: unknown[]) => void) | undefined),
    once: (message: string, fn: (data: unknown) => void) => ctx.realtime.once(message, fn as (...args: unknown[]) => void),
    socketReady: (fn: () => void) => ctx.realtime.socketReady(fn),
    close: () => ctx.realtime.close(),
    setBaseUrl: (url: string) => {
      const next = String(url).replace(/\/+$/, '');
      ctx.transport.baseUrl = next;
      ctx.realtime.setBaseUrl(next);
    },
  });
  Object.defineProperty(core, 'socket', { get: () => ctx.realtime.current, enumerable: false });
  // A function's own `name` and `length` are read-only: resources so called are defined over them.
  // A resource named like the client's own API (on, ajax, ...) is reached through svc('<name>').
  for (const [name, info] of byProperty) {
    if (CLIENT_API.has(name)) continue;
    Object.defineProperty(core, name, { value: makeAccessor(ctx, normalisePath(info.path), info, true), enumerable: true, configurable: true });
  }
  if (options.connect === 'eager') ctx.realtime.connect();
  if (options.resources !== undefined) return core as unknown as SvcClient<T>;
  const made = new Map<string, unknown>();
  return new Proxy(core, {
    get(target, prop, receiver) {
      if (typeof prop !== 'string' || prop in target || RESERVED.has(prop)) return Reflect.get(target, prop, receiver) as unknown;
      let accessor = made.get(prop);
      if (accessor === undefined) {
        accessor = makeAccessor(ctx, normalisePath(prop), undefined, true);
        made.set(prop, accessor);
      }
      return accessor;
    },
  }) as unknown as SvcClient<T>;
}

/** 'todos', '/todos/', 'A/b' -> '/todos', '/todos', '/A/b'; '' and '/' -> '/'. Case is kept: the server's paths are case-sensitive, as Deployd's were. */
function normalisePath(name: string): string {
  const trimmed = name.replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '/' : `/${trimmed}`;
}
