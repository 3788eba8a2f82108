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

/**
 * A Collection's change listeners: told every stored write, objects without their store-only
 * fields (`strip`). A delete reads what it removes only while some listener wants changes.
 */
export class ChangeListeners {
  private readonly listeners = new Map<CollectionChangeListener, ChangesWanted>();

  constructor(private readonly strip: (doc: Doc) => Doc) {}

  /** Whether any listener is registered (cheap: asked per write before building a change). */
  get any(): boolean {
    return this.listeners.size > 0;
  }

  /** Adds `listener`; answers a function that removes it (Collection.watchChanges). */
  watch(listener: CollectionChangeListener, wanted: ChangesWanted): () => void {
    this.listeners.set(listener, wanted);
    return () => this.listeners.delete(listener);
  }

  /** Whether some listener needs the writes now. */
  wanted(): boolean {
    for (const wanted of this.listeners.values()) if (wanted()) return true;
    return false;
  }

  /** Tells every listener of one write; objects are stripped here. */
  async tell(change: CollectionChange): Promise<void> {
    if (this.listeners.size === 0) return;
    const told: CollectionChange =
      change.kind === 'resync'
        ? change
        : change.kind === 'update'
          ? { kind: 'update', object: this.strip(change.object), previous: this.strip(change.previous) }
          : { kind: change.kind, object: this.strip(change.object) };
    for (const listener of this.listeners.keys()) await listener(told);
  }

  /**
   * After a delete: the objects read before it, told deleted; or, when none was read because no
   * listener wanted changes then but one does now (a live query started meanwhile), a resync.
   */
  async deleted(docs: readonly Doc[] | undefined): Promise<void> {
    if (this.listeners.size === 0) return;
    if (docs === undefined) {
      if (this.wanted()) await this.tell({ kind: 'resync' });
      return;
    }
    for (const doc of docs) await this.tell({ kind: 'delete', object: doc });
  }
}
