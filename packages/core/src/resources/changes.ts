import type { Doc } from '../store/Store.js';

/**
 * One stored write of a Collection, as its listeners (live queries) hear of it: the object as
 * stored after the write (before it for a delete), without store-only fields such as a password
 * hash. Nothing here is filtered for any caller: listeners show it through `Collection.showTo`.
 */
export type CollectionChange =
  | { kind: 'create'; object: Doc }
  | { kind: 'update'; object: Doc; previous: Doc }
  | { kind: 'delete'; object: Doc }
  /**
   * Objects changed in a way not told object by object (a backup restored, or a delete whose
   * object was not read because nobody listened when it started): listeners start afresh.
   */
  | { kind: 'resync' };

/** A stored write told object by object. */
export type ObjectChange = Exclude<CollectionChange, { kind: 'resync' }>;

/**
 * Told each stored write, in the order the store answered them; must not throw. A promise it
 * answers is waited for before the write answers (a change published to other processes is
 * numbered before the writer's next write can be), so it must settle soon, whatever happens.
 */
export type CollectionChangeListener = (change: CollectionChange) => void | Promise<void>;

/**
 * Whether a listener needs the collection's writes now (live queries: while some process has a
 * subscription that could need them). Asked before a delete, to read the object it removes only
 * then, and again after it: a listener that started needing them meanwhile is told to resync.
 */
export type ChangesWanted = () => boolean;
