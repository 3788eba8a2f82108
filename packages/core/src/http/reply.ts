import type { ServerResponse } from 'node:http';
import { errorBody, isSvcError, SvcError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Reply } from '../types.js';
import { withoutPaths } from '../withoutPaths.js';
import { bodyUnread } from './readBody.js';

const JSON_TYPE = 'application/json; charset=utf-8';
/** From this many characters on, a body is encoded to bytes once before it is written. */
const LARGE_PAYLOAD = 16 * 1024;

/**
 * True for a status a reply may have: a whole number from 200 to 599. Node refuses anything
 * outside 100-999 by throwing; 100-199 are not final answers (the client waits for another) and
 * 600-999 are no HTTP status. Scripts' cancel() and resource types hand statuses to core: each is
 * checked here before it reaches the wire.
 */
export function isAnswerStatus(status: unknown): status is number {
  return typeof status === 'number' && Number.isInteger(status) && status >= 200 && status <= 599;
}

/** A value that should have been a status, for a log line (short, and never throws). */
export function describeStatus(status: unknown): string {
  if (typeof status === 'number') return Object.is(status, -0) ? '-0' : String(status);
  if (typeof status === 'string') return JSON.stringify(status.length > 20 ? `${status.slice(0, 20)}...` : status);
  return status === null ? 'null' : typeof status;
}

/**
 * Writes a resource's reply: JSON bodies with an exact length, no ETag hashing. Never throws: a
 * status HTTP cannot carry, a header value node refuses or a body JSON cannot write (a resource
 * type's own reply) answers 500 instead, logged with `logger`; when even that cannot be written
 * (the headers went out already) the connection is closed.
 */
export function writeReply(res: ServerResponse, reply: Reply, logger?: Logger): void {
  if (res.headersSent || res.writableEnded) return;
  try {
    if (isAnswerStatus(reply.status)) return writeChecked(res, reply);
    logger?.error(`a reply with status ${describeStatus(reply.status)}, which is not an HTTP status (200-599): answered 500 instead`);
  } catch (err) {
    try {
      logger?.error('a reply could not be written: answered 500 instead', { error: err });
    } catch {
      // A logger of the host's that throws: the answer below matters more than the line.
    }
  }
  writeInternalError(res, reply);
}

/**
 * The last answer of a request whose own answer could not be written: 500 with the spec's error
 * body, or a closed connection when the headers went out already. Never throws. `refused`: the
 * reply that could not be written, whose headers set before one failed are taken back.
 */
export function writeInternalError(res: ServerResponse, refused?: Reply): void {
  try {
    if (res.writableEnded) return;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const headers = refused?.headers;
    if (headers) for (const name in headers) res.removeHeader(name);
    res.writeHead(500, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(INTERNAL_BODY) });
    res.end(INTERNAL_BODY);
  } catch {
    // Nothing more can be said on this connection (a listener of the host's threw): it goes.
    res.destroy();
  }
}

const INTERNAL_BODY = JSON.stringify(errorBody(new SvcError('INTERNAL', 'internal server error')));

/** writeReply for a reply whose status is checked: may throw (a header value node refuses). */
function writeChecked(res: ServerResponse, reply: Reply): void {
  // An answer before the body was read (413, 415, 404...): the connection closes after it.
  if (bodyUnread(res.req)) res.setHeader('connection', 'close');
  const given = reply.headers;
  // 204 and 304 have no body (node would drop it after announcing its length).
  if (reply.body === undefined || reply.status === 204 || reply.status === 304) {
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
 * either way). Buffer.from counts the bytes in a pass of its own before it writes them (half of
 * the encoding's time: bench/RESULTS.md, "Figures from code comments"); a JSON answer is mostly ASCII, as many bytes as
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
  if (isSvcError(err) && !isAnswerStatus(err.status)) {
    // A resource type's cancelError(message, 0), say: its status must not reach writeHead.
    options.logger.error(`${options.where}: an error with status ${describeStatus(err.status)}, which is not an HTTP status (200-599); answered 500 instead`, { code: err.code, message: err.message });
    return { status: 500, body: errorBody(new SvcError('INTERNAL', 'internal server error')) };
  }
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
