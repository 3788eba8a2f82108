/**
 * Where a replica is kept between runs: one value per key (a JSON-compatible object), written
 * whole. A save that the platform refuses (quota exceeded) rejects; the replica then goes on in
 * memory and says so (its `storage` event).
 */
export interface ReplicaStorage {
  load(key: string): Promise<unknown>;
  save(key: string, value: unknown): Promise<void>;
  remove(key: string): Promise<void>;
}

/** Kept in this process only (tests, Node scripts): lost when it ends. */
export function memoryStorage(): ReplicaStorage {
  const values = new Map<string, string>();
  return {
    load: (key) => Promise.resolve(values.has(key) ? (JSON.parse(values.get(key) as string) as unknown) : undefined),
    save: (key, value) => {
      values.set(key, JSON.stringify(value));
      return Promise.resolve();
    },
    remove: (key) => {
      values.delete(key);
      return Promise.resolve();
    },
  };
}

/** What this file uses of IndexedDB (typed here: the package is also compiled without the DOM types). */
interface IdbRequest<T> {
  readonly result: T;
  readonly error: Error | null;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}
interface IdbStore {
  get(key: string): IdbRequest<unknown>;
  put(value: unknown, key: string): IdbRequest<unknown>;
  delete(key: string): IdbRequest<unknown>;
}
interface IdbTransaction {
  readonly error: Error | null;
  objectStore(name: string): IdbStore;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
}
interface IdbDatabase {
  transaction(name: string, mode: 'readonly' | 'readwrite'): IdbTransaction;
  createObjectStore(name: string): unknown;
}
interface IdbOpenRequest extends IdbRequest<IdbDatabase> {
  onupgradeneeded: (() => void) | null;
}
interface IdbFactory {
  open(name: string, version: number): IdbOpenRequest;
}
const idb = (): IdbFactory | undefined => (globalThis as { indexedDB?: IdbFactory }).indexedDB;

/** The browser's IndexedDB (database `name`, one object store): what survives a reload. */
export function indexedDbStorage(name = 'svc-replica'): ReplicaStorage {
  let opened: Promise<IdbDatabase> | undefined;
  const db = (): Promise<IdbDatabase> =>
    (opened ??= new Promise<IdbDatabase>((resolve, reject) => {
      const factory = idb();
      if (factory === undefined) return reject(new Error('IndexedDB is not available here'));
      const request = factory.open(name, 1);
      request.onupgradeneeded = () => request.result.createObjectStore('replicas');
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error ?? new Error('IndexedDB cannot be opened'));
    }));
  const run = async <T>(mode: 'readonly' | 'readwrite', act: (store: IdbStore) => IdbRequest<T>): Promise<T> => {
    const tx = (await db()).transaction('replicas', mode);
    const request = act(tx.objectStore('replicas'));
    return new Promise<T>((resolve, reject) => {
      // Resolved when the transaction committed (a quota error can come at commit).
      tx.oncomplete = () => resolve(request.result);
      tx.onerror = () => reject(tx.error ?? request.error ?? new Error('IndexedDB refused the write'));
      tx.onabort = () => reject(tx.error ?? new Error('IndexedDB aborted the write'));
    });
  };
  return {
    load: (key) => run('readonly', (s) => s.get(key)),
    save: async (key, value) => {
      await run('readwrite', (s) => s.put(value, key));
    },
    remove: async (key) => {
      await run('readwrite', (s) => s.delete(key));
    },
  };
}

/**
 * A folder of JSON files (Node): one file per key, written to a temporary file and renamed, so a
 * crash leaves the old replica or the new one, never half of one.
 */
export function fileStorage(dir: string): ReplicaStorage {
  const fileOf = (key: string): string => `${dir}/${encodeURIComponent(key)}.json`;
  const fs = () => import('node:fs/promises');
  return {
    async load(key) {
      try {
        return JSON.parse(await (await fs()).readFile(fileOf(key), 'utf8')) as unknown;
      } catch (err) {
        if ((err as { code?: string }).code === 'ENOENT') return undefined;
        throw err;
      }
    },
    async save(key, value) {
      const { mkdir, rename, writeFile } = await fs();
      await mkdir(dir, { recursive: true });
      const temp = `${fileOf(key)}.${Date.now()}.tmp`;
      await writeFile(temp, JSON.stringify(value));
      await rename(temp, fileOf(key));
    },
    async remove(key) {
      await (await fs()).rm(fileOf(key), { force: true });
    },
  };
}

/** IndexedDB where the platform has it, else memory. */
export function defaultStorage(): ReplicaStorage {
  return idb() === undefined ? memoryStorage() : indexedDbStorage();
}
