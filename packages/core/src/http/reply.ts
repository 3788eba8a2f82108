import type { ServerResponse } from 'node:http';
import { isSvcError, SvcError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Reply } from '../types.js';

const JSON_TYPE = 'application/json; charset=utf-8';
/** From this many characters on, a body is encoded to bytes once before it is written. */
const LARGE_PAYLOAD = 16 * 1024;

/** Writes a resource's reply: JSON bodies with an exact length, no ETag hashing. */
export function writeReply(res: ServerResponse, reply: Reply): void {
  if (res.headersSent || res.writableEnded) return;
  if (reply.headers) for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
  if (reply.body === undefined || reply.status === 204) {
    res.statusCode = reply.status;
    res.end();
    return;
  }
  let payload: string;
  if (typeof reply.body === 'string' && res.hasHeader('content-type')) {
    payload = reply.body;
  } else {
    payload = JSON.stringify(reply.body);
    res.setHeader('content-type', JSON_TYPE);
  }
  res.statusCode = reply.status;
  if (payload.length < LARGE_PAYLOAD) {
    res.setHeader('content-length', Buffer.byteLength(payload));
    res.end(payload);
    return;
  }
  // Encoded once: measuring the length of a large string and then writing it would scan it twice.
  const bytes = Buffer.from(payload, 'utf8');
  res.setHeader('content-length', bytes.length);
  res.end(bytes);
}

/** Options of {@link toErrorReply}. */
export interface ErrorReplyOptions {
  production: boolean;
  logger: Logger;
  /** Where it happened, for the log line. */
  where: string;
}

/**
 * Turns anything thrown into the spec's error object. SvcErrors carry their own status and safe
 * message; anything else is a 500 whose message and stack reach the log, and the client only in
 * development.
 */
export function toErrorReply(err: unknown, options: ErrorReplyOptions): Reply {
  if (isSvcError(err)) {
    // Script failures were logged with file and line where they happened.
    if (err.status >= 500 && err.code !== 'SCRIPT_ERROR' && err.code !== 'SCRIPT_TIMEOUT') options.logger.error(`${options.where}: ${err.message}`, { code: err.code, cause: err.cause });
    const reply: Reply = { status: err.status, body: err.toJSON() };
    if (err.headers) reply.headers = err.headers;
    return reply;
  }
  options.logger.error(`${options.where}: unexpected error`, { error: err });
  const message = options.production ? 'internal server error' : err instanceof Error ? err.message : String(err);
  return { status: 500, body: new SvcError('INTERNAL', message).toJSON() };
}
