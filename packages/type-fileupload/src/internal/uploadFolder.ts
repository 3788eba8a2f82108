import { constants, createWriteStream } from 'node:fs';
import { link, lstat, mkdir, open, realpath, rm, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SvcError, createId } from '@svc/core';

/** Longest name of one file or folder (what Linux and macOS file systems take). */
export const MAX_NAME_BYTES = 255;
/** Most folder levels in a subdir. */
const MAX_SUBDIR_DEPTH = 8;
/** Where files are written while they arrive; its leading dot keeps it out of every request's reach. */
const INCOMING = '.incoming';
/** Folders of the app that must not receive uploads: the static site, the app's code and keys. */
const RESERVED = new Set(['public', 'resources', 'node_modules', 'package.json', 'app.json']);

/**
 * Why `name` cannot be one file or folder name, or undefined when it can. Refused: empty, '.' and
 * '..', a leading dot (hidden files, and the incoming folder), slashes and backslashes, control
 * characters (NUL, CR, LF, ...), and more than 255 bytes.
 */
export function badName(name: string): string | undefined {
  if (name === '' || name.startsWith('.')) return 'it is empty or starts with a dot';
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f/\\]/.test(name)) return 'it holds a slash, a backslash or a control character';
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return `it is longer than ${MAX_NAME_BYTES} bytes`;
  return undefined;
}

/** The folder names of a subdir ('images/2024'); a leading or trailing slash is ignored. Throws a 400 on a bad one. */
export function subdirParts(subdir: string): string[] {
  const trimmed = subdir.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return [];
  const parts = trimmed.split('/');
  if (parts.length > MAX_SUBDIR_DEPTH) throw new SvcError('BAD_REQUEST', `subdir has more than ${MAX_SUBDIR_DEPTH} levels`);
  for (const part of parts) {
    const bad = badName(part);
    if (bad !== undefined) throw new SvcError('BAD_REQUEST', `subdir is not allowed: ${bad}`);
  }
  return parts;
}

/** The folder of a Fileupload resource: names inside it can never reach a file outside it. */
export interface UploadFolder {
  readonly root: string;
  /**
   * A new file in the incoming folder, written from `stream`; answers its path and size.
   * `created` is told the path before the file is made: the caller removes it, whatever happens.
   * `signal` stops the write (and rejects).
   */
  receive(stream: Readable, created: (path: string) => void, signal: AbortSignal): Promise<{ path: string; size: number }>;
  /**
   * Moves an incoming file to `<subdir>/<name>` without replacing anything: when the name is
   * taken, 'a (1).png', 'a (2).png', ... (as dpd-fileupload's README shows). Answers the name used.
   */
  place(incoming: string, subdir: readonly string[], name: string): Promise<string>;
  /** Opens `<subdir>/<name>` for reading, not through a link; undefined when there is no such file. */
  open(subdir: readonly string[], name: string): Promise<FileHandle | undefined>;
  /** Removes `<subdir>/<name>`; a missing file is no error. */
  remove(subdir: readonly string[], name: string): Promise<void>;
}

/**
 * Checks `directory` (a setting: relative, plain names, not a reserved folder of the app) and
 * creates the folder. Throws an Error naming the setting when it is refused, or when the folder
 * (or any folder on its way) is a symbolic link: uploads must land where the setting says.
 */
export async function openUploadFolder(resource: string, appDir: string, directory: string): Promise<UploadFolder> {
  const parts = directory.replace(/\/+$/, '').split('/');
  const refused = (why: string): Error => new Error(`resource ${resource}: setting directory ${JSON.stringify(directory)} is not allowed: ${why}`);
  for (const part of parts) {
    const bad = badName(part);
    if (bad !== undefined) throw refused(`a folder name ${bad}`);
  }
  if (RESERVED.has((parts[0] as string).toLowerCase())) throw refused(`${parts[0]}/ is a folder of the app itself (public/ is served as it is, which uploads must not be)`);
  const app = await realpath(appDir);
  const root = join(app, ...parts);
  await mkdir(root, { recursive: true });
  if ((await realpath(root)) !== root) throw refused('it is, or is inside, a symbolic link');
  // What an earlier process left half-received is no upload.
  await rm(join(root, INCOMING), { recursive: true, force: true });
  await mkdir(join(root, INCOMING), { mode: 0o700 });

  /** The folder of `subdir`, created, each level checked to be a real folder and not a link. */
  async function folderOf(subdir: readonly string[], create: boolean): Promise<string | undefined> {
    let dir = root;
    for (const part of subdir) {
      dir = join(dir, part);
      if (create) {
        await mkdir(dir).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
      }
      const info = await lstat(dir).catch(() => undefined);
      if (info === undefined && !create) return undefined;
      if (info === undefined || !info.isDirectory()) throw new SvcError('CONFLICT', `subdir ${subdir.join('/')} is not a folder`);
    }
    // Nothing on the way may be a link: the real path is the path.
    if ((await realpath(dir)) !== resolve(dir)) throw new SvcError('CONFLICT', `subdir ${subdir.join('/')} is not a folder`);
    return dir;
  }

  return {
    root,
    async receive(stream, created, signal) {
      const path = join(root, INCOMING, createId());
      created(path);
      // 'wx': a new file or nothing (O_EXCL never writes through a link).
      await pipeline(stream, createWriteStream(path, { flags: 'wx', mode: 0o644 }), { signal });
      return { path, size: (await stat(path)).size };
    },
    async place(incoming, subdir, name) {
      const dir = (await folderOf(subdir, true)) as string;
      const dot = name.lastIndexOf('.');
      const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
      for (let n = 0; n < 1000; n++) {
        const candidate = n === 0 ? name : `${stem} (${n})${ext}`;
        if (n > 0 && Buffer.byteLength(candidate) > MAX_NAME_BYTES) break;
        try {
          // link() fails when the name exists (a file, a folder or a link), never replacing it.
          await link(incoming, join(dir, candidate));
          return candidate;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        }
      }
      throw new SvcError('CONFLICT', `no free name for ${name} in this folder`);
    },
    async open(subdir, name) {
      if (badName(name) !== undefined) return undefined;
      const dir = await folderOf(subdir, false).catch(() => undefined);
      if (dir === undefined) return undefined;
      let handle: FileHandle;
      try {
        handle = await open(join(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      } catch {
        return undefined;
      }
      // A folder, a FIFO or a device under that name is no uploaded file.
      if (!(await handle.stat()).isFile()) {
        await handle.close();
        return undefined;
      }
      return handle;
    },
    async remove(subdir, name) {
      if (badName(name) !== undefined) return;
      const dir = await folderOf(subdir, false).catch(() => undefined);
      if (dir === undefined) return;
      await unlink(join(dir, name)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    },
  };
}
