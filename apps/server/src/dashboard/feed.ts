import type { Doc, Filter, Logger, Store, StoreCollection, UpdateOps } from '@svc/core';

/** One thing the dashboard shows live: a log line or a change of a collection's objects. */
export type FeedEvent =
  | { kind: 'log'; time: string; level: 'info' | 'warn' | 'error'; message: string }
  | { kind: 'change'; collection: string; op: 'insert' | 'update' | 'remove'; id?: string }
  | { kind: 'reload'; time: string };

/** How many log lines a dashboard that opens now still sees. */
const RECENT_LOGS = 200;

/**
 * What happens in this process, for the dashboards watching it: log lines (the server's own,
 * script console lines and script errors) and changes of stored objects, wherever they came from.
 * Emitting costs nothing while no dashboard listens.
 */
export class Feed {
  private readonly listeners = new Set<(event: FeedEvent) => void>();
  private readonly recent: FeedEvent[] = [];

  get listening(): boolean {
    return this.listeners.size > 0;
  }

  /** The last log lines, oldest first. */
  recentLogs(): readonly FeedEvent[] {
    return this.recent;
  }

  subscribe(listener: (event: FeedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: FeedEvent): void {
    if (event.kind === 'log') {
      this.recent.push(event);
      if (this.recent.length > RECENT_LOGS) this.recent.shift();
    }
    for (const listener of this.listeners) listener(event);
  }
}

/** A logger that also hands every line to the feed. */
export function teeLogger(logger: Logger, feed: Feed): Logger {
  const tee = (level: 'info' | 'warn' | 'error') => (message: string, fields?: Record<string, unknown>) => {
    logger[level](message, fields);
    feed.emit({ kind: 'log', time: new Date().toISOString(), level, message });
  };
  return { info: tee('info'), warn: tee('warn'), error: tee('error') };
}

/**
 * The store, telling the feed about every insert, update and remove once it succeeded (sessions
 * excepted: they are no app data). Reads pass straight through.
 */
export function feedStore(store: Store, feed: Feed): Store {
  const wrapped = new Map<string, StoreCollection>();
  return {
    kind: store.kind,
    close: () => store.close(),
    ...(store.renameCollection ? { renameCollection: store.renameCollection.bind(store) } : {}),
    ...(store.ping ? { ping: store.ping.bind(store) } : {}),
    collection(name: string): StoreCollection {
      let collection = wrapped.get(name);
      if (collection === undefined) {
        const inner = store.collection(name);
        collection = name.startsWith('_') ? inner : feedCollection(inner, name, feed);
        wrapped.set(name, collection);
      }
      return collection;
    },
  };
}

function feedCollection(inner: StoreCollection, name: string, feed: Feed): StoreCollection {
  const changed = (op: 'insert' | 'update' | 'remove', id: unknown): void => {
    if (feed.listening) feed.emit({ kind: 'change', collection: name, op, ...(typeof id === 'string' ? { id } : {}) });
  };
  const out: StoreCollection = {
    name: inner.name,
    find: (filter: Filter, options) => inner.find(filter, options),
    findOne: (filter: Filter, options) => inner.findOne(filter, options),
    count: (filter: Filter) => inner.count(filter),
    ensureIndex: (spec) => inner.ensureIndex(spec),
    async insert(doc: Doc) {
      const stored = await inner.insert(doc);
      changed('insert', stored.id);
      return stored;
    },
    async update(filter: Filter, ops: UpdateOps) {
      const updated = await inner.update(filter, ops);
      if (updated) changed('update', updated.id);
      return updated;
    },
    async remove(filter: Filter) {
      const removed = await inner.remove(filter);
      if (removed > 0) changed('remove', removed === 1 ? filter.id : undefined);
      return removed;
    },
  };
  if (inner.findJson) out.findJson = inner.findJson.bind(inner);
  if (inner.findOneJson) out.findOneJson = inner.findOneJson.bind(inner);
  if (inner.findOneJsonNow) out.findOneJsonNow = inner.findOneJsonNow.bind(inner);
  return out;
}
