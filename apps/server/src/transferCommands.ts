import { join } from 'node:path';
import { createMongoStore } from '@svc/core';
import type { Store } from '@svc/core';
import { embeddedEngineOf, readAppSettings } from './loadApp.js';
import { exportStore, exportToFile, importFile } from './storeTransfer.js';
import type { ExportSource, ImportTarget, TransferSummary } from './storeTransfer.js';

/** Options shared by the export, import, backup and restore commands. */
export interface TransferCommandOptions {
  appDir: string;
  /** A mongodb:// URL; absent means the embedded store in <app>/data. */
  db?: string;
  /** Where messages go. */
  err: NodeJS.WritableStream;
  /** Where `--out -` writes. */
  out: NodeJS.WritableStream;
}

/** `2026-11-25T15-40-00Z`: a time for file names. */
export function fileTime(date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z').replaceAll(':', '-');
}

async function withStore<T>(options: TransferCommandOptions, run: (source: ExportSource & ImportTarget) => Promise<T>): Promise<T> {
  if (!options.db) return run({ kind: 'embedded', dir: join(options.appDir, 'data'), engine: embeddedEngineOf(await readAppSettings(options.appDir)) });
  const store: Store = await createMongoStore({ url: options.db });
  try {
    return await run({ kind: 'store', store });
  } finally {
    await store.close();
  }
}

function counts(summary: TransferSummary): string {
  const list = Object.entries(summary.collections).map(([name, n]) => `${name} ${n}`);
  return `${summary.objects} objects${list.length > 0 ? ` (${list.join(', ')})` : ''}`;
}

/**
 * `svc export` and `svc backup`: every collection to a file (`-`: standard output). A backup is an
 * export whose file defaults to <app>/backups/backup-<time>.jsonl.
 */
export async function exportCommand(options: TransferCommandOptions & { file: string }): Promise<number> {
  return withStore(options, async (source) => {
    if (options.file === '-') {
      const summary = await exportStore(source, options.out);
      options.err.write(`exported ${counts(summary)}\n`);
      return 0;
    }
    const summary = await exportToFile(source, options.file);
    options.err.write(`wrote ${options.file}: ${counts(summary)}\n`);
    return 0;
  });
}

/** `svc import --from` and `svc restore`: an export file into the app's store. */
export async function importFileCommand(options: TransferCommandOptions & { file: string; replace: boolean }): Promise<number> {
  return withStore(options, async (target) => {
    const summary = await importFile(options.file, target, {
      replace: options.replace,
      safetyFile: join(options.appDir, 'backups', `before-import-${fileTime()}.jsonl`),
      note: (message) => options.err.write(`${message}\n`),
    });
    options.err.write(`imported ${counts(summary)} into the ${options.db ? 'MongoDB' : 'embedded'} store${summary.safetyFile ? `; what it held before is in ${summary.safetyFile}` : ''}\n`);
    return 0;
  });
}
