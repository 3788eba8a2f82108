import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import { lstat, mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '@svc/core';

/** Shorter keys are refused in SVC_ROOT_KEYS and reported in keys.json (`svc keygen` makes 256 characters). */
export const MIN_KEY_LENGTH = 32;
/** A keys.json larger than this is refused unread (it holds a few keys of 256 characters). */
const MAX_KEYS_FILE_BYTES = 1024 * 1024;
/**
 * A file changed this recently is read again at every check: file times may be as coarse as a
 * clock tick, so a second rewrite of the same size within that tick would keep its signature.
 */
const RECENT_CHANGE_NS = 2_000_000_000n;

/** Where an app keeps its root keys: `.svc/keys.json`, or Deployd's `.dpd/keys.json`. */
export function keysFile(appDir: string): string {
  const own = join(appDir, '.svc', 'keys.json');
  const deployd = join(appDir, '.dpd', 'keys.json');
  return !existsSync(own) && existsSync(deployd) ? deployd : own;
}

/** The app's root keys (Deployd's format: `{"<hex key>": true}`); none when there is no file. */
export async function readKeys(appDir: string): Promise<string[]> {
  const read = readKeysFile(keysFile(appDir));
  if (read.refused !== undefined) throw new Error(read.refused);
  return read.keys;
}

/**
 * SVC_ROOT_KEYS: root keys from the environment (containers), comma-separated, beside keys.json.
 * A key shorter than {@link MIN_KEY_LENGTH} or with spaces or control characters stops the start;
 * the message never shows the key.
 */
export function envRootKeys(value: string | undefined): string[] {
  if (value === undefined) return [];
  const keys = value
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  keys.forEach((key, i) => {
    if (key.length < MIN_KEY_LENGTH) throw new Error(`SVC_ROOT_KEYS: key ${i + 1} is ${key.length} characters; a root key needs at least ${MIN_KEY_LENGTH} (svc keygen makes 256)`);
    if (!/^[\x21-\x7e]+$/.test(key)) throw new Error(`SVC_ROOT_KEYS: key ${i + 1} holds a character other than printable ASCII; a header cannot carry it`);
  });
  return keys;
}

/** The keys of a running server, read again whenever keys.json changes. */
export interface LiveKeys {
  /** The current keys: keys.json's (when it can be trusted) and the extra ones. */
  current(): readonly string[];
}

/**
 * The root keys of a running app. Every production root check looks at keys.json (one lstat; the
 * file is read again when its identity, size, times or mode changed, or when it changed within the
 * last two seconds), so that a key removed from the file, by any editor or by
 * `svc keygen --revoke`, is refused from the next request on. No watcher: a rename-writing editor
 * or a full inotify table would make one miss changes.
 *
 * keys.json that cannot be trusted gives no keys (the `extra` ones still work) and is logged once
 * per change: a file that does not parse (a partial write) or is no JSON object, a symbolic link
 * (a link could point the server at any file), not a regular file, writable by everyone, or over
 * 1 MB. A deleted file gives no keys.
 */
export function liveKeys(appDir: string, options: { extra?: readonly string[]; logger: Logger }): LiveKeys {
  const extra = options.extra ?? [];
  const own = join(appDir, '.svc', 'keys.json');
  const deployd = join(appDir, '.dpd', 'keys.json');
  let signature: string | undefined;
  let keys: readonly string[] = extra;
  let reported: string | undefined;
  return {
    current() {
      // keysFile's choice, without following a link: .svc/keys.json, else .dpd/keys.json.
      let file = own;
      let stats = lstatQuiet(own);
      if (stats === undefined) {
        const old = lstatQuiet(deployd);
        if (old !== undefined) [file, stats] = [deployd, old];
      }
      const now = signatureOf(file, stats);
      if (now === signature && !changedRecently(stats)) return keys;
      const read = readKeysFile(file);
      // The signature of what was read: a change during the read shows at the next check.
      signature = read.signature;
      const next = [...read.keys, ...extra];
      if (next.length !== keys.length || next.some((k, i) => k !== keys[i])) keys = next;
      if (read.refused !== undefined && read.refused !== reported) options.logger.error(`root keys: ${read.refused}; its keys are refused until it is fixed`);
      reported = read.refused;
      return keys;
    },
  };
}

function signatureOf(file: string, stats: BigIntStats | undefined): string {
  return stats === undefined ? `${file}:none` : `${file}:${stats.dev}:${stats.ino}:${stats.mode}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

function changedRecently(stats: BigIntStats | undefined): boolean {
  if (stats === undefined) return false;
  const now = BigInt(Date.now()) * 1_000_000n;
  // A file time ahead of the clock (the clock was set back) counts as recent too.
  return now - stats.ctimeNs < RECENT_CHANGE_NS;
}

interface KeysRead {
  keys: string[];
  signature: string;
  /** Why the file's keys are not used, naming the file, never a key. */
  refused?: string;
}

/** Reads keys.json without following a link, and describes what it read. */
function readKeysFile(file: string): KeysRead {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { keys: [], signature: `${file}:none` };
    if (code === 'ELOOP') return { keys: [], signature: signatureOf(file, lstatQuiet(file)), refused: `${file} is a symbolic link; svc reads only a regular file` };
    return { keys: [], signature: signatureOf(file, lstatQuiet(file)), refused: `${file} cannot be read (${code ?? 'error'})` };
  }
  try {
    const stats = fstatSync(fd, { bigint: true });
    const signature = signatureOf(file, stats);
    if (!stats.isFile()) return { keys: [], signature, refused: `${file} is not a regular file` };
    if ((stats.mode & 0o002n) !== 0n) return { keys: [], signature, refused: `${file} is writable by every user of the machine (chmod 600 it)` };
    if (stats.size > BigInt(MAX_KEYS_FILE_BYTES)) return { keys: [], signature, refused: `${file} is over 1 MB` };
    const buffer = Buffer.alloc(Number(stats.size));
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, length);
      if (n === 0) break;
      length += n;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(buffer.subarray(0, length).toString('utf8'));
    } catch {
      return { keys: [], signature, refused: `${file} is not valid JSON` };
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { keys: [], signature, refused: `${file} is not a JSON object ({"<key>": true})` };
    const record = parsed as Record<string, unknown>;
    return { keys: Object.keys(record).filter((k) => record[k] === true && k !== ''), signature };
  } finally {
    closeSync(fd);
  }
}

function lstatQuiet(file: string): BigIntStats | undefined {
  try {
    return lstatSync(file, { bigint: true, throwIfNoEntry: false });
  } catch {
    // A folder that cannot be searched (EACCES): as good as no file.
    return undefined;
  }
}

/** keys.json's record for a change by the CLI: refused when the file cannot be trusted. */
function recordFor(file: string): Record<string, boolean> {
  const read = readKeysFile(file);
  if (read.refused !== undefined) throw new Error(`${read.refused}; fix it before changing the keys`);
  return Object.fromEntries(read.keys.map((k) => [k, true]));
}

/**
 * Replaces keys.json in one step: a new file of mode 0600 in the same folder, flushed, then
 * renamed over the old one, so that a server reading it sees the old keys or the new ones, never
 * a part, and a crash leaves one of the two.
 */
async function writeKeysFile(file: string, record: Record<string, boolean>): Promise<void> {
  const tmp = join(dirname(file), `.keys.json.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(record, null, 2)}\n`);
    await handle.chmod(0o600);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await handle.close();
  try {
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}

/** How long a change of keys.json waits for another one to finish, and when a lock is stale. */
const LOCK_WAIT_MS = 5000;
const LOCK_STALE_MS = 30_000;

/**
 * Runs a read-change-write of keys.json alone: two at once (a keygen during a revoke) would
 * otherwise write back a key the other just removed. The lock is a file created exclusively
 * beside keys.json; one older than 30 s is left by a process that died and is taken over.
 */
async function withKeysLock<T>(file: string, change: () => Promise<T>): Promise<T> {
  const lock = `${file}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      await (await open(lock, 'wx', 0o600)).close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > LOCK_STALE_MS) {
        await unlink(lock).catch(() => undefined);
        continue;
      }
      if (Date.now() > deadline) throw new Error(`another svc keygen is changing ${file} (${lock}); try again`, { cause: err });
      await sleep(50);
    }
  }
  try {
    return await change();
  } finally {
    await unlink(lock).catch(() => undefined);
  }
}

/** Adds a new random root key and answers it. */
export async function generateKey(appDir: string): Promise<string> {
  const file = join(appDir, '.svc', 'keys.json');
  await mkdir(join(appDir, '.svc'), { recursive: true });
  return withKeysLock(file, async () => {
    const existing = recordFor(file);
    const key = randomBytes(128).toString('hex');
    existing[key] = true;
    await writeKeysFile(file, existing);
    return key;
  });
}

/**
 * Removes a root key from keys.json: the whole key, or a beginning of at least 16 characters (what
 * `svc keygen` prints) that only one key has. Answers the file. A running server refuses the key
 * from its next request on.
 */
export async function revokeKey(appDir: string, given: string): Promise<string> {
  const file = keysFile(appDir);
  if ((await lstat(file).catch(() => undefined)) === undefined) throw new Error(`${file} does not exist: there is no key to revoke`);
  return withKeysLock(file, async () => {
    const record = recordFor(file);
    const keys = Object.keys(record);
    let match = keys.filter((k) => k === given);
    if (match.length === 0 && given.length >= 16) match = keys.filter((k) => k.startsWith(given));
    if (match.length === 0) throw new Error(`no such key in ${file}${given.length < 16 ? ' (give the whole key, or its first 16 characters or more)' : ''}`);
    if (match.length > 1) throw new Error(`${match.length} keys of ${file} begin so; give more of the key`);
    delete record[match[0] as string];
    await writeKeysFile(file, record);
    return file;
  });
}
