import type { IncomingMessage } from 'node:http';
import { parse as parseQs } from 'node:querystring';
import { SvcError } from '../errors.js';

/** How a body arrived: JSON keeps its types, a form sends every value as a string. */
export type BodyKind = 'json' | 'form' | 'none';

/** A parsed request body. */
export interface ParsedBody {
  kind: BodyKind;
  value: unknown;
}

/** The default limit of a request body: 1 MB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * Reads and parses a JSON or urlencoded body, refusing what svc cannot read: a malformed body
 * (400), another content type (415) and a body over `limit` bytes (413, stopped early, without
 * buffering the rest).
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<ParsedBody> {
  const parsed = parsedByHost(req);
  if (parsed !== undefined) return parsed;
  const declared = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (declared === undefined || declared === '0')) {
    return { kind: 'none', value: undefined };
  }
  if (declared !== undefined && Number(declared) > limit) {
    throw tooLarge(limit);
  }
  const type = mediaType(req.headers['content-type']);
  if (type !== 'application/json' && type !== 'application/x-www-form-urlencoded' && !type.endsWith('+json')) {
    // Read and dropped until the reply is written; the reply closes the connection (writeReply).
    req.resume();
    throw new SvcError('UNSUPPORTED_MEDIA_TYPE', `unsupported Content-Type ${type || '(none)'}; send application/json or application/x-www-form-urlencoded`);
  }
  const text = await readText(req, limit);
  if (text.length === 0) return { kind: 'none', value: undefined };
  if (type === 'application/x-www-form-urlencoded') {
    const parsed = parseQs(text);
    const value: Record<string, unknown> = {};
    for (const key of Object.keys(parsed)) {
      if (key !== '__proto__') value[key] = parsed[key];
    }
    return { kind: 'form', value };
  }
  try {
    return { kind: 'json', value: JSON.parse(text) as unknown };
  } catch {
    throw new SvcError('INVALID_JSON', 'malformed JSON body');
  }
}

/**
 * Whether a request came with a body that has not all arrived yet, so answering now leaves it on
 * the wire: kept alive, the connection would read (and drop) whatever the client still sends.
 */
export function bodyUnread(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const declared = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (declared !== undefined && declared !== '0');
}

/** `application/json; charset=utf-8` -> `application/json`. */
function mediaType(header: string | undefined): string {
  if (header === undefined) return '';
  const semi = header.indexOf(';');
  return (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
}

function readText(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!failed) resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', (err) => {
      if (!failed) reject(new SvcError('BAD_REQUEST', 'request body could not be read', { cause: err }));
    });
  });
}

function tooLarge(limit: number): SvcError {
  return new SvcError('PAYLOAD_TOO_LARGE', `request body larger than ${limit} bytes`);
}

/**
 * A body a host application already read (express.json(), express.urlencoded(), body-parser): the
 * stream is consumed, so its `req.body` is used as it is (the host's parser applied its own
 * limit). Undefined when svc must read the body itself.
 */
function parsedByHost(req: IncomingMessage): ParsedBody | undefined {
  const r = req as IncomingMessage & { body?: unknown; _body?: unknown };
  if (r.body === undefined || (!r.readableEnded && r._body !== true)) return undefined;
  const type = mediaType(req.headers['content-type']);
  if (type !== 'application/json' && type !== 'application/x-www-form-urlencoded' && !type.endsWith('+json')) {
    throw new SvcError('UNSUPPORTED_MEDIA_TYPE', `unsupported Content-Type ${type || '(none)'}; send application/json or application/x-www-form-urlencoded`);
  }
  return { kind: type === 'application/x-www-form-urlencoded' ? 'form' : 'json', value: r.body };
}
