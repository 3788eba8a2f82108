import { Collection } from '@svc/core';
import type { Store } from '@svc/core';

/**
 * Makes the Collections of an `$expand` test app on `store`. Each has an extra property `unused`
 * that no object has: the same request with `$fields: {unused: 0}` takes the object path, the
 * answer the spliced texts must equal byte for byte.
 */
export function expandCollections(store: Store) {
  return (path: string, properties: Record<string, unknown>, extra: Record<string, unknown> = {}): Collection =>
    new Collection({ path, properties: { unused: { type: 'string' }, ...properties } as never, store: store.collection(path.slice(1)), ...extra });
}
