import { Collection } from '@svc/core';
import type { Store, StoreCollection } from '@svc/core';

/**
 * Makes the Collections of an `$expand` test app on `store`. Each has an extra property `unused`
 * that no object has: the same request with `$fields: {unused: 0}` takes the object path, the
 * answer the spliced texts must equal byte for byte.
 */
export function expandCollections(store: Store) {
  return (path: string, properties: Record<string, unknown>, extra: Record<string, unknown> = {}): Collection =>
    new Collection({ path, properties: { unused: { type: 'string' }, ...properties } as never, store: store.collection(path.slice(1)), ...extra });
}

/** A real store collection that tells `seen` each of its methods called, with the arguments (the stores are real; this only watches). */
export function watchedCalls(inner: StoreCollection, seen: (method: string | symbol, args: unknown[]) => void): StoreCollection {
  return new Proxy(inner, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        seen(key, args);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
