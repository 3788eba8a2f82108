import { SvcPromise } from '../SvcPromise.js';
import type { LiveHandler, ResourceInfo, SubscribeOptions } from '../types.js';
import { accountCalls } from './accountCalls.js';
import { bodyCall, delCall, encodeQuery, execCall, getCall, joinPath, methodCall, sortArgs } from './calls.js';
import type { SortedArgs } from './calls.js';
import type { RealtimeLink } from './realtimeLink.js';
import type { CallRequest, Transport } from './transport.js';
import type { Replica } from '../offline/Replica.js';
import { offlineCall } from '../offline/offlineCalls.js';

/** What accessors share: the HTTP transport and the socket (and the replica, once started). */
export interface AccessorContext {
  transport: Transport;
  realtime: RealtimeLink;
  replica?: Replica;
}

type Fn = (...args: unknown[]) => unknown;
type Mapper = (value: unknown) => unknown;
const toNull: Mapper = () => null;

/**
 * Sends one call and answers its promise; the callback, when given, runs after the promise settles
 * (so always asynchronously) with `(result)` or `(null, error)`. It runs outside the promise
 * chain (a microtask of its own), so an exception it throws is an ordinary uncaught error that
 * the page, its test framework and the console attribute to it, not an unhandled rejection.
 */
export function run(ctx: AccessorContext, call: CallRequest, fn: SortedArgs['fn'], map?: Mapper): SvcPromise<unknown> {
  const promise = new SvcPromise<unknown>((resolve, reject) => {
    ctx.transport
      .send(call)
      .then(async (value) => {
        await afterSessionCall(ctx, call, value);
        resolve(map ? map(value) : value);
      })
      .catch(reject);
  });
  if (fn) {
    promise.then(
      (result) => queueMicrotask(() => fn(result)),
      (error: unknown) => queueMicrotask(() => fn(null, error)),
    );
  }
  return promise;
}

/** The account calls of a user collection, each POST /<users>/<name> (a missing flow answers 404). */
const ACCOUNT_CALLS = ['requestPasswordReset', 'confirmPasswordReset', 'requestVerification', 'confirmVerification', 'requestCode', 'loginWithCode'] as const;

/** A login or logout through any path also moves this client's socket to the new session. */
async function afterSessionCall(ctx: AccessorContext, call: CallRequest, value: unknown): Promise<void> {
  if (call.method !== 'POST') return;
  await afterSessionCallOnSocket(ctx, call, value);
  // The replica follows the session: the user signed in now is the one whose replica is open.
  if (ctx.replica !== undefined && (call.path.endsWith('/logout') || call.path.endsWith('/login') || call.path.endsWith('/loginWithCode') || call.path.endsWith('/mfa/verify'))) await ctx.replica.userChanged();
}

async function afterSessionCallOnSocket(ctx: AccessorContext, call: CallRequest, value: unknown): Promise<void> {
  if (call.path.endsWith('/logout')) return ctx.realtime.bind(null);
  // A two-factor login ends at mfa/verify (or mfa/confirm, when it enrolled): the session starts there.
  if (!call.path.endsWith('/login') && !call.path.endsWith('/loginWithCode') && !call.path.endsWith('/mfa/verify') && !call.path.endsWith('/mfa/confirm')) return;
  const session = value as { id?: unknown; uid?: unknown } | null;
  if (typeof session?.id === 'string' && typeof session.uid === 'string') await ctx.realtime.bind(session.id);
}

/** The name messages of a resource are namespaced by: its path without the leading slash. */
function namespaceOf(path: string): string {
  return path.replace(/^\/+/, '');
}

/**
 * The calls of one resource. `full` accessors (svc.<r>) add the collection shorthands, login,
 * logout and me for user collections, upload and removeFile for collections (file properties),
 * the type's methods and namespaced on/off/once;
 * `svc('<name>')` answers only get, post, put, del and exec.
 */
export function makeAccessor(ctx: AccessorContext, path: string, info: ResourceInfo | undefined, full: boolean): Record<string, Fn> {
  const collection = info?.kind === 'collection' || info?.kind === 'users';
  // With a replica (svc.offline.start), a collection's reads and writes go through it (offlineCalls.ts).
  const local = (call: CallRequest, fn: SortedArgs['fn']): SvcPromise<unknown> | undefined => {
    const answer = collection && ctx.replica !== undefined ? offlineCall(ctx.replica, path, call) : undefined;
    return answer === undefined ? undefined : settle(answer, fn);
  };
  const out: Record<string, Fn> = {
    get: (...args) => {
      const a = sortArgs(args);
      const call = getCall(path, a);
      return local(call, a.fn) ?? run(ctx, call, a.fn);
    },
    post: (...args) => {
      const a = sortArgs(args);
      const call = bodyCall('POST', path, a, collection);
      return local(call, a.fn) ?? run(ctx, call, a.fn);
    },
    put: (...args) => {
      const a = sortArgs(args);
      const call = bodyCall('PUT', path, a, collection);
      return local(call, a.fn) ?? run(ctx, call, a.fn);
    },
    del: (...args) => {
      const a = sortArgs(args);
      const call = delCall(path, a, collection);
      return local(call, a.fn) ?? run(ctx, call, a.fn, collection ? toNull : undefined);
    },
    exec: (func, ...args) => {
      const a = sortArgs(args);
      return run(ctx, execCall(path, String(func), a), a.fn);
    },
  };
  if (!full) return out;
  if (collection || info === undefined) {
    // File properties (docs/files.md): a file's bytes to /<c>/<id>/<property>, PUT to replace, POST to add.
    out.upload = (id, property, file, options, fn) => {
      const opts = (typeof options === 'object' && options !== null ? options : {}) as { name?: string; add?: boolean };
      const name = opts.name ?? (file as { name?: unknown }).name;
      const call: CallRequest = { method: opts.add === true ? 'POST' : 'PUT', path: joinPath(path, [String(id), String(property)]), query: typeof name === 'string' ? encodeQuery({ name }) : '', body: file };
      return run(ctx, call, callback(typeof options === 'function' ? options : fn));
    };
    out.removeFile = (id, property, fileId, fn) => {
      const segments = [String(id), String(property), ...(typeof fileId === 'string' ? [fileId] : [])];
      return run(ctx, { method: 'DELETE', path: joinPath(path, segments) }, callback(typeof fileId === 'function' ? fileId : fn));
    };
  }
  if (info === undefined || info.kind === 'users') {
    out.login = (credentials, fn) => run(ctx, { method: 'POST', path: `${path}/login`, body: credentials }, callback(fn));
    out.logout = (fn) => run(ctx, { method: 'POST', path: `${path}/logout` }, callback(fn), toNull);
    // The mail-based account calls (docs/accounts.md): POST /<users>/<name> with one object.
    for (const name of ACCOUNT_CALLS) out[name] = (body, fn) => run(ctx, { method: 'POST', path: `${path}/${name}`, body }, callback(fn), name === 'confirmPasswordReset' ? toNull : undefined);
    // me(fn), me(query, fn), me(query): the arguments of get, as dpd.js's me (get('me', ...)); the
    // query reaches On BeforeRequest and On Get. A path segment is ignored, as in scripts.
    out.me = (...args) => {
      const a = sortArgs(args);
      return run(ctx, getCall(`${path}/me`, { ...a, segments: [] }), a.fn);
    };
    Object.assign(out, accountCalls(ctx, path, run));
  }
  for (const [name, spec] of Object.entries(info?.methods ?? {})) {
    if (name in out) continue;
    out[name] = (...args) => {
      const a = sortArgs(args);
      return run(ctx, methodCall(path, spec.method, spec.func, a), a.fn);
    };
  }
  const ns = namespaceOf(path);
  out.on = (message, fn) => ctx.realtime.on(`${ns}:${String(message)}`, fn as Fn);
  out.off = (message, fn) => ctx.realtime.off(`${ns}:${String(message)}`, fn as Fn | undefined);
  out.once = (message, fn) => ctx.realtime.once(`${ns}:${String(message)}`, fn as Fn);
  if (collection || info === undefined) {
    out.subscribe = (query, handler, options) => {
      if (typeof handler !== 'function') throw new TypeError(`svc${path.replace(/\//g, '.')}.subscribe(query, handler, options): handler must be a function`);
      const q = typeof query === 'object' && query !== null ? (query as Record<string, unknown>) : {};
      if (collection && ctx.replica !== undefined) return ctx.replica.subscribe(path, q, handler as LiveHandler<Record<string, unknown> & { id: string }>);
      return ctx.realtime.subscribe(path, q, handler as LiveHandler<Record<string, unknown> & { id: string }>, (options ?? {}) as SubscribeOptions);
    };
  }
  return out;
}

/** A replica's answer as a call's promise, with the callback after it as `run` does. */
function settle(answer: Promise<unknown>, fn: SortedArgs['fn']): SvcPromise<unknown> {
  const promise = new SvcPromise<unknown>((resolve, reject) => void answer.then(resolve, reject));
  if (fn) {
    promise.then(
      (result) => queueMicrotask(() => fn(result)),
      (error: unknown) => queueMicrotask(() => fn(null, error)),
    );
  }
  return promise;
}

function callback(fn: unknown): SortedArgs['fn'] {
  return typeof fn === 'function' ? (fn as SortedArgs['fn']) : undefined;
}
