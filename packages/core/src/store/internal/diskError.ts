import { SvcError } from '../../errors.js';

/** errno codes of a disk that has no room left: the file system, or the user's quota. */
const FULL = new Set(['ENOSPC', 'EDQUOT']);
/** errno codes of a disk that fails or was made read-only under the running process. */
const FAILING = new Set(['EIO', 'EROFS']);

/** The errno code of an error when it says the disk is full or failing, else undefined. */
export function diskErrorCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && (FULL.has(code) || FAILING.has(code)) ? code : undefined;
}

/**
 * The error a client gets for a write the disk refused: 507 STORAGE_FULL when it is full (or the
 * quota is used up), 503 STORAGE_FAILED when it fails (EIO) or turned read-only (EROFS). Neither
 * says where the folder is: that goes to the log.
 */
export function diskError(err: unknown): SvcError {
  const code = diskErrorCode(err) ?? 'EIO';
  if (FULL.has(code)) return new SvcError('STORAGE_FULL', "the data folder's disk is full", { cause: err });
  return new SvcError('STORAGE_FAILED', code === 'EROFS' ? "the data folder's disk is read-only" : "the data folder's disk is failing (input/output error)", { cause: err, headers: { 'retry-after': '30' } });
}

/**
 * The log line of a disk error, with the folder, the file and what to do. Written once when
 * writes start failing (see DiskState), not once per refused write.
 */
export function diskErrorLog(err: unknown, dir: string, file: string): string {
  const code = diskErrorCode(err) ?? 'EIO';
  const what = FULL.has(code)
    ? `the disk of the data folder ${dir} is full (${code} writing ${file}): writes answer 507 until space is freed there, then work again without a restart`
    : `the disk of the data folder ${dir} is failing (${code} writing ${file}): writes answer 503 until it works again (check the disk and the system log)`;
  return `embedded store: ${what}; reads go on, and no acknowledged write was lost`;
}

/** At most one line about the disk per this time (a disk at the edge refuses and takes writes in turn). */
const LOG_EVERY_MS = 60_000;

/**
 * Whether the disk is refusing writes, for the whole store: the first refusal is logged with the
 * folder, the later ones are not; the first write that succeeds after it is logged too. A disk at
 * the edge of full (a small write fits where a big one did not) gives at most one such pair a
 * minute, not a line per write.
 */
export class DiskState {
  #failing = false;
  /** The refusal that began this run of refusals was logged (so its end is logged too). */
  #logged = false;
  #lastLog = -Infinity;
  readonly #dir: string;
  readonly #warn: (message: string) => void;

  constructor(dir: string, warn: (message: string) => void) {
    this.#dir = dir;
    this.#warn = warn;
  }

  /** Turns a disk error into the client's SvcError, logging it as said above; other errors pass. */
  refused(err: unknown, file: string): unknown {
    if (diskErrorCode(err) === undefined) return err;
    if (!this.#failing) {
      this.#failing = true;
      const now = Date.now();
      this.#logged = now - this.#lastLog >= LOG_EVERY_MS;
      if (this.#logged) {
        this.#lastLog = now;
        this.#warn(diskErrorLog(err, this.#dir, file));
      }
    }
    return diskError(err);
  }

  /** A write reached the disk: when writes were failing, they work again. */
  wrote(): void {
    if (!this.#failing) return;
    this.#failing = false;
    if (this.#logged) this.#warn(`embedded store: writes to the data folder ${this.#dir} succeed again`);
  }
}
