import { SvcError, isPlainObject, isSvcError } from '@svc/core';
import type { Collection, Logger } from '@svc/core';
import type { SubscribeRequest } from './protocol.js';

const MAX_ID = 64;
const MAX_PATH = 256;

/** A client's subscribe message, checked: 400 naming what is wrong. */
export function parseRequest(raw: unknown): SubscribeRequest {
  if (!isPlainObject(raw)) throw new SvcError('BAD_REQUEST', 'subscribe takes an object {id, path, query, snapshot, since}');
  const { id, path, query, snapshot, since } = raw;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID) throw new SvcError('BAD_REQUEST', `id must be a string of 1 to ${MAX_ID} characters`);
  if (typeof path !== 'string' || path.length === 0 || path.length > MAX_PATH) throw new SvcError('BAD_REQUEST', "path must be a collection's path ('/todos')");
  if (query !== undefined && !isPlainObject(query)) throw new SvcError('BAD_REQUEST', 'query must be an object (GET’s query language)');
  if (snapshot !== undefined && typeof snapshot !== 'boolean') throw new SvcError('BAD_REQUEST', 'snapshot must be true or false');
  if (since !== undefined && (typeof since !== 'number' || !Number.isInteger(since) || since < 0)) throw new SvcError('BAD_REQUEST', 'since must be a sequence number (an integer >= 0)');
  return { id, path, ...(query !== undefined ? { query } : {}), ...(snapshot !== undefined ? { snapshot } : {}), ...(since !== undefined ? { since } : {}) };
}

/** An error as a client may see it: a svc error's status and message; anything else is logged and 500. */
export function errorOf(err: unknown, logger: Logger): { status: number; message: string } {
  if (isSvcError(err) && err.status < 500) return { status: err.status, message: err.message };
  logger.warn('realtime: a live query failed', { error: err });
  return { status: isSvcError(err) ? err.status : 500, message: isSvcError(err) ? err.message : 'the live query could not start' };
}

/**
 * What GET takes but a live query cannot follow yet: `$expand` and `$total` (answers beside the
 * objects), and filters across a relation (`{"author.name": "ann"}`: a change of the related
 * object would change the match). Refused (400) rather than answered differently from GET.
 */
export function assertLiveQuery(collection: Collection, query: Record<string, unknown>): void {
  for (const key of Object.keys(query)) {
    if (key === '$expand' || key === '$total') throw new SvcError('INVALID_QUERY', `live queries do not take ${key}`);
    const dot = key.indexOf('.');
    if (dot > 0 && collection.properties[key.slice(0, dot)]?.type === 'relation') throw new SvcError('INVALID_QUERY', `live queries do not filter across a relation (${key})`);
  }
}
