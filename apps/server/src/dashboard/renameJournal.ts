import { existsSync } from 'node:fs';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { crashPoint, forgetRecord, recordApplied } from '@svc/core';
import type { Doc, Logger, Store } from '@svc/core';
import { MIGRATIONS_DIR, writeMigrationFile } from '../migrations.js';

/**
 * A rename of a resource, written to `.svc/rename.json` before its first step and removed after
 * its last one. The steps (the folder's rename, each collection's objects moving) are each
 * idempotent, so a process killed anywhere between is finished by the next start (or by the
 * dashboard's next change), and the folder and the objects agree again.
 */
export interface RenameIntent {
  version: 1;
  /** Resource names (paths without the leading /). */
  from: string;
  to: string;
  /** Store collections whose objects follow: the resource's own and those of resources nested in it. */
  moves: [string, string][];
  started: string;
}

/** What became of an interrupted rename. */
export interface Resumed {
  intent: RenameIntent;
  folder: 'moved' | 'in place' | 'left';
  moved: number;
}

const JOURNAL = ['.svc', 'rename.json'] as const;
/** Objects read, copied and removed at a time. */
const BATCH = 500;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*(?:\/[A-Za-z0-9][A-Za-z0-9_-]*)*$/;

export const journalFile = (appDir: string): string => join(appDir, ...JOURNAL);
const resourceDir = (appDir: string, name: string): string => join(appDir, 'resources', ...name.split('/'));

/** Makes a directory's entries (a rename, a new file) survive a crash of the machine too. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes the intent atomically: a temporary file, fsynced, renamed over the journal. */
export async function writeIntent(appDir: string, intent: RenameIntent): Promise<void> {
  const file = journalFile(appDir);
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(tmp, 'w');
  try {
    await handle.writeFile(`${JSON.stringify(intent, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
  await syncDir(dirname(file));
}

export async function clearIntent(appDir: string): Promise<void> {
  await unlink(journalFile(appDir)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  await syncDir(dirname(journalFile(appDir)));
}

/** The unfinished rename, if any. A journal that is not one refuses the start: it is never torn. */
export async function readIntent(appDir: string): Promise<RenameIntent | undefined> {
  let text: string;
  try {
    text = await readFile(journalFile(appDir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const intent = JSON.parse(text) as Partial<RenameIntent>;
  const names = [intent.from, intent.to, ...(Array.isArray(intent.moves) ? intent.moves.flat() : [undefined])];
  if (intent.version !== 1 || !names.every((n) => typeof n === 'string' && NAME.test(n))) {
    throw new Error(`${JOURNAL.join('/')} is not a rename this version of svc wrote; look at it and remove it`);
  }
  return intent as RenameIntent;
}

/** Step 1, idempotent: resources/<from> becomes resources/<to> unless it already did. */
export async function moveFolder(appDir: string, intent: RenameIntent): Promise<Resumed['folder']> {
  const source = resourceDir(appDir, intent.from);
  const target = resourceDir(appDir, intent.to);
  const there = existsSync(target);
  if (there && !existsSync(source)) return 'in place';
  if (there || !existsSync(source)) return 'left';
  await mkdir(dirname(target), { recursive: true });
  await rename(source, target);
  await syncDir(dirname(target));
  if (dirname(source) !== dirname(target)) await syncDir(dirname(source));
  return 'moved';
}

/**
 * Step 2a, where the store can (MongoDB's renameCollection): each collection is renamed in one
 * step when its new name holds no object; nothing may be serving the new name meanwhile (it is
 * done before the folder's rename, or at start). Answers how many objects were renamed.
 */
export async function renameCollections(store: Store, moves: [string, string][]): Promise<number> {
  let moved = 0;
  if (!store.renameCollection) return moved;
  for (const [from, to] of moves) {
    const count = await store.collection(from).count({});
    if (count > 0 && (await store.renameCollection(from, to))) moved += count;
  }
  return moved;
}

/**
 * Step 2b, idempotent: every object of collection `from` moves to `to`, a batch at a time, each
 * copied (unless a copy is already there) before it is removed: an interruption leaves an object
 * in one of the two or in both, never in neither, and running it again finishes. An object whose
 * unique property (a username) is taken under `to` by an object of a resource deleted before
 * stays under `from`: its id is added to `stuck`. Answers how many objects left `from`.
 */
export async function moveObjects(store: Store, from: string, to: string, stuck: string[] = []): Promise<number> {
  const source = store.collection(from);
  const target = store.collection(to);
  const skipped = new Set(stuck);
  let moved = 0;
  for (;;) {
    const batch = await source.find(skipped.size > 0 ? { id: { $nin: [...skipped] } } : {}, { limit: BATCH });
    if (batch.length === 0) return moved;
    const ids = batch.map((doc) => doc.id);
    const copied = new Set((await target.find({ id: { $in: ids } }, { fields: { id: 1 } })).map((doc) => doc.id));
    const copies = batch.filter((doc) => !copied.has(doc.id));
    // Together: the embedded store writes them in one append, MongoDB over its pool.
    const inserted = await Promise.allSettled(copies.map((doc) => target.insert(doc)));
    const left: string[] = [];
    for (const [i, result] of inserted.entries()) {
      if (result.status === 'fulfilled') continue;
      const err = result.reason as { name?: unknown; field?: unknown };
      if (err.name !== 'DuplicateKeyError') throw result.reason;
      // The same id: a copy is there already. Another property: this object cannot move.
      if (err.field !== 'id') left.push((copies[i] as Doc).id);
    }
    for (const id of left) skipped.add(id);
    stuck.push(...left);
    crashPoint('rename:copied');
    const done = ids.filter((id) => !left.includes(id));
    const removed = done.length > 0 ? await source.remove({ id: { $in: done } }) : 0;
    // Nothing removed and nothing set aside would read the same batch again: stop instead.
    if (removed === 0 && left.length === 0) throw new Error(`moving the objects of ${from} to ${to} made no progress`);
    moved += removed;
    crashPoint('rename:batch');
  }
}

/**
 * Finishes an interrupted rename: the folder (before the app is loaded) then the objects (once
 * the store is open). A rename whose folders were changed by hand since (both or neither exist)
 * is left as it is, its objects too, and said so.
 */
export async function resumeFolder(appDir: string): Promise<{ intent: RenameIntent; folder: Resumed['folder'] } | undefined> {
  const intent = await readIntent(appDir);
  if (!intent) return undefined;
  return { intent, folder: await moveFolder(appDir, intent) };
}

export async function resumeObjects(appDir: string, store: Store, pending: { intent: RenameIntent; folder: Resumed['folder'] }, logger: Logger, env: 'development' | 'production' = 'production'): Promise<void> {
  const { intent, folder } = pending;
  if (env === 'development' && folder !== 'left') await ensureRenameMigrations(appDir, store, intent);
  const what = `the rename of resource ${intent.from} to ${intent.to} (started ${intent.started}) was interrupted`;
  if (folder === 'left') {
    const counts = await Promise.all(intent.moves.flat().map(async (name) => `${await store.collection(name).count({})} under ${name}`));
    logger.warn(`${what}; resources/${intent.from} and resources/${intent.to} both exist or neither does (changed by hand?): left as they are, objects too (${counts.join(', ') || 'no collection'})`);
    await clearIntent(appDir);
    return;
  }
  logger.info(`${what}: finishing it before serving`);
  let moved = 0;
  const stuck: string[] = [];
  try {
    moved += await renameCollections(store, intent.moves);
    moved += await finishObjects(appDir, store, intent, stuck);
  } catch (err) {
    logger.error(`${what}; finishing it failed, it is tried again at the next dashboard change or start: ${(err as Error).message}`);
    return;
  }
  logger.warn(`${what}; finished it: folder ${folder === 'moved' ? 'renamed now' : 'was renamed already'}, ${moved} objects moved now to ${intent.to}`);
  if (stuck.length > 0) logger.warn(notMoved(intent, stuck));
}

/** Moves the objects of every collection of the intent, then removes the journal: answers how many moved. */
export async function finishObjects(appDir: string, store: Store, intent: RenameIntent, stuck: string[] = []): Promise<number> {
  let moved = 0;
  for (const [from, to] of intent.moves) moved += await moveObjects(store, from, to, stuck);
  await clearIntent(appDir);
  return moved;
}

/** What to tell about objects that stayed behind (see moveObjects). */
export function notMoved(intent: Pick<RenameIntent, 'from' | 'to'>, stuck: string[]): string {
  return `${stuck.length} objects stayed in the store under ${intent.from}: a unique property's value of theirs is taken under ${intent.to} by objects kept from a resource deleted before (ids ${stuck.slice(0, 5).join(', ')}${stuck.length > 5 ? ', ...' : ''})`;
}

/**
 * Development: the migration files of a rename, one per collection whose objects move
 * (`renameCollection`), named from the time the rename started (the same intent makes the same
 * files, so a resumed rename writes none twice), and recorded as applied in this store, whose
 * objects the journal moves; the other stores (production) apply them at start. Written right
 * after the intent, so that a rename the journal finishes always has its files.
 */
export async function ensureRenameMigrations(appDir: string, store: Store, intent: RenameIntent): Promise<string[]> {
  const ids: string[] = [];
  for (const [from, to] of intent.moves) {
    const migration = await writeMigrationFile(appDir, to, [{ op: 'renameCollection', from }], new Date(intent.started), { once: true });
    await recordApplied(store, migration);
    ids.push(migration.id);
  }
  return ids;
}

/** A rename undone: its migration files and records go. */
export async function dropRenameMigrations(appDir: string, store: Store, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    await unlink(join(appDir, MIGRATIONS_DIR, `${id}.json`)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    await forgetRecord(store, id);
  }
}
