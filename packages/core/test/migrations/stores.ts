import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { createEmbeddedStore } from '../../src/store/embeddedStore.js';
import { createEngineStore } from '../../src/store/embedded/index.js';
import { createMongoStore } from '../../src/store/mongoStore.js';
import type { Store } from '../../src/store/Store.js';

/** One store to run migrations on, made fresh; `reopen` closes and opens it again on the same data. */
export interface StoreRig {
  store: Store;
  reopen(): Promise<Store>;
  /** Another store on the same data, as another process has (MongoDB only: the embedded stores admit one process). */
  another?(): Promise<Store>;
  destroy(): Promise<void>;
}

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;

/** The stores migrations run on: the embedded files store, the SQLite engine and MongoDB (when SVC_TEST_MONGODB_URL is set). */
export const STORE_KINDS: readonly string[] = ['files', 'sqlite', ...(mongoUrl ? ['mongodb'] : [])];
if (!mongoUrl) process.stderr.write('migrations on MongoDB SKIPPED: SVC_TEST_MONGODB_URL is not set\n');

/** A MongoDB URL naming a database of its own. */
export function mongoDatabase(base: string, name: string): string {
  return base.replace(/^(mongodb(?:\+srv)?:\/\/[^/?]*)(?:\/[^?]*)?/, `$1/${name}`);
}

export async function openRig(kind: string): Promise<StoreRig> {
  if (kind === 'mongodb') {
    const name = `svc_migr_${randomBytes(5).toString('hex')}`;
    const url = mongoDatabase(mongoUrl as string, name);
    // Migrations run long operations: a shared, busy FerretDB gets more than the default 5 s.
    const open = () => createMongoStore({ url, timeoutMs: 30_000 });
    const rig: StoreRig = {
      store: await open(),
      async reopen() {
        await rig.store.close();
        rig.store = await open();
        return rig.store;
      },
      another: open,
      async destroy() {
        await rig.store.close();
        const client = new MongoClient(mongoUrl as string);
        try {
          await client.db(name).dropDatabase();
        } finally {
          await client.close();
        }
      },
    };
    return rig;
  }
  const dir = await mkdtemp(join(tmpdir(), `svc-migr-${kind}-`));
  const open = () => (kind === 'files' ? createEmbeddedStore({ dir }) : createEngineStore({ dir }));
  const rig: StoreRig = {
    store: await open(),
    async reopen() {
      await rig.store.close();
      rig.store = await open();
      return rig.store;
    },
    async destroy() {
      await rig.store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return rig;
}
