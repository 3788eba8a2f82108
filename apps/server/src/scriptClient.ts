import { isUserResource, recursionLimitOf } from '@svc/core';
import type { Context, InternalRequest, Reply, Resource } from '@svc/core';
import type { HostApi } from '@svc/script-runtime';

/** Calls of the script client that become internal requests. */
type Call = 'get' | 'post' | 'put' | 'del' | 'exec' | 'login' | 'logout' | 'me';

const DEFAULT_LIMIT_RECURSION = 2;

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

/**
 * Builds the host functions of the script client for one request: each call is routed through the
 * app's resources with `internal` set and the request's session, and answers the JSON body, null
 * for an empty one, or throws the error object. A call whose method and path already stand
 * `$limitRecursion` times (default 2) in the chain of internal calls answers null instead of running.
 */
export function scriptClient(
  names: readonly { name: string; path: string; call: Call }[],
  ctx: Context,
  request: (input: InternalRequest) => Promise<Reply>,
): HostApi {
  const api: HostApi = {};
  for (const { name, path, call } of names) {
    api[name] = async (...args: unknown[]) => {
      const input = toRequest(call, path, args, ctx);
      const key = `${input.method} ${input.path}`;
      // The nearest $limitRecursion bounds the whole chain (the outermost request's included).
      const limit = recursionLimitOf(input.query) ?? ctx.limitRecursion ?? recursionLimitOf(ctx.query) ?? DEFAULT_LIMIT_RECURSION;
      if (ctx.callChain.filter((k) => k === key).length >= limit) return null;
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
      return { method: 'GET', path: path(['me']), parent };
  }
}
