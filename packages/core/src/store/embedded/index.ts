import { existsSync } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { assertCollectionName } from '../Store.js';
import type { Store, StoreCollection } from '../Store.js';
import { lockDataFolder } from '../internal/dataLock.js';
import { DiskState } from '../internal/diskError.js';
import { EngineCollection } from './collection.js';
import { convertOldFiles } from './convert.js';
import { ENGINE_FILE, Engine, sqlite } from './engine.js';
import type { Durability } from './engine.js';
import { ident } from './sqlText.js';

export { ENGINE_FILE };
/** The ranges app.json's `embeddedStore.cacheMb` / `mmapMb` accept (the engine refuses others). */
export { MAX_CACHE_MB, MAX_MMAP_MB } from './engine.js';

/** Which embedded store keeps a data folder: "files" (the old one, kept in memory) or "sqlite" (the engine). */
export type EmbeddedEngine = 'files' | 'sqlite';

/** Whether this Node has what the engine needs: node:sqlite with setReturnArrays (Node 24, 22.16+). */
export function engineSupported(): boolean {
  try {
    sqlite();
    return true;
  } catch {
    return false;
  }
}

/**
 * The embedded store an app runs on when app.json does not choose (`embeddedStore.engine`): the
 * engine, or on Node 22.12-22.15 (which svc still supports) the files store. A data folder that
 * holds the engine's database is refused by the files store, never read as empty.
 */
export const DEFAULT_EMBEDDED_ENGINE: EmbeddedEngine = engineSupported() ? 'sqlite' : 'files';

/** Options of {@link createEngineStore}. */
export interface EngineStoreOptions {
  /** The data folder (`<app>/data`), created when missing; the database is `store.sqlite` in it. */
  dir: string;
  /** Where the store reports what it repaired or refused; default console.warn. */
  warn?: (message: string) => void;
  /**
   * `normal` (default): an acknowledged write survives a crash of the process; a power cut or a
   * crash of the operating system can lose the writes acknowledged since the last checkpoint of
   * the WAL. `full`: every group commit waits for fsync, and survives those too. See Engine.
   */
  durability?: Durability;
  /** SQLite's page cache in MiB (default 32; app.json `embeddedStore.cacheMb`). See EngineMemory. */
  cacheMb?: number;
  /** How much of the database file is read through a memory map, in MiB (default 0: off; app.json `embeddedStore.mmapMb`). See EngineMemory. */
  mmapMb?: number;
}

/**
 * Opens the on-disk embedded engine (SQLite through node:sqlite): every collection of the data
 * folder in one database, objects as JSON text, declared indexes as expression indexes, writes
 * in group commits. One process per data folder (the folder's lock). A folder holding the old
 * embedded store's data files is converted first (convertOldFiles: resumable, verified, the old
 * files moved aside, not deleted).
 */
export async function createEngineStore(options: EngineStoreOptions): Promise<Store> {
  const dir = resolve(options.dir);
  await mkdir(dir, { recursive: true });
  const unlock = await lockDataFolder(dir);
  const warn = options.warn ?? ((message: string) => console.warn(message));
  let engine: Engine;
  try {
    // The old store's files, when the folder holds them: converted first (see convert.ts).
    await convertOldFiles(dir, warn);
    engine = new Engine(join(dir, ENGINE_FILE), options.durability ?? 'normal', { cacheMb: options.cacheMb, mmapMb: options.mmapMb });
  } catch (err) {
    await unlock();
    throw err;
  }
  const disk = new DiskState(dir, warn);
  const collections = new Map<string, EngineCollection>();
  let closed = false;
  return {
    kind: 'embedded',
    collection(name: string): StoreCollection {
      if (closed) throw new Error('the store is closed');
      let collection = collections.get(name);
      if (collection === undefined) {
        assertCollectionName(name);
        collection = new EngineCollection(name, engine, disk);
        collections.set(name, collection);
      }
      return collection;
    },
    async renameCollection(from: string, to: string): Promise<boolean> {
      assertCollectionName(from);
      assertCollectionName(to);
      return engine.write(() => {
        collections.get(from)?.forgetTexts();
        collections.get(to)?.forgetTexts();
        const target = engine.schema.table(to);
        if (target !== undefined && engine.prepare(`SELECT 1 FROM ${ident(target.tbl)} LIMIT 1`).get() !== undefined) return false;
        if (engine.schema.table(from) === undefined) {
          if (target !== undefined) engine.schema.drop(to);
          return true;
        }
        engine.schema.rename(from, to);
        return true;
      });
    },
    async listCollections(): Promise<string[]> {
      if (engine.busy) await engine.whenIdle();
      return engine.schema.names().sort();
    },
    async ping(): Promise<void> {
      if (closed) throw new Error('the store is closed');
      engine.prepare('SELECT 1').get();
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      try {
        await engine.close();
      } finally {
        await unlock();
      }
    },
  };
}

/**
 * Puts the database file `fresh` (a closed engine database, e.g. an import written beside the data
 * folder) in place of the data folder's, whose lock the caller holds. The old database is first
 * checkpointed (its WAL written into it and emptied), so that no WAL of the old database is ever
 * read with the new one; then `fresh` is renamed over it in one step: a crash leaves one or the
 * other, whole.
 */
export async function replaceEngineDatabase(dir: string, fresh: string): Promise<void> {
  const file = join(resolve(dir), ENGINE_FILE);
  if (existsSync(file)) {
    const old = new Engine(file, 'full');
    await old.close();
  }
  for (const leftover of [`${file}-wal`, `${file}-shm`]) await unlink(leftover).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  await syncFile(fresh);
  await rename(fresh, file);
  await syncFile(dirname(file));
}

async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
