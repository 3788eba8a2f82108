import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createEngineStore, ENGINE_FILE, replaceEngineDatabase, snapshotEngineStore } from '@svc/core';
import { guardReplace, holding, lockForImport, writeAll } from './storeTransfer.js';
import type { ImportOptions, ImportSummary, TransferSummary } from './storeTransfer.js';

/**
 * An import into the embedded engine (the data folder locked throughout: a running server
 * refuses it, and no server can start meanwhile): the file is written into a new database beside
 * the data folder, which is read back and counted, and only then put in place of the old one in
 * one rename (see replaceEngineDatabase). A failure anywhere before leaves the old database as it
 * was.
 */
export async function importEngine(file: string, dir: string, expected: TransferSummary, options: ImportOptions): Promise<ImportSummary> {
  const unlock = await lockForImport(dir);
  const target = { kind: 'embedded', dir, engine: 'sqlite' } as const;
  const staging = `${dir}.import-${process.pid}`;
  try {
    const safetyFile = await guardReplace(await holding(target), target, options);
    await rm(staging, { recursive: true, force: true });
    const store = await createEngineStore({ dir: staging });
    try {
      await writeAll(file, store);
    } finally {
      await store.close();
    }
    // Read again from the closed database, as the server will: what it counts is what was written.
    const check = await snapshotEngineStore(staging);
    try {
      const names = new Set([...check.collections.map((c) => c.name), ...Object.keys(expected.collections)]);
      for (const name of names) {
        const n = (await check.collections.find((c) => c.name === name)?.count()) ?? 0;
        if (n !== (expected.collections[name] ?? 0)) throw new Error(`the new ${name} holds ${n} objects where the file has ${expected.collections[name] ?? 0}`);
      }
    } finally {
      await check.close();
    }
    options.note?.(`moving the imported database into ${dir}`);
    await replaceEngineDatabase(dir, join(staging, ENGINE_FILE));
    return { ...expected, ...(safetyFile ? { safetyFile } : {}) };
  } finally {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    await unlock();
  }
}
