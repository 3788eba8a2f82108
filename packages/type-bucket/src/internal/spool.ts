import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** A temporary folder for uploads whose size is unknown until they have arrived. */
export interface SpoolDir {
  readonly path: string;
  /** Writes `stream` to a new file in the folder; answers its path and size. */
  write(stream: Readable): Promise<{ path: string; size: number }>;
  remove(): Promise<void>;
}

/**
 * Creates a spool folder. Uploads go to disk, not memory, when their size must be known before
 * the On Upload script runs (chunked bodies, multipart forms): memory stays flat for any size.
 */
export async function createSpoolDir(): Promise<SpoolDir> {
  const path = await mkdtemp(join(tmpdir(), 'svc-bucket-'));
  let count = 0;
  return {
    path,
    async write(stream) {
      const file = join(path, String(count++));
      await pipeline(stream, createWriteStream(file));
      return { path: file, size: (await stat(file)).size };
    },
    remove: () => rm(path, { recursive: true, force: true }),
  };
}
