import type { CallRequest } from './transport.js';

/** A call's arguments sorted by kind: path segments, objects (query/body) and the callback. */
export interface SortedArgs {
  segments: string[];
  objects: unknown[];
  fn: ((result: unknown, error?: unknown) => void) | undefined;
}

/**
 * Sorts dpd.js-style arguments: strings and numbers are path segments, plain objects and arrays
 * are the query and/or body, a function is the callback (the last argument).
 */
export function sortArgs(args: readonly unknown[]): SortedArgs {
  const out: SortedArgs = { segments: [], objects: [], fn: undefined };
  for (const arg of args) {
    if (typeof arg === 'function') out.fn = arg as SortedArgs['fn'];
    else if (typeof arg === 'string' || typeof arg === 'number') out.segments.push(String(arg));
    else if (arg !== undefined && arg !== null) out.objects.push(arg);
  }
  return out;
}

/** '/todos' + ['a', 'b/c'] -> '/todos/a/b/c', every piece URL-encoded. */
export function joinPath(base: string, segments: readonly string[]): string {
  let path = base === '/' ? '' : base;
  for (const segment of segments) {
    for (const piece of segment.split('/')) if (piece !== '') path += `/${encodeURIComponent(piece)}`;
  }
  return path === '' ? '/' : path;
}

/** GET's query string: one parameter per key, complex values as JSON. */
export function encodeQuery(query: Record<string, unknown> | undefined): string {
  if (query === undefined) return '';
  const parts: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    const text = typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(text)}`);
  }
  return parts.join('&');
}

/** put/del's query string: the whole query as JSON in `q`. */
export function encodeQ(query: Record<string, unknown> | undefined): string {
  if (query === undefined || Object.keys(query).length === 0) return '';
  return `q=${encodeURIComponent(JSON.stringify(query))}`;
}

function asQuery(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** Splits `{id, ...rest}` for the collection forms put(query-with-id, ...) and del(query-with-id). */
function idOf(query: Record<string, unknown> | undefined): { id: string; rest: Record<string, unknown> } | undefined {
  const id = query?.id;
  if (typeof id !== 'string' && typeof id !== 'number') return undefined;
  const { id: _id, ...rest } = query as Record<string, unknown>;
  return { id: String(id), rest };
}

/** get([func], [path], [query], fn). */
export function getCall(base: string, args: SortedArgs): CallRequest {
  return { method: 'GET', path: joinPath(base, args.segments), query: encodeQuery(asQuery(args.objects[0])) };
}

/** post/put([path], [query], body, fn); on collections an id in the body or query becomes the path. */
export function bodyCall(method: 'POST' | 'PUT', base: string, args: SortedArgs, collection: boolean): CallRequest {
  const [first, second] = args.objects;
  let query = args.objects.length >= 2 ? asQuery(first) : undefined;
  const body = args.objects.length >= 2 ? second : first;
  let segments = args.segments;
  if (collection && method === 'PUT' && segments.length === 0) {
    const fromQuery = idOf(query);
    const fromBody = idOf(asQuery(body));
    if (fromQuery) {
      segments = [fromQuery.id];
      query = fromQuery.rest;
    } else if (fromBody) {
      segments = [fromBody.id];
    }
  }
  const path = joinPath(base, segments);
  const queryString = method === 'PUT' ? encodeQ(query) : encodeQuery(query);
  return { method, path, query: queryString, body: body ?? {} };
}

/** del([path], [query], fn); on collections del(query-with-id) deletes that id. */
export function delCall(base: string, args: SortedArgs, collection: boolean): CallRequest {
  let query = asQuery(args.objects[0]);
  let segments = args.segments;
  if (collection && segments.length === 0) {
    const fromQuery = idOf(query);
    if (fromQuery) {
      segments = [fromQuery.id];
      query = fromQuery.rest;
    }
  }
  return { method: 'DELETE', path: joinPath(base, segments), query: encodeQ(query) };
}

/** exec(func, [path], [body], fn): POST /<r>/<func>/<path>. */
export function execCall(base: string, func: string, args: SortedArgs): CallRequest {
  const body = args.objects[0];
  return { method: 'POST', path: joinPath(base, [func, ...args.segments]), ...(body === undefined ? {} : { body }) };
}

/** A custom type's method: ([path], [query], [body], fn) sent as `method /<r>/<func>/<path>`. */
export function methodCall(base: string, method: CallRequest['method'], func: string, args: SortedArgs): CallRequest {
  const [first, second] = args.objects;
  const query = args.objects.length >= 2 || method === 'GET' || method === 'DELETE' ? asQuery(first) : undefined;
  const body = args.objects.length >= 2 ? second : method === 'GET' || method === 'DELETE' ? undefined : first;
  const path = joinPath(base, [func, ...args.segments]);
  const queryString = method === 'PUT' || method === 'DELETE' ? encodeQ(query) : encodeQuery(query);
  return { method, path, query: queryString, ...(body === undefined ? {} : { body }) };
}
