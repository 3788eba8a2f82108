import { forwardCollection, forwardStore, redactText } from '@svc/core';
import type { AccessEntry, Doc, Filter, Logger, PromisedMethod, Store, StoreCollection } from '@svc/core';
import type { AccessLogEntry, LogEntry, ServerLogEntry } from '@svc/dashboard';
import { LogRing } from './logRing.js';

/** One thing the dashboard shows live: a log line, an answered request or a change of a collection's objects. */
export type FeedEvent = LogEntry | { kind: 'change'; collection: string; op: 'insert' | 'update' | 'remove'; id?: string } | { kind: 'reload'; time: string };

/** How many server log lines a dashboard that opens now still sees in its log panel. */
const RECENT_LOGS = 200;

/**
 * What happens in this process, for the dashboards watching it: log lines (the server's own,
 * script console lines and script errors), answered requests and changes of stored objects,
 * wherever they came from. The last log entries are kept (bounded: {@link LogRing}) for the Logs
 * page; live events cost nothing while no dashboard listens.
 */
export class Feed {
  private readonly listeners = new Set<(event: FeedEvent) => void>();
  private readonly recent: ServerLogEntry[] = [];
  /** The server's last log entries, requests included, for GET /dashboard/api/logs. */
  readonly logs: LogRing;

  constructor(options: { maxEntries?: number; maxBytes?: number } = {}) {
    this.logs = new LogRing(options);
  }

  get listening(): boolean {
    return this.listeners.size > 0;
  }

  /** The last server log lines (no requests), oldest first. */
  recentLogs(): readonly ServerLogEntry[] {
    return this.recent;
  }

  /** An answered request: kept, and sent to the dashboards following. */
  access(entry: AccessEntry): void {
    // Kept in the ring's columns, not as an object: nothing of a request outlives it (GC).
    this.logs.pushAccess(entry);
    if (this.listeners.size === 0) return;
    // One literal of a fixed shape, only for the dashboards following.
    const event: AccessLogEntry = { kind: 'access', time: entry.time, level: 'info', id: entry.id, method: entry.method, path: entry.path, status: entry.status, ms: entry.ms, client: entry.client, bytes: entry.bytes, aborted: entry.aborted };
    if (entry.uid !== undefined) event.uid = entry.uid;
    for (const listener of this.listeners) listener(event);
  }

  subscribe(listener: (event: FeedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: FeedEvent): void {
    if (event.kind === 'log') {
      this.recent.push(event);
      if (this.recent.length > RECENT_LOGS) this.recent.shift();
      this.logs.push(event);
    }
    for (const listener of this.listeners) listener(event);
  }
}

/** A logger that also hands every line and every access line to the feed. */
export function teeLogger(logger: Logger, feed: Feed): Logger {
  const tee = (level: 'info' | 'warn' | 'error') => (message: string, fields?: Record<string, unknown>) => {
    logger[level](message, fields);
    feed.emit({ kind: 'log', time: new Date().toISOString(), level, message: redactText(message) });
  };
  const access = logger.access?.bind(logger);
  return {
    info: tee('info'),
    warn: tee('warn'),
    error: tee('error'),
    access(entry) {
      access?.(entry);
      feed.access(entry);
    },
  };
}

/**
 * The store, telling the feed about every insert, update and remove once it succeeded (sessions
 * excepted: they are no app data). Every other method passes straight through (forwardStore).
 */
export function feedStore(store: Store, feed: Feed): Store {
  return forwardStore(store, { collection: (inner, name) => (name.startsWith('_') ? inner : feedCollection(inner, name, feed)) });
}

function feedCollection(inner: StoreCollection, name: string, feed: Feed): StoreCollection {
  const changed = (op: 'insert' | 'update' | 'remove', id: unknown): void => {
    if (feed.listening) feed.emit({ kind: 'change', collection: name, op, ...(typeof id === 'string' ? { id } : {}) });
  };
  return forwardCollection(inner, {
    call(method, run, args) {
      // A read changes nothing: its promise as it is (no second promise and turn per read).
      return WRITES.has(method) ? told(method, run, args) : run();
    },
  });
  async function told(method: PromisedMethod, run: () => Promise<unknown>, args: readonly unknown[]): Promise<unknown> {
    const result = await run();
    if (method === 'insert') changed('insert', (result as Doc).id);
    else if (method === 'insertMany') for (const doc of args[0] as Doc[]) changed('insert', doc.id);
    else if (method === 'insertAtCommit') changed('insert', undefined);
    else if (method === 'update' && result !== null) changed('update', (result as Doc).id);
    else if (method === 'updateMany' && (result as number) > 0) changed('update', undefined);
    else if (method === 'remove' && (result as number) > 0) changed('remove', result === 1 ? (args[0] as Filter).id : undefined);
    return result;
  }
}

/** The methods whose success the feed tells (the others pass straight through). */
const WRITES: ReadonlySet<PromisedMethod> = new Set<PromisedMethod>(['insert', 'insertMany', 'insertAtCommit', 'update', 'updateMany', 'remove']);
