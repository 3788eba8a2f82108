import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createEngineStore, createMongoStore } from '@svc/core';
import type { Store } from '@svc/core';

/** A store made fresh for one test file, and how to throw it away. */
export interface TestStore {
  store: Store;
  dispose(): Promise<void>;
}

/** A named way to make a store; the suites run once per kind. */
export interface StoreKind {
  name: string;
  /** False on FerretDB v1, whose updates are not atomic (a real MongoDB's are). */
  atomicUpdates: boolean;
  make(): Promise<TestStore>;
}

/** FerretDB answers buildInfo with its own version; concurrent-update tests skip there, saying so. */
async function detectFerretDb(url: string | undefined): Promise<boolean> {
  if (!url) return false;
  const { MongoClient } = await import('mongodb');
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5000 });
  try {
    const info = await client.db('admin').command({ buildInfo: 1 });
    return typeof info.ferretdbVersion === 'string';
  } finally {
    await client.close();
  }
}
const ferret = await detectFerretDb(process.env.SVC_TEST_MONGODB_URL);
if (ferret) process.stderr.write('mongodb HTTP suites run on FerretDB v1: cases needing atomic concurrent updates are SKIPPED there (FerretDB v1 updates are not atomic)\n');

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;

const embedded: StoreKind = {
  name: 'embedded',
  atomicUpdates: true,
  async make() {
    const dir = await mkdtemp(join(tmpdir(), 'svc-test-'));
    // The default embedded store: the engine (SQLite). The old files store has its own tests (store/).
    const store = await createEngineStore({ dir });
    return {
      store,
      async dispose() {
        await store.close().catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
};

const mongodb: StoreKind = {
  name: 'mongodb',
  atomicUpdates: !ferret,
  async make() {
    if (!mongoUrl) throw new Error('SVC_TEST_MONGODB_URL is not set');
    const dbName = `svc_test_${randomBytes(6).toString('hex')}`;
    // The HTTP suites test behaviour, not the database timeout (reliability/database-outage does):
    // a loaded machine's FerretDB may take more than the default 5 s under 1,000 concurrent writes.
    const store = await createMongoStore({ url: mongoUrl, dbName, timeoutMs: 30_000 });
    return {
      store,
      async dispose() {
        await store.close().catch(() => undefined);
        const { MongoClient } = await import('mongodb');
        const client = new MongoClient(mongoUrl);
        await client.db(dbName).dropDatabase().catch(() => undefined);
        await client.close();
      },
    };
  },
};

/**
 * The stores HTTP suites run on: embedded always, mongodb when SVC_TEST_MONGODB_URL is set. In CI
 * a missing URL is an error, not a skip.
 */
export function storeKinds(): StoreKind[] {
  if (mongoUrl) return [embedded, mongodb];
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_MONGODB_URL is not set: the mongodb suites cannot run');
  if (!warned) {
    warned = true;
    process.stderr.write('mongodb HTTP suites SKIPPED: set SVC_TEST_MONGODB_URL to run them\n');
  }
  return [embedded];
}
let warned = false;
