import type { Doc, RemoveHooks, WriteHooks } from '../store/Store.js';

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

/** A create or an update, as a listener in the write hears of it. */
export type WrittenChange = Extract<ObjectChange, { kind: 'create' | 'update' }>;

/**
 * Told a create, an update or a delete from inside the store's write, in its transaction (a store
 * with `insertAtCommit`), synchronously: what it writes there through `insertAtCommit` is committed
 * with the write or not at all. It answers the promise of that write, which the write waits for
 * after it instead of calling the listener; or undefined, and the listener is called after the
 * write as with any other store. `chars`: the length of the object's stored text (and the one
 * before it, for an update), to bound what it writes. Must not throw.
 */
export type InCommitListener = (change: ObjectChange, chars: number) => Promise<void> | undefined;

/**
 * Whether a listener needs the collection's writes now (live queries: while some process has a
 * subscription that could need them). Asked before a delete, to read the object it removes only
 * then, and again after it: a listener that started needing them meanwhile is told to resync.
 * Relations' onDelete upkeep asks it too: its setNull updates read whole objects, and are told,
 * only then. Creates and updates of the collection's own are told to every listener regardless.
 */
export type ChangesWanted = () => boolean;

/**
 * A Collection's change listeners: told every stored write, objects without their store-only
 * fields (`strip`). A delete reads what it removes only while some listener wants changes.
 */
export class ChangeListeners {
  private readonly listeners = new Map<CollectionChangeListener, { wanted: ChangesWanted; inCommit: InCommitListener | undefined }>();
  /** Listeners told inside the write as well. */
  private inCommit = 0;

  /** `inWrites`: whether the store tells hooks inside its writes (has `insertAtCommit`); else none are made. */
  constructor(
    private readonly strip: (doc: Doc) => Doc,
    private readonly inWrites = false,
  ) {}

  /** Whether any listener is registered (cheap: asked per write before building a change). */
  get any(): boolean {
    return this.listeners.size > 0;
  }

  /**
   * Adds `listener`, and `inCommit` to be told inside a store's writes where it can; answers a
   * function that removes them (Collection.watchChanges).
   */
  watch(listener: CollectionChangeListener, wanted: ChangesWanted, inCommit?: InCommitListener): () => void {
    const entry = { wanted, inCommit };
    this.listeners.set(listener, entry);
    if (inCommit !== undefined) this.inCommit++;
    return () => {
      if (this.listeners.get(listener) !== entry) return;
      this.listeners.delete(listener);
      if (inCommit !== undefined) this.inCommit--;
    };
  }

  /** Whether some listener needs the writes now. */
  wanted(): boolean {
    for (const entry of this.listeners.values()) if (entry.wanted()) return true;
    return false;
  }

  /**
   * The hooks to give one store write of this kind (a new object per write: what its in-commit
   * listeners answer is kept in it, for {@link tell}); undefined while no listener is told inside writes.
   */
  hooksFor(kind: 'create' | 'update'): StagedWrite | undefined {
    return this.inCommit === 0 || !this.inWrites ? undefined : new StagedWrite(this, kind);
  }

  /** The hooks of a remove of `docs` (read before it), as {@link hooksFor}: told which of them went. */
  hooksForDelete(docs: readonly Doc[]): StagedDelete | undefined {
    return this.inCommit === 0 || !this.inWrites ? undefined : new StagedDelete(this, docs);
  }

  /** Inside a write: tells the in-commit listeners; answers what they answered, by listener. */
  stage(change: ObjectChange, chars: number): Map<CollectionChangeListener, Promise<void>> | undefined {
    let answers: Map<CollectionChangeListener, Promise<void>> | undefined;
    for (const [listener, entry] of this.listeners) {
      if (entry.inCommit === undefined) continue;
      let staged: Promise<void> | undefined;
      try {
        staged = entry.inCommit(change, chars);
      } catch {
        // A listener that broke its contract: it is called after the write, as with any store.
        staged = undefined;
      }
      if (staged !== undefined) (answers ??= new Map()).set(listener, staged);
    }
    return answers;
  }

  /** An object as listeners see it (store-only fields left out). */
  shown(doc: Doc): Doc {
    return this.strip(doc);
  }

  /**
   * Tells every listener of one write; objects are stripped here. A listener told inside the
   * write (`staged`, the hooks the write was given) is not called again: what it answered then is
   * waited for.
   */
  async tell(change: CollectionChange, staged?: StagedChange): Promise<void> {
    if (this.listeners.size === 0) return;
    const told: CollectionChange =
      change.kind === 'resync'
        ? change
        : change.kind === 'update'
          ? { kind: 'update', object: this.strip(change.object), previous: this.strip(change.previous) }
          : { kind: change.kind, object: this.strip(change.object) };
    const answers = staged?.answers;
    for (const listener of this.listeners.keys()) await (answers?.get(listener) ?? listener(told));
  }

  /**
   * After a delete: the objects read before it, told deleted; or, when none was read because no
   * listener wanted changes then but one does now (a live query started meanwhile), a resync.
   */
  async deleted(docs: readonly Doc[] | undefined, staged?: StagedDelete): Promise<void> {
    if (this.listeners.size === 0) return;
    if (docs === undefined) {
      if (this.wanted()) await this.tell({ kind: 'resync' });
      return;
    }
    for (const doc of docs) await this.tell({ kind: 'delete', object: doc }, staged?.of(doc));
  }
}

/** What the in-commit listeners answered when told one write (see ChangeListeners.tell). */
export interface StagedChange {
  readonly answers: Map<CollectionChangeListener, Promise<void>> | undefined;
}

/** The hooks of one create or update: told inside the store's write, they keep what the in-commit listeners answered. */
export class StagedWrite implements WriteHooks, StagedChange {
  /** What the in-commit listeners answered, by listener (none told yet: undefined). */
  answers: Map<CollectionChangeListener, Promise<void>> | undefined;

  constructor(
    private readonly listeners: ChangeListeners,
    private readonly kind: 'create' | 'update',
  ) {}

  stored(object: Doc, before: Doc | undefined, chars: number): void {
    const shown = this.listeners.shown(object);
    const change: WrittenChange = this.kind === 'update' ? { kind: 'update', object: shown, previous: this.listeners.shown(before ?? object) } : { kind: 'create', object: shown };
    this.answers = this.listeners.stage(change, chars);
  }
}

/**
 * The hooks of one remove of objects read before it: told inside the store's write which of them
 * went, it tells the in-commit listeners of each of those deleted, and keeps what they answered.
 */
export class StagedDelete implements RemoveHooks {
  private readonly told = new Map<Doc, StagedChange>();

  constructor(
    private readonly listeners: ChangeListeners,
    private readonly docs: readonly Doc[],
  ) {}

  removed(ids: readonly string[]): void {
    if (ids.length === 0) return;
    const gone = ids.length === 1 ? undefined : new Set(ids);
    for (const doc of this.docs) {
      if (gone === undefined ? doc.id !== ids[0] : !gone.has(doc.id)) continue;
      const object = this.listeners.shown(doc);
      // The object as it was stored, about (rows are bounded by it).
      this.told.set(doc, { answers: this.listeners.stage({ kind: 'delete', object }, JSON.stringify(doc).length) });
    }
  }

  /** What the in-commit listeners answered for `doc` (undefined: it was not told in the write). */
  of(doc: Doc): StagedChange | undefined {
    return this.told.get(doc);
  }
}
