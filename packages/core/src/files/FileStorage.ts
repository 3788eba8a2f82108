import type { Readable } from 'node:stream';

/** A stored file as a listing shows it. */
export interface StoredEntry {
  /** Its key relative to the listed folder ('photos/k2v...'). */
  name: string;
  size: number;
  /** Last change, in epoch milliseconds. */
  modified: number;
}

/** An opened stored file: its whole size and a stream of the bytes asked for. */
export interface OpenedFile {
  size: number;
  body: Readable;
}

/** A small stored file read whole at once (no stream): its bytes. */
export interface WholeFile {
  size: number;
  bytes: Buffer;
}

/**
 * Where file properties keep their files: the local disk (svc's own, {@link createDiskFileStorage})
 * or an S3-compatible bucket (the Bucket type's). Keys are '/'-separated paths that svc makes
 * from ids it checked: `<collection>/<object id>/<property>/<file id>[.<thumbnail size>]`.
 * A file appears at its key whole or not at all: {@link put} publishes a file already written.
 */
export interface FileStorage {
  /** For logs: 'disk data/files', 'bucket /media'. */
  readonly description: string;
  /**
   * A folder on the local disk for files being received: {@link put} moves them from there
   * (on the disk store, a rename on the same file system).
   */
  readonly tempDir: string;
  /** Publishes the local file `file` (in {@link tempDir}) at `key`, replacing what is there; `file` is gone after. */
  put(key: string, file: string, type: string): Promise<void>;
  /** The file at `key` (`range`: inclusive byte offsets, already checked against its size), or undefined when there is none. */
  open(key: string, range?: { start: number; end: number }): Promise<OpenedFile | undefined>;
  /**
   * The whole file at `key` read at once when it holds at most `maxBytes` (a thumbnail, an
   * avatar: no stream to set up and tear down), else opened whole as {@link open} opens it;
   * undefined when there is none. Optional: without it, {@link open} is asked.
   */
  openWhole?(key: string, maxBytes: number): Promise<WholeFile | OpenedFile | undefined>;
  /** The size of the file at `key`, or undefined when there is none. */
  size(key: string): Promise<number | undefined>;
  /** Removes the files at these keys; a missing one is no error. */
  remove(keys: readonly string[]): Promise<void>;
  /** The names of the folders right under `prefix` ('<collection>/'), in order, after `after`, at most `limit`. */
  folders(prefix: string, after: string | undefined, limit: number): Promise<string[]>;
  /** Every file under `prefix` ('<collection>/<object id>/'), at any depth (bounded by the caller's layout). */
  files(prefix: string): Promise<StoredEntry[]>;
  /** Ends connections (a bucket's client). */
  close?(): Promise<void>;
}
