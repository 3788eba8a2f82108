import { open, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { diskErrorCode } from './diskError.js';
import { escapeLineBreaks } from '../../lineBreaks.js';
import { nedbModel as model } from './nedbModel.js';

/** The part of nedb's Persistence this module replaces (documented in nedb's source, not typed). */
interface Persistence {
  filename: string;
  inMemoryOnly: boolean;
  modes: { fileMode: number };
  persistNewStateAsync(docs: unknown[]): Promise<void>;
  persistCachedDatabaseAsync(): Promise<void>;
  loadDatabaseAsync(): Promise<void>;
}

/** Options of {@link appendThroughOpenHandle}. */
export interface AppendOptions {
  /**
   * The rewrite nedb makes when it loads a datafile failed because the disk is full or failing:
   * the old file is intact and holds everything just loaded, so the load goes on (the rewrite is
   * retried at the next compaction). Told here, to be reported.
   */
  keptOldFile(err: unknown): void;
  /**
   * fsync each append (fdatasync) before it resolves: a write is then acknowledged only once it is
   * on the disk, surviving a power loss, not just a crash of the process. One per append, so one
   * per group commit of inserts. Default false.
   */
  fsync?: boolean;
}

/**
 * Makes a nedb datastore append through one file handle kept open, instead of nedb's
 * `fs.promises.appendFile` per write (open + write + close, three trips through the thread pool).
 * The line format is nedb's own, with NEL, U+2028 and U+2029 escaped (see escapeLineBreaks). An
 * append resolves only once its bytes were written, so a write is still acknowledged only after it
 * reached the file (and, with `fsync`, on the disk).
 *
 * An append that fails (a full disk writes part of it, then ENOSPC) is cut off the file again: the
 * file ends where it ended before, so a later append does not glue its line to a torn one (which
 * would make the file unreadable at the next start). The end is counted, not asked of the file:
 * no extra system call on a write that succeeds.
 *
 * nedb rewrites the datafile on load and compaction (a new file `<name>~` renamed over the old
 * one); the handle is closed around that so the next append opens the new file. A rewrite that
 * fails leaves the old file as it was and removes the partial new one (on a full disk it holds
 * the space the next writes need). nedb runs appends and rewrites in its executor, one at a time.
 *
 * Answers a function that closes the handle.
 */
export function appendThroughOpenHandle(db: object, options: AppendOptions): () => Promise<void> {
  const persistence = Reflect.get(db, 'persistence') as Persistence | undefined;
  if (!persistence || typeof persistence.persistNewStateAsync !== 'function' || typeof persistence.persistCachedDatabaseAsync !== 'function' || typeof persistence.loadDatabaseAsync !== 'function') {
    throw new Error('nedb without the expected persistence layer');
  }
  if (persistence.inMemoryOnly) return () => Promise.resolve();
  let handle: FileHandle | undefined;
  let opening: Promise<FileHandle> | undefined;
  /** Where the file ends, as far as appends that succeeded go. */
  let end = 0;
  /** A failed append could not be cut off: the file must be cut to `end` before the next one. */
  let torn = false;
  /** The inode the handle was opened on: a torn file replaced since (a rewrite) is not cut. */
  let inode = -1;

  const close = async (): Promise<void> => {
    const h = handle ?? (opening ? await opening.catch(() => undefined) : undefined);
    handle = undefined;
    opening = undefined;
    await h?.close();
  };

  const openHandle = async (): Promise<FileHandle> => {
    const fh = await open(persistence.filename, 'a', persistence.modes.fileMode);
    try {
      const stat = await fh.stat();
      if (torn && stat.ino === inode) await fh.truncate(end);
      else end = stat.size;
      torn = false;
      inode = stat.ino;
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
    return (handle = fh);
  };

  const append = async (text: string): Promise<void> => {
    const h = handle ?? (await (opening ??= openHandle().finally(() => (opening = undefined))));
    const bytes = Buffer.from(text, 'utf8');
    let offset = 0;
    try {
      while (offset < bytes.length) {
        const { bytesWritten } = await h.write(bytes, offset, bytes.length - offset);
        offset += bytesWritten;
      }
      // A failed sync is a failed append: cut off like one, refused like one (EIO).
      if (options.fsync === true) await h.datasync();
    } catch (err) {
      // Part of it may be in the file: cut it off (this also frees what it took on a full disk).
      // When even that fails, the handle is dropped and the next append cuts it before writing.
      torn = true;
      await h.truncate(end).then(
        () => (torn = false),
        () => close().catch(() => undefined),
      );
      throw err;
    }
    end += bytes.length;
  };

  persistence.persistNewStateAsync = async (docs: unknown[]): Promise<void> => {
    let text = '';
    for (const doc of docs) text += `${escapeLineBreaks(model.serialize(doc))}\n`;
    if (text.length > 0) await append(text);
  };
  let loading = false;
  const load = persistence.loadDatabaseAsync.bind(persistence);
  persistence.loadDatabaseAsync = async (): Promise<void> => {
    loading = true;
    try {
      await load();
    } finally {
      loading = false;
    }
  };
  const rewrite = persistence.persistCachedDatabaseAsync.bind(persistence);
  persistence.persistCachedDatabaseAsync = async (): Promise<void> => {
    await close();
    try {
      await rewrite();
      // A new file, without the torn tail a failed append may have left in the old one.
      torn = false;
    } catch (err) {
      await unlink(`${persistence.filename}~`).catch(() => undefined);
      if (loading && diskErrorCode(err) !== undefined) {
        options.keptOldFile(err);
        return;
      }
      throw err;
    } finally {
      await close();
    }
  };
  return close;
}
