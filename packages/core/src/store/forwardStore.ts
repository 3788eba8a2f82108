import type { Store, StoreCollection } from './Store.js';

/**
 * Wrappers of a store (a gate closed during a restore, the dashboard's feed of changes, a store
 * kept open by its caller) forward through these two functions, so that none can drop a method:
 * every method the inner store or collection has, and only those, is forwarded. A wrapper that
 * once forgot `aggregate` sent every aggregate down the slow path without a word (20cd219).
 */

/** The methods of a StoreCollection that answer a promise. */
export const PROMISED_METHODS = [
  'find',
  'findOne',
  'findJson',
  'findWithJson',
  'findTexts',
  'keptList',
  'findOneJson',
  'findRevised',
  'count',
  'insert',
  'insertMany',
  'insertAtCommit',
  'update',
  'updateMany',
  'remove',
  'ensureIndex',
  'ensureSearch',
  'dropIndex',
  'aggregate',
] as const satisfies readonly (keyof StoreCollection)[];

/** The synchronous reads (`...Now`): they answer at once, or undefined for the caller to ask the promised way. */
export const NOW_METHODS = ['findTextsOfIdsNow', 'findOneJsonNow', 'findOneWithJsonNow', 'generationNow'] as const satisfies readonly (keyof StoreCollection)[];

/** The optional methods of a Store besides collection() and close(). */
export const STORE_METHODS = ['renameCollection', 'listCollections', 'ping'] as const satisfies readonly (keyof Store)[];

/** A method of StoreCollection that answers a promise. */
export type PromisedMethod = (typeof PROMISED_METHODS)[number];
/** A synchronous read of StoreCollection. */
export type NowMethod = (typeof NOW_METHODS)[number];

// A method added to StoreCollection or Store and not listed above fails to compile here.
type UnlistedCollectionKey = Exclude<keyof StoreCollection, PromisedMethod | NowMethod | 'name'>;
type UnlistedStoreKey = Exclude<keyof Store, (typeof STORE_METHODS)[number] | 'kind' | 'collection' | 'close'>;
const EVERY_METHOD_LISTED: [UnlistedCollectionKey | UnlistedStoreKey] extends [never] ? true : { unlisted: UnlistedCollectionKey | UnlistedStoreKey } = true;
void EVERY_METHOD_LISTED;
// forwardCollection's `nowOpen` passes two arguments on: a synchronous read taking more fails to compile here.
type NowArity = Parameters<NonNullable<StoreCollection[NowMethod]>>['length'];
const NOW_READS_TAKE_TWO_AT_MOST: NowArity extends 0 | 1 | 2 ? true : never = true;
void NOW_READS_TAKE_TWO_AT_MOST;

/** How {@link forwardCollection} forwards; by default every call as it is. */
export interface CollectionForwarding {
  /**
   * Around every promised call: `run` makes the inner call with `args` (the wrapper may refuse,
   * count, or look at what it answers).
   */
  call?(method: PromisedMethod, run: () => Promise<unknown>, args: readonly unknown[]): Promise<unknown>;
  /** Around every synchronous read; undefined sends the caller the promised way (never refuse by throwing). */
  now?(method: NowMethod, run: () => unknown): unknown;
  /**
   * Instead of `now`, when all a wrapper decides is whether the synchronous reads answer at all:
   * false sends the caller the promised way. Asked per read; no closure or argument array per call
   * (a GET by id makes one such read).
   */
  nowOpen?(): boolean;
}

/** A collection forwarding every method `inner` has, and only those, through `forwarding`. */
export function forwardCollection(inner: StoreCollection, forwarding: CollectionForwarding = {}): StoreCollection {
  const out: Record<string, unknown> = { name: inner.name };
  const { call, now, nowOpen } = forwarding;
  for (const method of PROMISED_METHODS) {
    const own = inner[method] as ((...args: unknown[]) => Promise<unknown>) | undefined;
    if (typeof own !== 'function') continue;
    out[method] = call === undefined ? own.bind(inner) : (...args: unknown[]) => call(method, () => own.apply(inner, args), args);
  }
  for (const method of NOW_METHODS) {
    const own = inner[method] as ((...args: unknown[]) => unknown) | undefined;
    if (typeof own !== 'function') continue;
    if (now === undefined && nowOpen !== undefined) {
      // Every synchronous read takes at most two arguments (StoreCollection's ...Now methods).
      out[method] = (a: unknown, b: unknown) => (nowOpen() ? own.call(inner, a, b) : undefined);
      continue;
    }
    out[method] = now === undefined ? own.bind(inner) : (...args: unknown[]) => now(method, () => own.apply(inner, args));
  }
  return out as unknown as StoreCollection;
}

/** How {@link forwardStore} forwards. */
export interface StoreForwarding {
  /** The wrapped collection of `name` (default: the inner one). Called once per name: the result is kept. */
  collection?(inner: StoreCollection, name: string): StoreCollection;
  /** Around renameCollection, listCollections and ping (default: as they are). */
  call?(method: (typeof STORE_METHODS)[number], run: () => Promise<unknown>): Promise<unknown>;
  /** Replaces close() (a store its caller closes: a no-op). */
  close?(): Promise<void>;
}

/** A store forwarding every method `inner` has, and only those, its collections made by `forwarding.collection`. */
export function forwardStore(inner: Store, forwarding: StoreForwarding = {}): Store {
  const collections = new Map<string, StoreCollection>();
  const out: Record<string, unknown> = {
    kind: inner.kind,
    collection(name: string): StoreCollection {
      let collection = collections.get(name);
      if (collection === undefined) {
        const own = inner.collection(name);
        collection = forwarding.collection ? forwarding.collection(own, name) : own;
        collections.set(name, collection);
      }
      return collection;
    },
    close: forwarding.close ?? (() => inner.close()),
  };
  const { call } = forwarding;
  for (const method of STORE_METHODS) {
    const own = inner[method] as ((...args: unknown[]) => Promise<unknown>) | undefined;
    if (typeof own !== 'function') continue;
    out[method] = call === undefined ? own.bind(inner) : (...args: unknown[]) => call(method, () => own.apply(inner, args));
  }
  return out as unknown as Store;
}
