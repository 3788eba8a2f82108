import type { SvcErrorBody } from '../types.js';
import { isRawBody } from '../internal/transport.js';
import type { CallRequest } from '../internal/transport.js';
import type { Replica } from './Replica.js';
import type { ReplicaObject } from './types.js';

/**
 * A collection call answered by the replica, or undefined for one it leaves to the server as it
 * is: get by id, post, put and del of one object (without modifiers such as $inc, nor a
 * precondition query, nor files) go through the replica; a list read goes to the server and, when it cannot
 * be reached, is answered from the replica.
 */
export function offlineCall(replica: Replica, path: string, call: CallRequest): Promise<unknown> | undefined {
  const rest = call.path === path ? '' : call.path.startsWith(`${path}/`) ? call.path.slice(path.length + 1) : undefined;
  // Files (a FormData, a file's bytes) are not kept offline: such a write goes to the server as it is.
  if (rest === undefined || rest.includes('/') || isRawBody(call.body)) return undefined;
  const id = rest === '' ? undefined : decodeURIComponent(rest);
  const body = typeof call.body === 'object' && call.body !== null && !Array.isArray(call.body) ? (call.body as Record<string, unknown>) : undefined;
  if (body !== undefined && Object.keys(body).some((key) => key.startsWith('$'))) return undefined;
  switch (call.method) {
    case 'GET':
      if (id !== undefined) return call.query ? undefined : replica.get(path, id).then((o) => o ?? Promise.reject(notFound()));
      return listRead(replica, path, call);
    case 'POST':
      if (id !== undefined || call.query) return undefined;
      return body?.id !== undefined && typeof body.id === 'string' && hasLocal(replica, path, body.id) ? replica.update(path, body.id, withoutId(body)) : replica.create(path, body ?? {});
    case 'PUT':
      return id === undefined || call.query ? undefined : replica.update(path, id, withoutId(body ?? {}));
    case 'DELETE':
      return id === undefined || call.query ? undefined : replica.remove(path, id).then(() => null);
    default:
      return undefined;
  }
}

function hasLocal(replica: Replica, path: string, id: string): boolean {
  return replica.data.objects[path]?.[id] !== undefined || replica.data.queue.some((w) => w.path === path && w.id === id);
}

async function listRead(replica: Replica, path: string, call: CallRequest): Promise<unknown> {
  const query = decodeQuery(call.query);
  try {
    const objects = (await replica.transport.send(call)) as ReplicaObject[];
    if (Array.isArray(objects) && query.$fields === undefined) for (const o of objects) if (typeof o?.id === 'string') replica.confirmed(path, o.id, o);
    return replica.data.queue.some((w) => w.path === path) ? replica.list(path, query) : objects;
  } catch (err) {
    if ((err as SvcErrorBody).status !== 0) throw err;
    return replica.list(path, query);
  }
}

function decodeQuery(text: string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const part of (text ?? '').split('&')) {
    if (part === '') continue;
    const [k, v = ''] = part.split('=');
    const value = decodeURIComponent(v);
    try {
      out[decodeURIComponent(k as string)] = JSON.parse(value) as unknown;
    } catch {
      out[decodeURIComponent(k as string)] = value;
    }
  }
  return out;
}

function withoutId(body: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, ...rest } = body;
  return rest;
}

function notFound(): SvcErrorBody {
  return { status: 404, statusCode: 404, message: 'not found' };
}
