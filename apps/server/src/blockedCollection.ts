import { SvcError } from '@svc/core';
import type { BlockedCollection, StoreCollection } from '@svc/core';

/** How often a blocked collection asks the store again whether its migrations are applied now. */
export const RECHECK_MS = 2000;

/**
 * The store of a collection whose migration failed: every read and write answers 503
 * MIGRATION_FAILED (what failed is in the log and in svc migrate status, not in the answer);
 * making its indexes (and search index) waits. The rest of the app serves.
 *
 * On a store several processes share, another process (a newer version deployed beside this one,
 * or `svc migrate up`) may apply the migration afterwards: `recheck` asks the store (at most once
 * every {@link RECHECK_MS}, one question at a time, whatever the number of requests), and once it
 * answers true the collection is served from `real`, its indexes made then.
 */
export function refusingCollection(name: string, blocked: BlockedCollection, real: StoreCollection, recheck?: (name: string) => Promise<boolean>): StoreCollection {
  const refuse = (): Promise<never> => Promise.reject(new SvcError('MIGRATION_FAILED', `${name} is not served: its migration ${blocked.migration} failed; the server's log and svc migrate status tell why`));
  let served = false;
  let checkedAt = Date.now();
  let checking: Promise<boolean> | undefined;
  /** ensureIndex, ensureSearch: made once the collection is served. */
  const deferred: { method: (...args: unknown[]) => unknown; args: unknown[] }[] = [];
  const open = (): boolean | Promise<boolean> => {
    if (served || recheck === undefined) return served;
    if (checking) return checking;
    if (Date.now() - checkedAt < RECHECK_MS) return false;
    checking = recheck(name)
      .catch(() => false)
      .then(async (applied) => {
        checkedAt = Date.now();
        checking = undefined;
        if (applied && !served) {
          served = true;
          for (const { method, args } of deferred.splice(0)) await Promise.resolve(method.apply(real, args)).catch(() => undefined);
        }
        return applied;
      });
    return checking;
  };
  return new Proxy(real, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (served || typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (typeof prop === 'string' && prop.startsWith('ensure')) {
        return (...args: unknown[]) => {
          deferred.push({ method, args });
          return Promise.resolve();
        };
      }
      // "Now" answers (what the store can tell at once): undefined says it cannot, so the caller
      // takes the path that waits, which refuses.
      if (typeof prop === 'string' && prop.endsWith('Now')) return () => undefined;
      return async (...args: unknown[]) => ((await open()) ? method.apply(target, args) : refuse());
    },
  });
}
