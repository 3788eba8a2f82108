/**
 * The log entries the dashboard's Logs page shows and how they are filtered: one definition for
 * the server (GET /dashboard/api/logs) and the page (entries arriving live), so both agree.
 */

/** A line of the server log (its own lines, script console lines, script errors). */
export interface ServerLogEntry {
  kind: 'log';
  time: string;
  level: 'info' | 'warn' | 'error';
  message: string;
}

/** An answered request (the access log). */
export interface AccessLogEntry {
  kind: 'access';
  time: string;
  level: 'info';
  id: string;
  method: string;
  path: string;
  status: number;
  ms: number;
  uid?: string;
  client: string;
  bytes: number;
  aborted: boolean;
}

export type LogEntry = ServerLogEntry | AccessLogEntry;

/** What the Logs page asks for; every part optional, all given parts must hold. */
export interface LogFilter {
  /** `log` (server lines) or `access` (requests). */
  kind?: 'log' | 'access';
  /** This level or worse. */
  level?: 'info' | 'warn' | 'error';
  /** Requests whose status is in [min, max]. */
  statusMin?: number;
  statusMax?: number;
  /** Requests whose path starts with this. */
  path?: string;
  /** Requests of this user id. */
  user?: string;
  /** Entries at or after / at or before these times (ISO). */
  since?: string;
  until?: string;
  /** Server lines whose message contains this (any case). */
  text?: string;
  /**
   * Leave out the dashboard's own requests: those to /dashboard (its page, its API, its stream)
   * and those whose request id starts with this prefix (the calls the dashboard page makes to the
   * app's API carry it; it is a random value of the server process, given to root only, so no
   * other client can hide its requests behind it). Never taken from a query string.
   */
  withoutDashboard?: string;
}

/** Whether an answered request is one of the dashboard's own (see {@link LogFilter.withoutDashboard}). */
export function isDashboardRequest(entry: AccessLogEntry, idPrefix: string): boolean {
  return entry.path === '/dashboard' || entry.path.startsWith('/dashboard/') || (idPrefix !== '' && entry.id.startsWith(idPrefix));
}

const LEVELS = { info: 0, warn: 1, error: 2 } as const;
/** Query values longer than this are refused: a filter is typed by a person. */
const MAX_VALUE = 512;

/**
 * The filter of a query string's parameters (`kind`, `level`, `status` as `404` / `4xx` /
 * `400-499`, `path`, `user`, `since`, `until`, `text`). Throws a message for a value it cannot use.
 */
export function parseLogFilter(params: Record<string, unknown>): LogFilter {
  const out: LogFilter = {};
  const str = (name: string): string | undefined => {
    const v = params[name];
    if (v === undefined || v === '') return undefined;
    if (typeof v !== 'string' || v.length > MAX_VALUE) throw new Error(`${name} must be a text of at most ${MAX_VALUE} characters`);
    return v;
  };
  const kind = str('kind');
  if (kind !== undefined) {
    if (kind !== 'log' && kind !== 'access') throw new Error('kind must be log or access');
    out.kind = kind;
  }
  const level = str('level');
  if (level !== undefined) {
    if (level !== 'info' && level !== 'warn' && level !== 'error') throw new Error('level must be info, warn or error');
    out.level = level;
  }
  const status = str('status');
  if (status !== undefined) {
    const range = statusRange(status);
    if (range === undefined) throw new Error('status must be a status (404), a class (4xx) or a range (400-499)');
    [out.statusMin, out.statusMax] = range;
  }
  const path = str('path');
  if (path !== undefined) out.path = path;
  const user = str('user');
  if (user !== undefined) out.user = user;
  for (const name of ['since', 'until'] as const) {
    const value = str(name);
    if (value === undefined) continue;
    const time = new Date(value);
    if (Number.isNaN(time.getTime())) throw new Error(`${name} must be a date and time (ISO 8601)`);
    out[name] = time.toISOString();
  }
  const text = str('text');
  if (text !== undefined) out.text = text.toLowerCase();
  return out;
}

function statusRange(text: string): [number, number] | undefined {
  let m = /^([1-5])xx$/i.exec(text);
  if (m) return [Number(m[1]) * 100, Number(m[1]) * 100 + 99];
  m = /^(\d{3})(?:-(\d{3}))?$/.exec(text);
  if (!m) return undefined;
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : Number(m[2]);
  return min <= max ? [min, max] : undefined;
}

/** Whether an entry passes a filter. A request-only part (status, path, user) leaves server lines out. */
export function matchesLogFilter(entry: LogEntry, filter: LogFilter): boolean {
  if (filter.kind !== undefined && entry.kind !== filter.kind) return false;
  if (filter.level !== undefined && LEVELS[entry.level] < LEVELS[filter.level]) return false;
  // ISO times of the same form compare as text.
  if (filter.since !== undefined && entry.time < filter.since) return false;
  if (filter.until !== undefined && entry.time > filter.until) return false;
  if (entry.kind === 'access') {
    if (filter.withoutDashboard !== undefined && isDashboardRequest(entry, filter.withoutDashboard)) return false;
    if (filter.statusMin !== undefined && (entry.status < filter.statusMin || entry.status > (filter.statusMax ?? filter.statusMin))) return false;
    if (filter.path !== undefined && !entry.path.startsWith(filter.path)) return false;
    if (filter.user !== undefined && entry.uid !== filter.user) return false;
    if (filter.text !== undefined && !`${entry.method} ${entry.path}`.toLowerCase().includes(filter.text)) return false;
    return true;
  }
  if (filter.statusMin !== undefined || filter.path !== undefined || filter.user !== undefined) return false;
  return filter.text === undefined || entry.message.toLowerCase().includes(filter.text);
}
