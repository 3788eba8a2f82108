import { open, readFile, readlink, realpath, rename, symlink, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { diskErrorCode } from './diskError.js';

/** What a lock file holds. */
interface LockInfo {
  pid: number;
  host: string;
  startedAt: string;
  /** The folder the lock was taken for: a lock found in another folder came with a copy of it. */
  dir?: string;
}

const LOCK_FILE = '.lock';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readLock(file: string): Promise<LockInfo | undefined> {
  try {
    // A lock taken on a full disk is a symlink whose target holds what the file would (see below).
    const text = await readlink(file).catch(() => readFile(file, 'utf8'));
    const info = JSON.parse(text) as Partial<LockInfo>;
    if (typeof info.pid === 'number' && typeof info.host === 'string') {
      return { pid: info.pid, host: info.host, startedAt: String(info.startedAt ?? '?'), ...(typeof info.dir === 'string' ? { dir: info.dir } : {}) };
    }
  } catch {
    // Missing, or half written by a process that died while writing it.
  }
  return undefined;
}

/**
 * Takes the lock of a data folder: `<dir>/.lock`, created exclusively, holding the pid and host of
 * its holder. Two processes writing one folder lose writes (each rewrites the files the other
 * appends to), so a second one refuses to start, naming the holder. A lock whose holder is gone
 * (same host, no such process) is taken over: renamed away atomically, so that of two processes
 * taking over at once only one wins. Answers the release function.
 */
export async function lockDataFolder(dir: string): Promise<() => Promise<void>> {
  // The real path: the same folder reached through a symbolic link is not a copy.
  dir = await realpath(dir).catch(() => dir);
  const file = join(dir, LOCK_FILE);
  const me: LockInfo = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), dir };
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const handle = await open(file, 'wx');
      const written = await handle.writeFile(JSON.stringify(me)).then(
        () => undefined,
        (err: unknown) => err ?? new Error('write failed'),
      );
      await handle.close();
      if (written !== undefined) {
        if (diskErrorCode(written) === undefined) throw written;
        // No room for its contents (a full disk; the store still starts there and reads): the
        // same text as the target of a symlink, which file systems keep in the inode itself.
        await unlink(file);
        await symlink(JSON.stringify(me), file);
      }
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        const now = await readLock(file);
        if (now?.pid === me.pid && now.host === me.host) await unlink(file).catch(() => undefined);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = await readLock(file);
    if (!holder) {
      // Created an instant ago and not written yet, or left empty by a holder that died: look again.
      await new Promise((resolve) => setTimeout(resolve, 100));
      holder = await readLock(file);
    }
    if (holder && (holder.host !== me.host || alive(holder.pid))) {
      const self = holder.pid === process.pid && holder.host === me.host;
      const who = self ? 'this process (the store is already open)' : `process ${holder.pid} on ${holder.host}, since ${holder.startedAt}`;
      // A folder copied (cp -r, a restored disk image) with its lock: the holder writes the
      // original, not this copy. Said, with the way out, rather than guessed: a folder moved while
      // its server runs looks the same.
      const copied = holder.dir !== undefined && holder.dir !== dir;
      const takeOver = `if no process writes this folder, take it over: rm ${JSON.stringify(file)}`;
      throw new Error(
        copied
          ? `the data folder ${dir} holds a lock taken by ${who} for another folder, ${holder.dir}: this folder looks like a copy of it (a copied data folder keeps the lock). ${takeOver}`
          : `the data folder ${dir} is in use by ${who}; two processes must not write one data folder. Stop it, or use another folder${holder.host !== me.host ? ` (a lock of another host is never taken over: if this folder is a copy, or that host is gone, ${takeOver})` : ''}`,
      );
    }
    // Its holder is gone (or it was never written out): take it over.
    await rename(file, `${file}.stale-${process.pid}`).then(
      () => unlink(`${file}.stale-${process.pid}`).catch(() => undefined),
      () => undefined,
    );
  }
  throw new Error(`could not take the lock of the data folder ${dir}`);
}
