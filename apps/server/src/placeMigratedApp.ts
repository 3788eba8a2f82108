import { chmod, lchown, lstat, mkdir, mkdtemp, readdir, realpath, rename, rm, rmdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { writeTree } from './appTree.js';
import type { AppTree } from './appTree.js';

/** Bound of the search for a free backup name (`<app>.deployd-backup`, `-2`, ...). */
const BACKUP_NAMES = 100;
/** Options of {@link placeMigratedApp}. */
export interface PlaceOptions {
  /** The app folder as the user named it, for messages. */
  label: string;
  /** Real path of the (checked) folder to write the copy to; none: in place. */
  out?: string;
  print(line: string): void;
  signal?: AbortSignal;
}

/**
 * Writes a migrated app where it belongs: into `out`, or in place of the app. Either way it is
 * written into a fresh folder beside its destination (same file system) and renamed into place
 * at the end, so that a failure or an abort leaves either the finished app or nothing at all.
 */
export async function placeMigratedApp(tree: AppTree, options: PlaceOptions): Promise<void> {
  if (options.out !== undefined) return writeCopy(tree, options.out, options);
  const cwd = process.cwd();
  const backup = await writeInPlace(tree, options);
  options.print(`kept the Deployd app as ${backup} (remove it once the svc app works)`);
  // A shell that was in the app is now in the backup: it still has its old path but not the app.
  if (cwd === tree.root || cwd.startsWith(tree.root + sep)) options.print(`your shell may now be in the backup; cd "${tree.root}" to reach the migrated app`);
}

/**
 * The real path `--out` names, checked: not a link, not a file, empty if it exists, and neither the
 * app folder nor inside it (also through a link among its parents).
 */
export async function outFolder(arg: string, source: string): Promise<string> {
  const path = resolve(arg);
  let st;
  try {
    st = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (st?.isSymbolicLink()) throw new Error(`--out ${arg} is a link; name the folder to write into itself`);
  if (st && !st.isDirectory()) throw new Error(`--out ${arg} exists and is not a folder`);
  const real = await realLocation(path);
  if (real === source) throw new Error('--out is the app folder itself; leave --out out to migrate in place');
  if (real.startsWith(source + sep)) throw new Error('--out cannot be inside the app folder');
  if (st && (await readdir(path)).length > 0) throw new Error(`${arg} exists and is not empty`);
  return real;
}

/** The real path of `path`, which may not exist yet: its nearest existing parent's, plus the rest. */
async function realLocation(path: string): Promise<string> {
  const rest: string[] = [];
  let at = path;
  for (;;) {
    try {
      return join(await realpath(at), ...rest.reverse());
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(at) === at) throw err;
      rest.push(basename(at));
      at = dirname(at);
    }
  }
}

/** Writes the migrated copy into a fresh folder beside `out`, then renames it to `out`. */
async function writeCopy(tree: AppTree, out: string, options: PlaceOptions): Promise<void> {
  const parent = dirname(out);
  const made = await mkdir(parent, { recursive: true });
  let temp: string | undefined;
  try {
    temp = await mkdtemp(join(parent, `.${basename(out)}.migrating-`));
    await writeTree(tree, temp, { label: options.label, signal: options.signal });
    await chmod(temp, (await stat(tree.root)).mode & 0o777);
    options.signal?.throwIfAborted();
    // Onto a missing or empty folder only: rename(2) refuses a non-empty one and a link.
    await rename(temp, out);
  } catch (err) {
    if (temp !== undefined) await rm(temp, { recursive: true, force: true });
    if (made !== undefined) await removeEmptyParents(parent, made);
    throw failed(err, options.signal);
  }
}

/**
 * Writes the migrated app into a fresh folder beside the app, moves node_modules and .git into
 * it, then swaps the folders; the Deployd app is kept beside, under the name answered. Until the
 * swap nothing of the app is changed; a failure during it puts everything back.
 */
async function writeInPlace(tree: AppTree, options: PlaceOptions): Promise<string> {
  const app = tree.root;
  const parent = dirname(app);
  let temp: string;
  try {
    temp = await mkdtemp(join(parent, `.${basename(app)}.migrating-`));
  } catch (err) {
    throw new Error(`cannot migrate ${options.label} in place: no folder can be made beside it (${(err as Error).message}); write a migrated copy with --out`, { cause: err });
  }
  const moved: AppTree['skipped'] = [];
  /** Neither folder is where it was: nothing is moved back nor removed. */
  let stranded = false;
  try {
    // The new folder takes the old one's place: same owner (when root migrates a user's app) and mode.
    const keepOwner = process.getuid?.() === 0;
    await writeTree(tree, temp, { label: options.label, signal: options.signal, keepOwner });
    const st = await stat(app);
    if (keepOwner) await lchown(temp, st.uid, st.gid);
    await chmod(temp, st.mode & 0o777);
    options.signal?.throwIfAborted();
    const backup = await freeName(join(parent, `${basename(app)}.deployd-backup`));
    // From here on the switch is not interrupted: it is a few renames, each undone on failure.
    for (const skipped of tree.skipped) {
      await rename(skipped.from, join(temp, skipped.rel));
      moved.push(skipped);
    }
    await rename(app, backup);
    try {
      await rename(temp, app);
    } catch (err) {
      try {
        await rename(backup, app);
      } catch {
        stranded = true;
        throw new Error(`${(err as Error).message}; the Deployd app is now ${backup} and the migrated one ${temp}: rename them by hand`, { cause: err });
      }
      throw err;
    }
    return backup;
  } catch (err) {
    if (stranded) throw err;
    const lost: string[] = [];
    for (const skipped of moved.reverse()) {
      try {
        await rename(join(temp, skipped.rel), skipped.from);
      } catch {
        lost.push(skipped.rel);
      }
    }
    // What could not be moved back stays in the new folder: removing it would lose it.
    if (lost.length > 0) throw new Error(`${failed(err, options.signal).message}; could not move back ${lost.join(', ')}: they are in ${temp}`, { cause: err });
    await rm(temp, { recursive: true, force: true });
    throw failed(err, options.signal);
  }
}

/** The error a failed write is reported with. */
function failed(err: unknown, signal: AbortSignal | undefined): Error {
  if (signal?.aborted) return new Error('interrupted; nothing was changed', { cause: err });
  return new Error(`${(err as Error).message}; nothing was changed`, { cause: err });
}

/** Removes the folders `mkdir -p` made for `--out` (from `made` down to `parent`) while they are empty. */
async function removeEmptyParents(parent: string, made: string): Promise<void> {
  for (let at = parent; at.length >= made.length; at = dirname(at)) {
    try {
      await rmdir(at);
    } catch {
      return;
    }
  }
}

/** `base`, or `base-2`, `base-3`, ... : the first that does not exist. */
async function freeName(base: string): Promise<string> {
  for (let n = 1; n <= BACKUP_NAMES; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if (!(await existsNoFollow(name))) return name;
  }
  throw new Error(`${base} and ${BACKUP_NAMES - 1} more backup names are taken; remove old backups`);
}

async function existsNoFollow(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

