import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isPlainObject } from '@svc/core';
import type { Logger, StoreCollection } from '@svc/core';
import type { ResourceFolder } from './loadApp.js';

/** Objects read and renamed at a time. */
const RENAME_BATCH = 500;

/**
 * Deployd's `$renameFrom` on a property (written by its dashboard when a property is renamed): the
 * field is renamed in every stored object at start, then the key is removed from config.json so
 * it happens once. Renaming is idempotent (objects without the old field are left alone), so a
 * crash before config.json is rewritten only repeats a no-op.
 */
export async function applyPropertyRenames(folder: ResourceFolder, store: StoreCollection, logger: Logger): Promise<void> {
  const properties = folder.config.properties;
  if (!isPlainObject(properties)) return;
  const renames: [from: string, to: string][] = [];
  let found = false;
  for (const [name, def] of Object.entries(properties)) {
    const from = (def as { $renameFrom?: unknown } | null)?.$renameFrom;
    if (from === undefined) continue;
    found = true;
    const label = `resource ${folder.path.slice(1)}: property ${name}: $renameFrom`;
    if (typeof from !== 'string' || from === '' || from === 'id' || from.startsWith('$') || from.includes('.')) throw new Error(`${label} must name another property`);
    if (from !== name) renames.push([from, name]);
  }
  if (!found) return;
  for (const [from, to] of renames) {
    const started = performance.now();
    let renamed = 0;
    // A batch at a time (a collection of the embedded engine may not fit in memory), each object
    // in one update of its own: a process killed midway leaves every object renamed or not, and
    // the next start renames the rest.
    for (;;) {
      const docs = await store.find({ [from]: { $exists: true } }, { limit: RENAME_BATCH });
      if (docs.length === 0) break;
      await Promise.all(docs.map((doc) => store.update({ id: doc.id }, { $set: { [to]: doc[from] }, $unset: { [from]: true } })));
      renamed += docs.length;
    }
    logger.info(`resource ${folder.path.slice(1)}: renamed ${from} to ${to} in ${renamed} objects (${Math.round(performance.now() - started)} ms)`);
  }
  await dropRenameKeys(folder, logger);
}

/** Rewrites config.json without the `$renameFrom` keys (atomically: a temporary file, then rename). */
async function dropRenameKeys(folder: ResourceFolder, logger: Logger): Promise<void> {
  const file = join(folder.dir, 'config.json');
  try {
    const config = JSON.parse(await readFile(file, 'utf8')) as { properties?: Record<string, Record<string, unknown>> };
    for (const def of Object.values(config.properties ?? {})) if (def && typeof def === 'object') delete def.$renameFrom;
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(config, null, 2)}\n`);
    await rename(tmp, file);
  } catch (err) {
    logger.warn(`resource ${folder.path.slice(1)}: the rename is done, but config.json could not be rewritten without $renameFrom (it will be tried again at the next start): ${(err as Error).message}`);
  }
}
