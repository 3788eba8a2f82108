import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SvcError } from '@svc/core';
import type { Context } from '@svc/core';
import { exportToFile } from '../storeTransfer.js';
import type { ExportSource } from '../storeTransfer.js';
import { fileTime } from '../transferCommands.js';

/**
 * The backups svc writes into <app>/backups: svc backup's default name, the scheduled ones, the
 * safety exports of svc import --replace / svc restore, and the dashboard's (a `-<n>` suffix when
 * two fall in the same second). Only these names are listed and downloaded: no path, no dot
 * segment, nothing else of the folder.
 */
export const BACKUP_FILE = /^(?:backup|scheduled|before-import)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ(?:-\d{1,3})?\.jsonl$/;

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
}

/**
 * The dashboard's Backups page: list, take (the online snapshot svc backup takes), download.
 * Restoring stays svc restore with the server stopped (see docs/deploying.md, "Backups and
 * durability"): the page shows the command.
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
    const run = (async () => {
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
    })();
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

  return { list, take, download };
}
