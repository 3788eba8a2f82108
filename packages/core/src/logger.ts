import { redactUrl } from './redactUrl.js';
import { accessText, CONTROL, escapeControl, LogBatch } from './logBatch.js';
import { escapeLineBreaks } from './lineBreaks.js';

/** How bad a log line is. */
export type LogLevel = 'info' | 'warn' | 'error';

/**
 * One answered request, for the access log: written once the answer finished (or the connection
 * closed before it did). The query string is left out: it may carry tokens.
 */
export interface AccessEntry {
  /** When the answer finished (ISO). */
  time: string;
  /** The request id, as sent back in X-Request-Id. */
  id: string;
  method: string;
  /** The path, without the query string. */
  path: string;
  /** The status sent, or 0 when the connection closed before the answer began. */
  status: number;
  /** From the request's arrival to the end of the answer, in ms (0.1 ms steps). */
  ms: number;
  /** The session's user id, when a user is logged in. */
  uid: string | undefined;
  /** The client's address (through trusted proxies: the one they name). */
  client: string;
  /** Bytes of the answer, headers included. */
  bytes: number;
  /** True when the connection closed before the whole answer was sent. */
  aborted: boolean;
  /** Which way a Collection answered a GET (its AnswerPlan); undefined for anything else. */
  plan?: string | undefined;
}

/** Where svc writes what happens: one line per event, fields for machines. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** One access-log line per answered request; a logger without it writes none. */
  access?(entry: AccessEntry): void;
}

/** How log lines are written: for people (`text`) or one JSON object per line (`json`). */
export type LogFormat = 'text' | 'json';

/** The part of a writable stream the logger needs (process.stderr, a file stream, a test's sink). */
export interface LogStream {
  write(chunk: string): boolean;
  /** Bytes written but not yet taken by the reader. */
  readonly writableLength: number;
}

/** Options of {@link createConsoleLogger}. */
export interface ConsoleLoggerOptions {
  /** Leave out info lines (commands that print their own progress). */
  quiet?: boolean;
  /** Default `text`. */
  format?: LogFormat;
  /** Default process.stderr (stdout stays for `listening on port` and commands' output). */
  stream?: LogStream;
  /**
   * Bytes the stream may hold unread before lines are dropped (and counted, and the count logged
   * once the reader caught up) instead of kept in memory: a reader slower than the requests must
   * not make the server's memory grow. Default 1 MiB.
   */
  maxBacklogBytes?: number;
  /** Access lines are written together at most this long after their request. Default 50 ms. */
  accessFlushMs?: number;
}

/** A logger writing to a stream, with the number of lines it had to drop. */
export interface ConsoleLogger extends Logger {
  access(entry: AccessEntry): void;
  /** Lines dropped so far because the stream's reader fell behind. */
  readonly dropped: number;
}

/** The log formats, for flags and environment variables. */
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];
export const DEFAULT_LOG_BACKLOG = 1 << 20;
const DEFAULT_ACCESS_FLUSH_MS = 50;

/**
 * Field names whose values never reach a log: root keys, cookies, credentials. Matched on the
 * whole name, in any case, wherever the field sits (headers objects included).
 */
const SECRET_FIELD = /^(?:.*pass(?:word|wd)?|.*secret|.*token|authori[sz]ation|proxy-authorization|cookie|set-cookie|(?:svc|dpd)-ssh-key|.*api[-_]?key|sid|credentials?|root-?key)$/i;
const REDACTED = '[redacted]';
/** A URL with a user part (`scheme://user:password@host`): its password is masked. */
const URL_WITH_USER = /\b[a-z][a-z0-9+.-]*:\/\/[^\s/?#"'<>@]*@[^\s"'<>]*/gi;

/** A text without the passwords of the URLs it names. */
export function redactText(text: string): string {
  if (!text.includes('@') || !text.includes('://')) return text;
  return text.replace(URL_WITH_USER, (url) => redactUrl(url));
}

/**
 * A logger writing lines to stderr: `<time> <level> <message> <fields as JSON>` (text), or one
 * JSON object per line with `time`, `level`, `msg` and the fields (json). Secrets are left out
 * (see {@link SECRET_FIELD}), errors keep their name, code, message, stack and cause.
 */
export function createConsoleLogger(options: ConsoleLoggerOptions = {}): ConsoleLogger {
  const stream = options.stream ?? process.stderr;
  const json = options.format === 'json';
  const maxBacklog = options.maxBacklogBytes ?? DEFAULT_LOG_BACKLOG;
  let dropped = 0;
  let unreported = 0;

  // Access lines wait up to `accessFlushMs` and go out together: one write for all the requests
  // answered meanwhile instead of one each. A write to a pipe wakes its reader on another core,
  // which costs more than the line (bench/RESULTS.md, "Figures from code comments").
  const flushMs = options.accessFlushMs ?? DEFAULT_ACCESS_FLUSH_MS;
  const batch = new LogBatch();
  let scheduled = false;

  const flush = (): void => {
    scheduled = false;
    exitFlushes.delete(flush);
    const lines = batch.lines;
    if (lines === 0) return;
    const text = batch.take();
    if (stream.writableLength > maxBacklog) {
      dropped += lines;
      unreported += lines;
      return;
    }
    if (unreported > 0) {
      const message = `log: ${unreported} lines dropped: the log's reader fell more than ${maxBacklog} bytes behind`;
      unreported = 0;
      stream.write(json ? `${JSON.stringify({ time: new Date().toISOString(), level: 'warn', msg: message })}\n` : `${new Date().toISOString()} warn ${message}\n`);
    }
    stream.write(text);
  };

  /** Queues a line; `now` writes it (and any queued before it, in order) at once. */
  const emit = (line: string, now: boolean): void => {
    // Encoded into the batch at once: only bytes wait for the write (see LogBatch).
    batch.addText(line);
    if (now || batch.full) return flush();
    if (!scheduled) {
      scheduled = true;
      setTimeout(flush, flushMs).unref();
      // A process that exits before then (a fatal error) still writes what is queued.
      exitFlushes.add(flush);
      hookExit();
    }
  };

  const write = (level: LogLevel, message: string, fields?: Record<string, unknown>): void => {
    if (options.quiet && level === 'info') return;
    const time = new Date().toISOString();
    const msg = redactText(message);
    const hasFields = fields !== undefined && Object.keys(fields).length > 0;
    if (json) {
      emit(`${escapeLineBreaks(safeJson(hasFields ? { time, level, msg, ...withoutReserved(fields) } : { time, level, msg }))}\n`, true);
      return;
    }
    emit(`${time} ${level} ${msg.replace(CONTROL, escapeControl)}${hasFields ? ` ${escapeLineBreaks(safeJson(fields))}` : ''}\n`, true);
  };

  return {
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    access(entry) {
      if (options.quiet) return;
      // Built by hand, no replacer: every request writes one, and its fields are known.
      if (json) {
        const { time, ...rest } = entry;
        // A path read as Latin-1 may hold NEL (byte 0x85), which JSON leaves raw.
        emit(`${escapeLineBreaks(JSON.stringify({ time, level: 'info', msg: `${entry.method} ${entry.path} ${entry.status}`, type: 'access', ...rest }))}\n`, false);
        return;
      }
      emit(accessText(entry), false);
    },
    get dropped() {
      return dropped;
    },
  };
}

/** Every console logger's flush, run when the process exits. */
const exitFlushes = new Set<() => void>();
let exitHooked = false;
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', () => {
    for (const flush of exitFlushes) flush();
  });
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** A field named time, level or msg would overwrite the line's own. */
function withoutReserved(fields: Record<string, unknown>): Record<string, unknown> {
  if (!('time' in fields) && !('level' in fields) && !('msg' in fields)) return fields;
  const { time, level, msg, ...rest } = fields;
  return { ...rest, ...(time === undefined ? {} : { fieldTime: time }), ...(level === undefined ? {} : { fieldLevel: level }), ...(msg === undefined ? {} : { fieldMsg: msg }) };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value, redactor);
  } catch {
    return '"[unserialisable]"';
  }
}

function redactor(this: unknown, key: string, value: unknown): unknown {
  if (key !== '' && SECRET_FIELD.test(key) && value !== undefined && value !== null && value !== '') return REDACTED;
  if (typeof value === 'string') return redactText(value);
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: value.message, ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}), stack: value.stack, ...(value.cause === undefined ? {} : { cause: value.cause }) };
  }
  return value;
}
