import { close, constants, createReadStream, fstat, open, read } from 'node:fs';
import { mkdir, readdir, rename, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import type { FileStorage, OpenedFile, StoredEntry, WholeFile } from './FileStorage.js';
import { checkedKey } from './fileKeys.js';

/**
 * File properties' files on the local disk, under `root` (the app's `data/files`). Files are
 * received into `root/.tmp` and renamed into place: a file is never seen half-written, even
 * after a kill -9 (what is left in .tmp is removed by the orphan sweep).
 */
export function createDiskFileStorage(root: string): FileStorage {
  const tempDir = join(root, '.tmp');
  const pathOf = (key: string): string => join(root, ...checkedKey(key).split('/'));
  return {
    description: `disk ${root}`,
    tempDir,
    async put(key, file) {
      const target = pathOf(key);
      await mkdir(dirname(target), { recursive: true });
      await rename(file, target);
    },
    async open(key, range): Promise<OpenedFile | undefined> {
      const path = pathOf(key);
      try {
        const info = await stat(path);
        if (!info.isFile()) return undefined;
        const body = createReadStream(path, range ? { start: range.start, end: range.end } : {});
        // Opened before answering: a file removed meanwhile answers 404, not a broken body.
        await new Promise<void>((resolve, reject) => {
          body.once('open', () => resolve());
          body.once('error', reject);
        });
        return { size: info.size, body };
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
    },
    openWhole(key, maxBytes) {
      return openWhole(pathOf(key), maxBytes);
    },
    async size(key) {
      try {
        const info = await stat(pathOf(key));
        return info.isFile() ? info.size : undefined;
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
    },
    async remove(keys) {
      const folders = new Set<string>();
      for (const key of keys) {
        const path = pathOf(key);
        try {
          await unlink(path);
        } catch (err) {
          if (!isMissing(err)) throw err;
        }
        folders.add(dirname(path));
      }
      // Empty folders go too (an object's, a property's), up to the collection's.
      for (const folder of folders) await removeEmpty(folder, root);
    },
    async folders(prefix, after, limit) {
      let names: string[];
      try {
        names = (await readdir(join(root, ...prefix.split('/').filter(Boolean)), { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
      } catch (err) {
        if (isMissing(err)) return [];
        throw err;
      }
      return names.sort().filter((name) => after === undefined || name > after).slice(0, limit);
    },
    async files(prefix) {
      const base = join(root, ...prefix.split('/').filter(Boolean));
      const out: StoredEntry[] = [];
      await walk(base, '', out);
      return out;
    },
  };
}

/**
 * A file read whole through one descriptor: open, fstat, read, close (a stream adds a stat
 * before, a second read for the end and its own teardown). Larger than `maxBytes`: a stream of
 * the same descriptor. A stored file never changes at its key (published by a rename, its id
 * never reused), so the size fstat gives is the size read. Opened without blocking: what is not a
 * regular file (a FIFO put there by hand would hold a thread of the pool until a writer came) is
 * answered as missing after fstat, as the stat before an open answered it.
 */
function openWhole(path: string, maxBytes: number): Promise<WholeFile | OpenedFile | undefined> {
  return new Promise((resolve, reject) => {
    open(path, constants.O_RDONLY | constants.O_NONBLOCK, (err, fd) => {
      if (err) return isMissing(err) ? resolve(undefined) : reject(err);
      const closed = (outcome: () => void) => (closeErr: NodeJS.ErrnoException | null): void => (closeErr ? reject(closeErr) : outcome());
      fstat(fd, (statErr, info) => {
        if (statErr) return close(fd, () => reject(statErr));
        if (!info.isFile()) return close(fd, closed(() => resolve(undefined)));
        if (info.size > maxBytes) return resolve({ size: info.size, body: createReadStream('', { fd, start: 0 }) });
        const bytes = Buffer.allocUnsafe(info.size);
        const next = (offset: number): void => {
          if (offset === bytes.length) return close(fd, closed(() => resolve({ size: offset, bytes })));
          read(fd, bytes, offset, bytes.length - offset, offset, (readErr, n) => {
            if (readErr) return close(fd, () => reject(readErr));
            // Shorter than fstat said (not a stored file's case): what was read.
            if (n === 0) return close(fd, closed(() => resolve({ size: offset, bytes: bytes.subarray(0, offset) })));
            next(offset + n);
          });
        };
        next(0);
      });
    });
  });
}

async function walk(dir: string, relative: string, out: StoredEntry[]): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isMissing(err)) return;
    throw err;
  }
  for (const entry of entries) {
    const name = relative === '' ? entry.name : `${relative}/${entry.name}`;
    if (entry.isDirectory()) await walk(join(dir, entry.name), name, out);
    else if (entry.isFile()) {
      try {
        const info = await stat(join(dir, entry.name));
        out.push({ name, size: info.size, modified: info.mtimeMs });
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
    }
  }
}

async function removeEmpty(folder: string, root: string): Promise<void> {
  let current = folder;
  // Up to two levels: the property's folder, then the object's (the collection's stays).
  for (let i = 0; i < 2 && current.startsWith(root + sep) && current !== root; i++) {
    try {
      await rmdir(current);
    } catch {
      // Not empty (another file, or one arriving): it stays.
      return;
    }
    current = dirname(current);
  }
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
