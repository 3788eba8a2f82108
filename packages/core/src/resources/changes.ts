import type { Doc } from '../store/Store.js';

/**
 * One stored write of a Collection, as its listeners (live queries) hear of it: the object as
 * stored after the write (before it for a delete), without store-only fields such as a password
 * hash. Nothing here is filtered for any caller: listeners show it through `Collection.showTo`.
 */
export type CollectionChange =
  | { kind: 'create'; object: Doc }
  | { kind: 'update'; object: Doc; previous: Doc }
  | { kind: 'delete'; object: Doc };

/**
 * Told each stored write, in the order the store answered them; must not throw. A promise it
 * answers is waited for before the write answers (a change published to other processes is
 * numbered before the writer's next write can be), so it must settle soon, whatever happens.
 */
export type CollectionChangeListener = (change: CollectionChange) => void | Promise<void>;
