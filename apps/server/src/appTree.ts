import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
import { chmod, lchown, lstat, mkdir, open, readdir, readlink, realpath, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';

/** A folder or file of an app folder, as it will be written. */
export interface TreeEntry {
  /** Where it goes, relative to the app folder, `/`-separated. */
  rel: string;
  kind: 'dir' | 'file';
  /** The real path its content is read from (a link's target for a link to a file). */
  from: string;
  /** Identity of `from` when it was read: a file swapped for another (or for a link) since is refused. */
  dev: number;
  ino: number;
  mode: number;
  uid: number;
  gid: number;
  /** New content of a file the migration changes; the others are copied. */
  content?: string;
}

/** An app folder read without following any link out of it: what to copy, and what was left out. */
export interface AppTree {
  /** Real path of the app folder. */
  root: string;
  /** Parents before their children. */
  entries: TreeEntry[];
  /** Folders not read nor copied (node_modules, .git, at any depth): where they are, where they would go. */
  skipped: { from: string; rel: string }[];
  /** Links to nothing, not copied. */
  dangling: { rel: string; target: string }[];
}

/** Folders a migration never reads: installed modules (often links out of the app) and history. */
const SKIP_DIRS = new Set(['node_modules', '.git']);
/** Open flags for reading an app's file: a link or a FIFO put there since it was listed cannot redirect or block the read. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Lists an app folder for a copy. Refuses (naming the entry, as `label/<path>`) a link that leads
 * out of the folder, a link to a folder, a link loop, a FIFO, socket or device, and a file it cannot
 * read; a link to a file inside the folder is copied as that file. Reads no file but to check it
 * can be opened.
 */
export async function readAppTree(dir: string, label: string, signal?: AbortSignal): Promise<AppTree> {
  const root = await realpath(dir);
  const tree: AppTree = { root, entries: [], skipped: [], dangling: [] };
  const name = (rel: string): string => join(label, rel);
  const walk = async (folder: string): Promise<void> => {
    signal?.throwIfAborted();
    let names: string[];
    try {
      names = (await readdir(join(root, folder))).sort();
    } catch (err) {
      throw new Error(`cannot read ${name(folder)}: ${reason(err)}`, { cause: err });
    }
    for (const entry of names) {
      const rel = folder === '' ? entry : `${folder}/${entry}`;
      if (SKIP_DIRS.has(entry)) {
        tree.skipped.push({ from: join(root, rel), rel });
        continue;
      }
      const path = join(root, rel);
      const st = await lstat(path);
      if (st.isDirectory()) {
        tree.entries.push({ rel, kind: 'dir', from: path, dev: st.dev, ino: st.ino, mode: st.mode, uid: st.uid, gid: st.gid });
        await walk(rel);
      } else if (st.isFile()) {
        await (await openChecked(path, st, name(rel))).close();
        tree.entries.push({ rel, kind: 'file', from: path, dev: st.dev, ino: st.ino, mode: st.mode, uid: st.uid, gid: st.gid });
      } else if (st.isSymbolicLink()) {
        const target = await readlink(path);
        let real: string;
        try {
          real = await realpath(path);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') {
            tree.dangling.push({ rel, target });
            continue;
          }
          if (code === 'ELOOP') throw new Error(`${name(rel)} is a link loop (${name(rel)} -> ${target}); remove it, then run the command again`, { cause: err });
          throw new Error(`cannot follow the link ${name(rel)} -> ${target}: ${reason(err)}`, { cause: err });
        }
        if (real !== root && !real.startsWith(root + sep)) {
          throw new Error(`${name(rel)} is a link to ${real}, outside the app folder; svc migrate-deployd does not follow it (replace the link by a copy of what it points to)`);
        }
        const to = await stat(real);
        if (to.isDirectory()) {
          const loop = path.startsWith(real + sep);
          throw new Error(
            `${name(rel)} is a link to ${loop ? 'a folder that holds it (a link loop)' : 'a folder'} (${name(relative(root, real))}); svc migrate-deployd copies links to files only (replace the link by the folder)`,
          );
        }
        if (!to.isFile()) throw new Error(`${name(rel)} is a link to ${what(to)}; svc migrate-deployd copies only files, folders and links to files (remove it, then run the command again)`);
        await (await openChecked(real, to, name(rel))).close();
        tree.entries.push({ rel, kind: 'file', from: real, dev: to.dev, ino: to.ino, mode: to.mode, uid: to.uid, gid: to.gid });
      } else {
        throw new Error(`${name(rel)} is ${what(st)}; svc migrate-deployd copies only files, folders and links to files (remove it, then run the command again)`);
      }
    }
  };
  await walk('');
  return tree;
}

/** The text of a listed file, read from the very file that was listed. */
export async function readEntry(entry: TreeEntry, label: string): Promise<string> {
  const file = await openChecked(entry.from, entry, join(label, entry.rel));
  try {
    return await file.readFile('utf8');
  } finally {
    await file.close();
  }
}

/** Options of {@link writeTree}. */
export interface WriteTreeOptions {
  /** Names files in errors (as `label/<path>`). */
  label: string;
  /** Give each entry the owner of what it was copied from (in place, run by root: the app stays its user's). */
  keepOwner?: boolean;
  signal?: AbortSignal | undefined;
}

/**
 * Writes the listed folders and files under `dest` (an empty folder this process made): changed
 * files from their new content, the others copied. Files are created exclusively, so nothing
 * already there (a link someone put in) is written through. Stops when `signal` aborts.
 */
export async function writeTree(tree: AppTree, dest: string, options: WriteTreeOptions): Promise<void> {
  const { label, signal } = options;
  const buffer = Buffer.allocUnsafe(1 << 20);
  for (const entry of tree.entries) {
    signal?.throwIfAborted();
    const to = join(dest, entry.rel);
    if (entry.kind === 'dir') {
      // Kept private until every file is in: modes are set at the end, children first.
      await mkdir(to, { mode: 0o700 });
      continue;
    }
    const out = await open(to, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      if (entry.content !== undefined) await out.writeFile(entry.content);
      else {
        const from = await openChecked(entry.from, entry, join(label, entry.rel));
        try {
          // Bounded by the size when opened: a file that keeps growing is copied as it was then.
          let left = (await from.stat()).size;
          while (left > 0) {
            signal?.throwIfAborted();
            const { bytesRead } = await from.read(buffer, 0, Math.min(buffer.length, left), null);
            if (bytesRead === 0) break;
            await writeAll(out, buffer.subarray(0, bytesRead));
            left -= bytesRead;
          }
        } finally {
          await from.close();
        }
      }
      if (options.keepOwner) await out.chown(entry.uid, entry.gid);
      await out.chmod(entry.mode & 0o777);
    } finally {
      await out.close();
    }
  }
  for (const entry of [...tree.entries].reverse()) {
    if (entry.kind !== 'dir') continue;
    if (options.keepOwner) await lchown(join(dest, entry.rel), entry.uid, entry.gid);
    await chmod(join(dest, entry.rel), entry.mode & 0o777);
  }
}

async function writeAll(file: FileHandle, data: Buffer): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await file.write(data, done, data.length - done, null);
    if (bytesWritten === 0) throw new Error('write wrote nothing');
    done += bytesWritten;
  }
}

/** Opens a listed file for reading; refuses anything but that same regular file. */
async function openChecked(path: string, expect: { dev: number; ino: number }, label: string): Promise<FileHandle> {
  let file: FileHandle;
  try {
    file = await open(path, READ_FLAGS);
  } catch (err) {
    throw new Error(`cannot read ${label}: ${reason(err)}`, { cause: err });
  }
  const st = await file.stat();
  if (!st.isFile() || st.dev !== expect.dev || st.ino !== expect.ino) {
    await file.close();
    throw new Error(`${label} changed while it was being migrated`);
  }
  return file;
}

function what(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'neither a file nor a folder';
}

function reason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'ELOOP') return 'a link loop';
  return (err as Error).message;
}
