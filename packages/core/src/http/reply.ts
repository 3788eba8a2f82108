import type { ServerResponse } from 'node:http';
import { errorBody, isSvcError, SvcError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Reply } from '../types.js';
import { withoutPaths } from '../withoutPaths.js';
import { bodyUnread } from './readBody.js';

const JSON_TYPE = 'application/json; charset=utf-8';
/** From this many characters on, a body is encoded to bytes once before it is written. */
const LARGE_PAYLOAD = 16 * 1024;

/** Writes a resource's reply: JSON bodies with an exact length, no ETag hashing. */
export function writeReply(res: ServerResponse, reply: Reply): void {
  if (res.headersSent || res.writableEnded) return;
  // An answer before the body was read (413, 415, 404...): the connection closes after it.
  if (bodyUnread(res.req)) res.setHeader('connection', 'close');
  const given = reply.headers;
  if (reply.body === undefined || reply.status === 204) {
    if (given) for (const name in given) res.setHeader(name, given[name] as string | string[]);
    res.statusCode = reply.status;
    res.end();
    return;
  }
  // One writeHead with the reply's headers (node validates each once), as a hand-written server does.
  let type: string | string[] | undefined;
  if (given) for (const name in given) if (name.toLowerCase() === 'content-type') type = given[name];
  let payload: string;
  if (typeof reply.body === 'string' && (type !== undefined || res.hasHeader('content-type'))) {
    payload = reply.body;
  } else {
    payload = JSON.stringify(reply.body);
    type = JSON_TYPE;
  }
  const headers: Record<string, string | string[] | number> = {};
  if (given) {
    for (const name in given) {
      const lower = name.toLowerCase();
      if (lower !== 'content-type' && lower !== 'content-length') headers[name] = given[name] as string | string[];
    }
  }
  if (type !== undefined) headers['content-type'] = type;
  if (payload.length < LARGE_PAYLOAD) {
    headers['content-length'] = Buffer.byteLength(payload);
    res.writeHead(reply.status, headers);
    res.end(payload);
    return;
  }
  // Encoded once: measuring the length of a large string and then writing it would scan it twice.
  const bytes = utf8Of(payload);
  headers['content-length'] = bytes.length;
  res.writeHead(reply.status, headers);
  res.end(bytes);
}

/**
 * writeReply for a 200 whose body is a JSON text, for a request without a body (a GET answered at
 * once): the same bytes, without walking a reply's headers.
 */
export function writeJsonText(res: ServerResponse, text: string, etag?: string): void {
  if (res.headersSent || res.writableEnded) return;
  if (text.length >= LARGE_PAYLOAD || bodyUnread(res.req)) return writeReply(res, { status: 200, body: text, headers: etag === undefined ? { 'content-type': JSON_TYPE } : { 'content-type': JSON_TYPE, etag } });
  if (etag !== undefined) {
    res.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text), etag });
    res.end(text);
    return;
  }
  res.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const encoder = new TextEncoder();

/**
 * A large payload's UTF-8 bytes (as `Buffer.from(payload, 'utf8')`: a lone surrogate is U+FFFD
 * either way). Buffer.from counts the bytes in a pass of its own before it writes them (7 µs of
 * 14 for a 40 KB answer on the bench machine); a JSON answer is mostly ASCII, as many bytes as
 * characters, so it is encoded straight into a buffer of that size, and only an answer that does
 * not fit (characters beyond ASCII) is encoded again by Buffer.from.
 */
export function utf8Of(payload: string): Buffer {
  const bytes = Buffer.allocUnsafe(payload.length);
  const { read, written } = encoder.encodeInto(payload, bytes);
  return read === payload.length ? bytes.subarray(0, written) : Buffer.from(payload, 'utf8');
}

const LOGGED_WHERE_THEY_HAPPEN = new Set(['SCRIPT_ERROR', 'SCRIPT_TIMEOUT', 'STORAGE_FULL', 'STORAGE_FAILED']);
/**
 * A script's own answer: cancel(message, status) and error(). Its status, even 501 or 503, is what
 * the app chose to say, not a failure of the server. (A 5xx message still loses this machine's
 * paths below: a script may pass on the text of an error it caught.)
 */
const SCRIPT_ANSWERS = new Set(['CANCELLED', 'VALIDATION_FAILED']);

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
    if (SCRIPT_ANSWERS.has(err.code)) {
      if (err.status >= 500) options.logger.info(`${options.where}: a script answered ${err.status}: ${err.message}`);
    } else if (err.status >= 500 && !LOGGED_WHERE_THEY_HAPPEN.has(err.code)) {
      // Script failures were logged with file and line where they happened, a disk refusing writes
      // once by the store, with its folder (not once per refused write).
      options.logger.error(`${options.where}: ${err.message}`, { code: err.code, cause: err.cause });
    }
    const body = errorBody(err);
    // A server-side failure's message may carry a cause's text (a file it could not write).
    if (err.status >= 500 && body.message !== undefined) body.message = withoutPaths(body.message);
    const reply: Reply = { status: err.status, body };
    if (err.headers) reply.headers = err.headers;
    return reply;
  }
  options.logger.error(`${options.where}: unexpected error`, { error: err });
  // Development shows the message, but not the server's files (a system error names them: its
  // code only); the log has them.
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const system = err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string' && typeof code === 'string';
  const message = options.production ? 'internal server error' : system ? `internal server error (${code})` : withoutPaths(err instanceof Error ? err.message : String(err));
  return { status: 500, body: errorBody(new SvcError('INTERNAL', message)) };
}
