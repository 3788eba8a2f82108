import { readdir, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger, ResourceFiles } from '@svc/core';
import { exportToFile } from './storeTransfer.js';
import type { ExportSource } from './storeTransfer.js';
import { fileTime } from './transferCommands.js';
import type { Exclusive } from './storeGate.js';

/** Options of {@link scheduleBackups}. */
export interface ScheduledBackupOptions {
  /** Where the backups go (`<app>/backups`). */
  dir: string;
  source: ExportSource;
  intervalMs: number;
  /** How many scheduled backups are kept: older ones are removed after each new one. */
  keep: number;
  logger: Logger;
  /**
   * app.json backups.bucket: each backup is also stored as `backups/<file>` in this Bucket
   * resource, which keeps the newest `keep` too. `files` finds it when a backup is written (the
   * resources may have been reloaded since); undefined: there is no such Bucket now.
   */
  bucket?: { name: string; files(): ResourceFiles | undefined };
  /** Shared with the dashboard's backups and restores: one at a time. */
  exclusive?: Exclusive;
}

/** Names of scheduled backups: their time sorts them. */
const SCHEDULED = /^scheduled-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.jsonl$/;

/**
 * Takes a backup (svc backup, in this process) every interval, into `<dir>/scheduled-<time>.jsonl`,
 * keeping the newest `keep`. A backup that fails is logged, never thrown, and the next one is tried
 * at the next interval; one still running when the next is due makes that one skip. Backups made
 * by hand (backup-*, before-import-*) are never removed. Answers a function that stops the schedule
 * (waiting for a backup under way).
 */
export function scheduleBackups(options: ScheduledBackupOptions): () => Promise<void> {
  let running: Promise<void> | undefined;
  const run = async (): Promise<void> => {
    const started = performance.now();
    const file = join(options.dir, `scheduled-${fileTime()}.jsonl`);
    try {
      const summary = await exportToFile(options.source, file);
      options.logger.info(`backup: wrote ${file} (${summary.objects} objects) in ${Math.round(performance.now() - started)} ms`);
      const kept = (await readdir(options.dir)).filter((f) => SCHEDULED.test(f)).sort();
      for (const old of kept.slice(0, Math.max(0, kept.length - options.keep))) await unlink(join(options.dir, old));
    } catch (err) {
      options.logger.warn(`backup: the scheduled backup failed (${(err as Error).message}); the next one is due in ${Math.round(options.intervalMs / 60_000)} min`);
      return;
    }
    if (options.bucket) await upload(options.bucket, file);
  };
  /** A failed upload is logged; the local file stays either way. */
  const upload = async (bucket: NonNullable<ScheduledBackupOptions['bucket']>, file: string): Promise<void> => {
    const files = bucket.files();
    if (!files) {
      options.logger.warn(`backup: app.json backups.bucket names ${bucket.name}, which is not a Bucket resource of this app: ${file} stays local only`);
      return;
    }
    const key = `backups/${basename(file)}`;
    try {
      await files.put(key, file);
    } catch (err) {
      options.logger.warn(`backup: storing ${key} in the bucket ${bucket.name} failed (${(err as Error).message}); the local file ${file} is kept`);
      return;
    }
    try {
      const kept = (await files.list('backups/')).filter((k) => SCHEDULED.test(k.slice('backups/'.length))).sort();
      for (const old of kept.slice(0, Math.max(0, kept.length - options.keep))) await files.remove(old);
      options.logger.info(`backup: stored ${key} in the bucket ${bucket.name}`);
    } catch (err) {
      options.logger.warn(`backup: stored ${key} in the bucket ${bucket.name}, but removing its older backups failed (${(err as Error).message})`);
    }
  };
  const timer = setInterval(() => {
    if (running) return;
    running = (options.exclusive ? options.exclusive(run) : run()).finally(() => (running = undefined));
  }, options.intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
