import { isUserResource, recursionLimitOf } from '@svc/core';
import type { Context, InternalRequest, Reply, Resource } from '@svc/core';
import { CallbackError } from '@svc/script-runtime';
import type { HostApi } from '@svc/script-runtime';

/** Calls of the script client that become internal requests. */
type Call = 'get' | 'post' | 'put' | 'del' | 'exec' | 'login' | 'logout' | 'me';

const DEFAULT_LIMIT_RECURSION = 2;
/** Largest `$limitRecursion` a non-root request may ask for, unless app.json's scripts.recursionCap says otherwise. */
export const DEFAULT_RECURSION_CAP = 10;

/** The `svc` client inside scripts: one host function per resource and call, named 'svc.<r>.<call>'. */
export function scriptClientNames(resources: readonly Resource[]): { name: string; path: string; call: Call }[] {
  const out: { name: string; path: string; call: Call }[] = [];
  for (const resource of resources) {
    const key = resource.path
      .slice(1)
      .split('/')
      .map((s) => s.replace(/-/g, ''))
      .join('.');
    const calls: Call[] = ['get', 'post', 'put', 'del', 'exec'];
    if (isUserResource(resource)) calls.push('login', 'logout', 'me');
    for (const call of calls) out.push({ name: `svc.${key}.${call}`, path: resource.path, call });
  }
  return out;
}

/** Limits of the script client for one app. */
export interface ScriptClientLimits {
  /** Largest `$limitRecursion` a non-root request may ask for (root may ask more). */
  recursionCap: number;
  /** Refuses new internal calls of a request whose budget is spent or whose client went away. */
  check?: (ctx: Context) => void;
}

/**
 * Builds the host functions of the script client for one request: each call is routed through the
 * app's resources with `internal` set and the request's session, and answers the JSON body, null
 * for an empty one, or throws the error object.
 *
 * Recursion is counted as Deployd counts it: per "METHOD /path", over every internal call of the
 * whole request (RequestScope.calls, shared by nested calls), not per level of nesting, which
 * fans out exponentially when a script reads its own collection. A call past the limit (default
 * 2, or the `$limitRecursion` asked for, capped for non-root requests) is not made: its callback
 * gets the error "Recursive call to GET /rec detected", as in Deployd, and an awaiting script gets
 * null (svc's answer before, so that a bounded tree does not fail the request).
 */
export function scriptClient(
  names: readonly { name: string; path: string; call: Call }[],
  ctx: Context,
  request: (input: InternalRequest) => Promise<Reply>,
  limits: ScriptClientLimits = { recursionCap: DEFAULT_RECURSION_CAP },
): HostApi {
  const api: HostApi = {};
  const scope = ctx.scope;
  for (const { name, path, call } of names) {
    api[name] = async (...args: unknown[]) => {
      limits.check?.(ctx);
      const input = toRequest(call, path, args, ctx);
      const key = `${input.method} ${input.path}`;
      // As in Deployd, a call's own $limitRecursion sets the limit of the tree from then on.
      const asked = recursionLimitOf(input.query);
      if (asked !== undefined) scope.limitRecursion = asked;
      const wanted = scope.limitRecursion ?? DEFAULT_LIMIT_RECURSION;
      const limit = ctx.isRoot ? wanted : Math.min(wanted, limits.recursionCap);
      const made = scope.calls.get(key) ?? 0;
      if (made >= limit) return new CallbackError(`Recursive call to ${key} detected`);
      scope.calls.set(key, made + 1);
      const reply = await request(input);
      if (reply.status >= 400) throw reply.body ?? { status: reply.status };
      return reply.body === undefined ? null : reply.body;
    };
  }
  return api;
}

/** The client library's argument rules: strings and numbers are path segments, objects query and body. */
function toRequest(call: Call, base: string, args: unknown[], parent: Context): InternalRequest {
  const segments: string[] = [];
  const objects: Record<string, unknown>[] = [];
  for (const arg of args) {
    if (typeof arg === 'string' || typeof arg === 'number') segments.push(String(arg));
    else if (arg !== null && typeof arg === 'object' && !Array.isArray(arg)) objects.push(arg as Record<string, unknown>);
  }
  // As in Deployd's client, a '/' inside an argument separates segments: svc.r.get('a/b') is /r/a/b.
  const path = (prefix: string[]) =>
    [base, ...[...prefix, ...segments].flatMap((s) => s.split('/')).map(encodeURIComponent)].join('/').replace(/\/+/g, '/');
  switch (call) {
    case 'get':
      return { method: 'GET', path: path([]), query: objects[0] ?? {}, parent };
    case 'del':
      return { method: 'DELETE', path: path([]), query: objects[0] ?? {}, parent };
    case 'post':
    case 'put': {
      const body = objects.length > 0 ? objects[objects.length - 1] : {};
      const query = objects.length > 1 ? objects[0] : {};
      return { method: call === 'post' ? 'POST' : 'PUT', path: path([]), query, body, parent };
    }
    case 'exec':
      return { method: 'POST', path: path([]), query: {}, body: objects[0] ?? {}, parent };
    case 'login':
      return { method: 'POST', path: path(['login']), body: objects[0] ?? {}, parent };
    case 'logout':
      return { method: 'POST', path: path(['logout']), parent };
    case 'me':
      // me(fn), me(query, fn), me(query): the arguments of get (a path segment is ignored).
      return { method: 'GET', path: [base, 'me'].join('/').replace(/\/+/g, '/'), query: objects[0] ?? {}, parent };
  }
}
