import { MongoClient } from 'mongodb';
import type { Db } from 'mongodb';
import type { Logger, ObjectChange, StagedChange, Store, WriteHooks } from '@svc/core';
import type { CollectionImportStatus, ImportStatus } from '../importStatus.js';
import { importCollection } from './importCollection.js';
import { checkImportTarget, resourceNameFor } from './writeCollectionConfig.js';

/** Everything one run needs. */
export interface RunImportOptions {
  url: string;
  database: string;
  /** Source collections; all but system ones when absent. */
  collections?: readonly string[];
  /** Source collection -> resource name. */
  rename?: Readonly<Record<string, string>>;
  batchSize: number;
  store: Store;
  appDir: string;
  logger: Logger;
  signal: AbortSignal;
  /** The app's Collection at a resource name, whose live queries hear of what the import writes (none for a new one). */
  changesOf?(resource: string): ChangeTarget | undefined;
}

/**
 * A Collection as the import tells it of its writes (live queries, webhooks), as its own writes
 * are told: the hooks of each write (`writeHooks`, told inside it where the store can, so that a
 * webhook's event is committed with the object), then `tellChanges` with them.
 */
export interface ChangeTarget {
  wantsChanges(): boolean;
  tellChanges(changes: readonly ObjectChange[], staged?: readonly (StagedChange | undefined)[]): Promise<void>;
  writeHooks?(kind: 'create' | 'update'): (WriteHooks & StagedChange) | undefined;
}

const RESOURCE_PATH = /^[A-Za-z0-9][A-Za-z0-9_-]*(?:\/[A-Za-z0-9][A-Za-z0-9_-]*)*$/;

/**
 * Imports the source collections one after the other into the app's store, updating `status`
 * as it goes (the HTTP status endpoint reads the same object).
 */
export async function runImport(options: RunImportOptions, status: ImportStatus): Promise<void> {
  const client = new MongoClient(options.url, { serverSelectionTimeoutMS: 10_000 });
  try {
    await client.connect();
    const db = client.db(options.database);
    const present = await userCollections(db);
    const missing = (options.collections ?? []).filter((c) => !present.includes(c));
    if (missing.length > 0) throw new Error(`database ${options.database} has no collection ${missing.join(', ')}`);
    const sources = options.collections ?? present;
    status.collections = await plan(db, sources, options.rename ?? {}, options.appDir);
    status.total = status.collections.reduce((sum, c) => sum + c.total, 0);
    const started = Date.now();
    for (const entry of status.collections) {
      const before = entry.read;
      await importCollection(db, entry, {
        ...options,
        onBatch: () => {
          status.read = status.collections.reduce((sum, c) => sum + c.read, 0);
          status.docsPerSecond = Math.round(status.read / Math.max((Date.now() - started) / 1000, 0.001));
        },
      });
      if (entry.config === 'created' || entry.config === 'updated') status.restartNeeded = true;
      options.logger.info(`import ${entry.source} -> ${entry.resource}: ${entry.read - before} read, ${entry.inserted} new, ${entry.updated} updated, ${entry.unchanged} unchanged, ${entry.failed} failed`);
      for (const [prop, mixed] of Object.entries(entry.mixed ?? {})) {
        options.logger.warn(`import ${entry.resource}: property ${prop} has mixed types ${JSON.stringify(mixed.counts)}; using ${mixed.chosen}`);
      }
    }
  } finally {
    await client.close();
  }
}

async function userCollections(db: Db): Promise<string[]> {
  const infos = await db.listCollections({}, { nameOnly: true }).toArray();
  return infos
    .filter((info) => info.type !== 'view')
    .map((info) => info.name)
    .filter((name) => !name.startsWith('system.'))
    .sort();
}

async function plan(db: Db, sources: readonly string[], rename: Readonly<Record<string, string>>, appDir: string): Promise<CollectionImportStatus[]> {
  const byResource = new Map<string, string>();
  const out: CollectionImportStatus[] = [];
  for (const source of sources) {
    const resource = rename[source] ?? resourceNameFor(source);
    if (!RESOURCE_PATH.test(resource)) throw new Error(`rename: "${resource}" is not a resource name (letters, digits, - and _)`);
    const clash = byResource.get(resource.toLowerCase());
    if (clash !== undefined) throw new Error(`collections ${clash} and ${source} would both be imported into ${resource}; use "rename"`);
    byResource.set(resource.toLowerCase(), source);
    await checkImportTarget(appDir, resource);
    const total = await db.collection(source).estimatedDocumentCount();
    out.push({ source, resource, state: 'pending', total, read: 0, inserted: 0, updated: 0, unchanged: 0, failed: 0, errors: [] });
  }
  return out;
}
