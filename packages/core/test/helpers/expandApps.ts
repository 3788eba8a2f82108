import { Collection, forwardStore } from '@svc/core';
import type { Resource, Store, StoreCollection } from '@svc/core';
import { startTestServer } from './http.js';
import type { TestClient, TestServer } from './http.js';

/** Makes the Collections of an `$expand` test app on `store`. */
export function expandCollections(store: Store) {
  return (path: string, properties: Record<string, unknown>, extra: Record<string, unknown> = {}): Collection =>
    new Collection({ path, properties: properties as never, store: store.collection(path.slice(1)), ...extra });
}

/**
 * The same app served a second time over the same store with every shortcut off (`fastPaths:
 * false`): the plain path's answers, which the shortcuts' must equal byte for byte. `resources`
 * makes a fresh set (a Collection serves one server). Its close() leaves the store open.
 */
export function startPlainTwin(store: Store, resources: () => Resource[]): Promise<TestServer> {
  const open: Store = forwardStore(store, { close: () => Promise.resolve() });
  return startTestServer(open, resources(), { fastPaths: false });
}

/** `client`'s caller (its session cookie and headers) on another server: the plain twin. */
export function sameCaller(server: TestServer, client: TestClient): TestClient {
  return {
    get sid() {
      return client.sid;
    },
    headers: client.headers ?? {},
    request: (method, path, options = {}) =>
      server.request(method, path, { ...options, session: false, headers: { ...(client.sid !== undefined ? { cookie: `sid=${client.sid}` } : {}), ...client.headers, ...options.headers } }),
  };
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
