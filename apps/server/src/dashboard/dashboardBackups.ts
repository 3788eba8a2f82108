import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SvcError } from '@svc/core';
import type { Collection, Context, Logger, Resource, Store } from '@svc/core';
import { exportToFile, readExport } from '../storeTransfer.js';
import type { ExportSource, TransferSummary } from '../storeTransfer.js';
import type { Exclusive, StoreGate } from '../storeGate.js';
import { fileTime } from '../transferCommands.js';

/**
 * The backups svc writes into <app>/backups: svc backup's default name, the scheduled ones, the
 * safety exports of svc import --replace / svc restore, and the dashboard's (a `-<n>` suffix when
 * two fall in the same second). Only these names are listed and downloaded: no path, no dot
 * segment, nothing else of the folder.
 */
export const BACKUP_FILE = /^(?:backup|scheduled|before-import|before-restore)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ(?:-\d{1,3})?\.jsonl$/;

/** One backup as the dashboard lists it. */
export interface BackupView {
  name: string;
  size: number;
  /** When it was written (its file's modification time), ISO. */
  time: string;
}

/** Options of {@link createBackupsApi}. */
export interface BackupsApiOptions {
  /** `<app>/backups`. */
  dir: string;
  /** What a backup reads: the embedded store's files, or the MongoDB store. */
  source: ExportSource;
  /** One backup or restore at a time in this process (the scheduled backups go through it too). */
  exclusive: Exclusive;
  /** For a restore while serving (the embedded store only): the store without the gate, and the gate. */
  restore?: {
    raw: Store;
    gate: StoreGate;
    logger: Logger;
    sessionsEnded(ids: string[]): Promise<void>;
    /** The resources served: their live queries resync after a restore. */
    resources?(): readonly Resource[];
  };
}

/** The anonymous-id key's object in `_sessions` (core's sessions.ts): kept by a restore. */
const ANONYMOUS_KEY_ID = 'svc:anonymous-session-key';
/** Requests under way get this long to end before a restore begins. */
const RESTORE_WAIT_MS = 30_000;
const INSERT_CONCURRENCY = 32;

/**
 * Makes the store hold exactly the app objects of an export file: every collection emptied, then
 * the file's objects inserted, then counted. `_sessions` (the sessions and the anonymous-id key)
 * is left alone: what the file holds of it is skipped.
 */
async function replaceContents(raw: Store, file: string, expected: TransferSummary): Promise<void> {
  if (!raw.listCollections) throw new Error(`the ${raw.kind} store cannot list its collections`);
  const names = new Set([...(await raw.listCollections()), ...Object.keys(expected.collections)]);
  names.delete('_sessions');
  for (const name of names) await raw.collection(name).remove({});
  const inFlight = new Set<Promise<unknown>>();
  let failure: unknown;
  await readExport(file, async ({ line, collection, doc }) => {
    if (collection === '_sessions') return;
    if (failure !== undefined) throw failure as Error;
    const p = raw
      .collection(collection)
      .insert(doc)
      .catch((err: unknown) => {
        failure ??= new Error(`line ${line}: ${collection} ${JSON.stringify(doc.id)} was refused: ${(err as Error).message}`, { cause: err });
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
    if (inFlight.size >= INSERT_CONCURRENCY) await Promise.race(inFlight);
  });
  await Promise.all(inFlight);
  if (failure !== undefined) throw failure as Error;
  for (const name of names) {
    const n = await raw.collection(name).count({});
    if (n !== (expected.collections[name] ?? 0)) throw new Error(`${name} holds ${n} objects where the backup has ${expected.collections[name] ?? 0}`);
  }
}

/**
 * The dashboard's Backups page: list, take (the online snapshot svc backup takes), download,
 * and restore while serving (the embedded store; on MongoDB, svc restore with the server stopped).
 */
export function createBackupsApi(options: BackupsApiOptions) {
  let taking: Promise<unknown> | undefined;

  async function list(): Promise<BackupView[]> {
    let entries;
    try {
      entries = await readdir(options.dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: BackupView[] = [];
    // Regular files only: a symbolic link in the folder is neither listed nor served.
    for (const entry of entries) {
      if (!entry.isFile() || !BACKUP_FILE.test(entry.name)) continue;
      const info = await lstat(join(options.dir, entry.name)).catch(() => undefined);
      if (!info?.isFile()) continue;
      out.push({ name: entry.name, size: info.size, time: info.mtime.toISOString() });
    }
    return out.sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : a.name < b.name ? 1 : -1));
  }

  /** One at a time: a second click while one is written is answered 409. */
  async function take(): Promise<BackupView & { objects: number }> {
    if (taking) throw new SvcError('CONFLICT', 'a backup is being taken; try again when it is written');
    const run = options.exclusive(async () => {
      const time = fileTime();
      const names = new Set((await readdir(options.dir).catch(() => [] as string[])));
      let name = `backup-${time}.jsonl`;
      for (let n = 2; names.has(name) || names.has(`${name}.partial`); n++) {
        if (n > 999) throw new SvcError('CONFLICT', 'too many backups this second; try again');
        name = `backup-${time}-${n}.jsonl`;
      }
      const summary = await exportToFile(options.source, join(options.dir, name));
      const info = await lstat(join(options.dir, name));
      return { name, size: info.size, time: info.mtime.toISOString(), objects: summary.objects };
    });
    taking = run;
    try {
      return await run;
    } finally {
      taking = undefined;
    }
  }

  /**
   * Streams one backup as an attachment. The name must be a backup's (BACKUP_FILE); the file is
   * opened without following a symbolic link and must be a regular file.
   */
  async function download(ctx: Context, name: string): Promise<undefined> {
    if (!BACKUP_FILE.test(name)) throw new SvcError('NOT_FOUND', 'no such backup');
    const res = ctx.res;
    if (!res) throw new SvcError('BAD_REQUEST', 'downloads are HTTP only');
    let handle;
    try {
      handle = await open(join(options.dir, name), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') throw new SvcError('NOT_FOUND', 'no such backup');
      throw err;
    }
    try {
      const info = await handle.stat();
      if (!info.isFile()) throw new SvcError('NOT_FOUND', 'no such backup');
      res.writeHead(200, {
        'content-type': 'application/x-ndjson',
        'content-length': String(info.size),
        'content-disposition': `attachment; filename="${name}"`,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      if (ctx.req?.method === 'HEAD') {
        res.end();
        await handle.close();
        return undefined;
      }
    } catch (err) {
      await handle.close();
      throw err;
    }
    const stream = handle.createReadStream();
    stream.pipe(res);
    stream.on('error', () => res.destroy());
    res.on('close', () => stream.destroy());
    return undefined;
  }

  /**
   * Restores a backup while the server runs (the embedded store: this process is its only
   * writer). The file is checked whole first. Then the store is closed to requests (503 with
   * Retry-After) once those under way are done, what it holds is saved as
   * before-restore-<time>.jsonl, and its app objects are replaced by the backup's. A failure puts
   * the saved objects back. Every logged-in session ends (users sign in again); the anonymous-id
   * key stays.
   */
  async function restore(name: string): Promise<{ name: string; objects: number; safetyFile: string; sessionsEnded: number }> {
    if (!BACKUP_FILE.test(name)) throw new SvcError('NOT_FOUND', 'no such backup');
    const live = options.restore;
    if (!live || options.source.kind !== 'embedded') {
      throw new SvcError('CONFLICT', `a restore on ${options.source.kind === 'store' ? 'MongoDB' : 'this server'} is run with svc restore, the server stopped (other processes may write to the database)`);
    }
    const file = join(options.dir, name);
    const info = await lstat(file).catch(() => undefined);
    if (!info?.isFile()) throw new SvcError('NOT_FOUND', 'no such backup');
    let expected: TransferSummary;
    try {
      expected = await readExport(file, () => undefined);
    } catch (err) {
      throw new SvcError('BAD_REQUEST', `${name} cannot be restored: ${(err as Error).message.replace(`${file}: `, '')}`);
    }
    const { raw, gate, logger } = live;
    return options.exclusive(async () => {
      await gate.close('the store is being restored from a backup', RESTORE_WAIT_MS);
      let stuck = false;
      let replaced = false;
      let endedIds: string[] = [];
      try {
        const safetyName = `before-restore-${fileTime()}.jsonl`;
        const safetyFile = join(options.dir, safetyName);
        logger.info(`restore: saving what the store holds to ${safetyFile}`);
        const saved = await exportToFile(options.source, safetyFile);
        try {
          replaced = true;
          await replaceContents(raw, file, expected);
        } catch (err) {
          logger.error(`restore: restoring ${name} failed (${(err as Error).message}); putting back what the store held`);
          try {
            await replaceContents(raw, safetyFile, saved);
          } catch (back) {
            stuck = true;
            logger.error(`restore: putting back ${safetyFile} failed too (${(back as Error).message}); the store stays closed: stop the server and run svc restore --from backups/${safetyName}`);
            throw new SvcError('INTERNAL', `restoring ${name} failed, and so did putting back what the store held; the store stays closed: stop the server and run svc restore --from backups/${safetyName}`, { cause: back });
          }
          throw new SvcError('INTERNAL', `restoring ${name} failed (${(err as Error).message}); the store holds what it held before`, { cause: err });
        }
        const sessions = raw.collection('_sessions');
        endedIds = (await sessions.find({ id: { $ne: ANONYMOUS_KEY_ID } }, { fields: { id: 1 } })).map((d) => d.id);
        await sessions.remove({ id: { $ne: ANONYMOUS_KEY_ID } });
        logger.info(`restore: the store holds the ${expected.objects} objects of ${name}; ${endedIds.length} sessions ended; what it held before is in ${safetyFile}`);
        return { name, objects: expected.objects, safetyFile: safetyName, sessionsEnded: endedIds.length };
      } finally {
        if (!stuck) gate.open();
        // Once open: the listeners (realtime closing the sockets of those sessions) may use the store.
        if (endedIds.length > 0) await live.sessionsEnded(endedIds).catch((err: unknown) => logger.warn(`restore: telling that the sessions ended failed (${(err as Error).message})`));
        // The objects changed wholesale, not one by one: every live query takes a fresh snapshot
        // (those of the ended sessions are gone already; anonymous ones remain).
        if (replaced && !stuck) await resyncLiveQueries(live.resources?.() ?? [], logger);
      }
    });
  }

  return { list, take, download, restore };
}

/** Tells every Collection's live queries that its objects changed without saying which. */
async function resyncLiveQueries(resources: readonly Resource[], logger: Logger): Promise<void> {
  for (const resource of resources) {
    const collection = resource as Partial<Pick<Collection, 'tellResync'>>;
    if (typeof collection.tellResync !== 'function') continue;
    await collection.tellResync().catch((err: unknown) => logger.warn(`restore: telling the live queries of ${resource.path} to resync failed (${(err as Error).message})`));
  }
}
