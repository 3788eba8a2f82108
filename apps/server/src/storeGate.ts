import { forwardCollection, forwardStore, SvcError } from '@svc/core';
import type { Store } from '@svc/core';

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
  // Every method forwarded (forwardStore): promised calls through the gate; a synchronous read
  // answers undefined while closed, which sends the request the usual way (a 503).
  const store: Store = forwardStore(inner, {
    collection: (c) => forwardCollection(c, { call: (_method, run) => through(run), nowOpen: () => reason === undefined }),
    call: (_method, run) => through(run),
  });
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
