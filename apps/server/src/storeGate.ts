import { SvcError } from '@svc/core';
import type { Store, StoreCollection } from '@svc/core';

/** Seconds a client is told to wait (Retry-After) while the store is closed for a restore. */
const RETRY_AFTER_SECONDS = 5;

/**
 * A store that can be closed to requests for a while (a restore from the dashboard): while closed,
 * every call answers 503 UNAVAILABLE with Retry-After; `close()` resolves once the calls already
 * under way are done, so that nothing but the restore touches the store meanwhile.
 */
export interface StoreGate {
  readonly store: Store;
  readonly closed: boolean;
  /** Closes the gate and waits (at most `waitMs`) for the calls under way; rejects, open again, when they do not end. */
  close(reason: string, waitMs: number): Promise<void>;
  open(): void;
}

export function gateStore(inner: Store): StoreGate {
  let reason: string | undefined;
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const refuse = (): never => {
    throw new SvcError('UNAVAILABLE', `${reason ?? 'the store is closed'}; try again in a few seconds`, { headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } });
  };
  const through = async <T>(call: () => Promise<T>): Promise<T> => {
    if (reason !== undefined) refuse();
    inFlight++;
    try {
      return await call();
    } finally {
      inFlight--;
      if (inFlight === 0) idle?.();
    }
  };
  const collections = new Map<string, StoreCollection>();
  const collection = (name: string): StoreCollection => {
    let out = collections.get(name);
    if (out) return out;
    const c = inner.collection(name);
    out = {
      name: c.name,
      find: (filter, options) => through(() => c.find(filter, options)),
      findOne: (filter, options) => through(() => c.findOne(filter, options)),
      count: (filter) => through(() => c.count(filter)),
      insert: (doc) => through(() => c.insert(doc)),
      findRevised: (id) => through(() => c.findRevised(id)),
      // The revision condition passes through: dropped, a conditional write would apply whatever the revision.
      update: (filter, ops, condition) => through(() => c.update(filter, ops, condition)),
      remove: (filter, condition) => through(() => c.remove(filter, condition)),
      ensureIndex: (spec) => through(() => c.ensureIndex(spec)),
      ...(c.findJson ? { findJson: (filter, options) => through(() => (c.findJson as NonNullable<StoreCollection['findJson']>).call(c, filter, options)) } : {}),
      ...(c.findWithJson ? { findWithJson: (filter, options) => through(() => (c.findWithJson as NonNullable<StoreCollection['findWithJson']>).call(c, filter, options)) } : {}),
      ...(c.aggregate ? { aggregate: (filter, spec) => through(() => (c.aggregate as NonNullable<StoreCollection['aggregate']>).call(c, filter, spec)) } : {}),
      ...(c.findTexts ? { findTexts: (filter, options, pick) => through(() => (c.findTexts as NonNullable<StoreCollection['findTexts']>).call(c, filter, options, pick)) } : {}),
      ...(c.findOneJson ? { findOneJson: (id: string) => through(() => (c.findOneJson as NonNullable<StoreCollection['findOneJson']>).call(c, id)) } : {}),
      // At once or not at all: while closed, undefined sends the request the usual way (a 503).
      ...(c.findOneJsonNow ? { findOneJsonNow: (id: string) => (reason !== undefined ? undefined : (c.findOneJsonNow as NonNullable<StoreCollection['findOneJsonNow']>).call(c, id)) } : {}),
      ...(c.findTextsOfIdsNow ? { findTextsOfIdsNow: (ids: readonly string[], pick: readonly string[]) => (reason !== undefined ? undefined : (c.findTextsOfIdsNow as NonNullable<StoreCollection['findTextsOfIdsNow']>).call(c, ids, pick)) } : {}),
      ...(c.findOneWithJsonNow ? { findOneWithJsonNow: (id: string) => (reason !== undefined ? undefined : (c.findOneWithJsonNow as NonNullable<StoreCollection['findOneWithJsonNow']>).call(c, id)) } : {}),
      ...(c.insertMany ? { insertMany: (docs) => through(() => (c.insertMany as NonNullable<StoreCollection['insertMany']>).call(c, docs)) } : {}),
      ...(c.updateMany ? { updateMany: (filter, ops) => through(() => (c.updateMany as NonNullable<StoreCollection['updateMany']>).call(c, filter, ops)) } : {}),
      ...(c.dropIndex ? { dropIndex: (field: string) => through(() => (c.dropIndex as NonNullable<StoreCollection['dropIndex']>).call(c, field)) } : {}),
    };
    collections.set(name, out);
    return out;
  };
  const store: Store = {
    kind: inner.kind,
    collection,
    close: () => inner.close(),
    ...(inner.renameCollection ? { renameCollection: (from: string, to: string) => through(() => (inner.renameCollection as NonNullable<Store['renameCollection']>).call(inner, from, to)) } : {}),
    ...(inner.listCollections ? { listCollections: () => through(() => (inner.listCollections as NonNullable<Store['listCollections']>).call(inner)) } : {}),
    ...(inner.ping ? { ping: () => through(() => (inner.ping as NonNullable<Store['ping']>).call(inner)) } : {}),
  };
  return {
    store,
    get closed() {
      return reason !== undefined;
    },
    async close(why, waitMs) {
      if (reason !== undefined) throw new Error('the store is closed already');
      reason = why;
      if (inFlight === 0) return;
      const done = new Promise<void>((resolve) => (idle = resolve));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), waitMs)));
      const outcome = await Promise.race([done, late]);
      clearTimeout(timer);
      idle = undefined;
      if (outcome === 'late') {
        reason = undefined;
        throw new SvcError('UNAVAILABLE', `requests under way did not finish in ${waitMs / 1000} s; nothing was changed, try again`, { headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } });
      }
    },
    open() {
      reason = undefined;
    },
  };
}

/** Runs one piece of work at a time, in call order. */
export type Exclusive = <T>(work: () => Promise<T>) => Promise<T>;

export function createExclusive(): Exclusive {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(work: () => Promise<T>): Promise<T> => {
    const run = tail.then(work, work);
    tail = run.catch(() => undefined);
    return run;
  };
}
