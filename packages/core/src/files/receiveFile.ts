import { createWriteStream } from 'node:fs';
import { mkdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SvcError, isSvcError } from '../errors.js';
import { randomHex } from '../ids.js';
import type { FileSettings } from './fileSettings.js';
import { typeAllowed } from './fileSettings.js';
import { SNIFF_BYTES, sniffType } from './sniffType.js';

/** A file received into the temporary folder, not yet published. */
export interface ReceivedFile {
  /** Its path in the temporary folder. */
  path: string;
  /** The name its uploader gave, made safe (no folders, no control characters). */
  name: string;
  size: number;
  /** Sniffed from its bytes. */
  type: string;
}

/** The longest name kept (in UTF-16 code units); longer ones are cut, keeping the extension. */
const MAX_NAME = 200;

/**
 * The name an uploader gave, as svc keeps it: the last segment of a path (`C:\x\a.png`,
 * `../../a.png` -> `a.png`), without control or bidi characters, at most {@link MAX_NAME}
 * characters; `file` when nothing is left. It never becomes a path: keys are made of ids.
 */
export function safeFileName(given: string | undefined): string {
  const base = (given ?? '').split(/[/\\]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  let name = base.replace(/[\x00-\x1f\x7f-\x9f\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g, '').trim();
  name = name.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '');
  if (name === '.' || name === '..') name = '';
  if (name.length > MAX_NAME) {
    const dot = name.lastIndexOf('.');
    const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
    name = name.slice(0, MAX_NAME - ext.length) + ext;
  }
  return name === '' ? 'file' : name;
}

/** Receiving folders remembered as made, at most (more: the oldest is forgotten, and made again if asked). */
const MAX_PREPARED = 16;

/**
 * The files one server is receiving or has received and not yet published or removed, and the
 * receiving folders it made. The orphan sweep of the temporary folder leaves a held file whatever
 * its age (with `orphanGraceMinutes: 0` it removed the server's own uploads in progress). One per
 * server (apps/server's startApp), shared by every collection and kept across reloads: a reload's
 * sweep must leave the uploads the previous version is still receiving. Bounded: a file is held
 * from the start of its receive to its publication or removal (the uploads under way, each
 * request's files bounded by its properties' `maxFiles`), and at most {@link MAX_PREPARED} folders
 * are remembered.
 */
export class ReceivedFiles {
  private readonly held = new Set<string>();
  private readonly prepared = new Set<string>();

  /** How many files are held now. */
  get heldCount(): number {
    return this.held.size;
  }

  /** Whether this server holds the received file at `path` (see {@link receive}). */
  isHeld(path: string): boolean {
    return this.held.has(path);
  }

  /** Ends the hold of a received file, once published (moved away) or removed. */
  release(path: string): void {
    this.held.delete(path);
  }

  /** Removes a received file that will not be published, and ends the hold of it. */
  async discard(path: string): Promise<void> {
    await unlink(path).catch(() => undefined);
    this.held.delete(path);
  }

  /**
   * Receives one file's bytes into `tempDir`: cut off with 413 past the property's `maxSize`,
   * refused with 415 as soon as its first bytes show a type the property does not allow. On any
   * failure the partial file is removed before the error is thrown. The file is held (never swept)
   * until {@link release} or {@link discard}.
   */
  async receive(source: Readable, settings: FileSettings, tempDir: string, name: string): Promise<ReceivedFile> {
    if (!this.prepared.has(tempDir)) {
      await mkdir(tempDir, { recursive: true });
      if (this.prepared.size >= MAX_PREPARED) this.prepared.delete(this.prepared.values().next().value as string);
      this.prepared.add(tempDir);
    }
    const path = join(tempDir, `${randomHex(12)}.part`);
    const sniffer = new SniffingCounter(settings);
    this.held.add(path);
    try {
      await pipeline(source, sniffer, createWriteStream(path, { flags: 'wx' }));
      sniffer.decide();
      return { path, name: safeFileName(name), size: sniffer.size, type: sniffer.type as string };
    } catch (err) {
      await this.discard(path);
      throw sniffer.failure ?? (isSvcError(err) ? err : new SvcError('BAD_REQUEST', 'the upload broke off before its end', { cause: err }));
    }
  }
}

/** Counts the bytes going through, keeps the first ones to sniff, and stops what is too large or of a type not allowed. */
class SniffingCounter extends Transform {
  size = 0;
  type: string | undefined;
  failure: SvcError | undefined;
  private head: Buffer[] = [];
  private headSize = 0;

  constructor(private readonly settings: FileSettings) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null, data?: Buffer) => void): void {
    this.size += chunk.length;
    if (this.size > this.settings.maxSize) {
      this.failure = new SvcError('PAYLOAD_TOO_LARGE', `${this.settings.name}: a file may hold at most ${this.settings.maxSize} bytes`, { errors: { [this.settings.name]: `is larger than ${this.settings.maxSize} bytes` } });
      done(this.failure);
      return;
    }
    if (this.type === undefined) {
      this.head.push(chunk);
      this.headSize += chunk.length;
      if (this.headSize >= SNIFF_BYTES) {
        try {
          this.decide();
        } catch (err) {
          done(err as Error);
          return;
        }
      }
    }
    done(null, chunk);
  }

  /** Sniffs the type from the bytes so far (all of them, at the end) and checks it is allowed. */
  decide(): void {
    if (this.type !== undefined) return;
    if (this.size === 0) {
      this.failure = new SvcError('VALIDATION_FAILED', `${this.settings.name}: the file is empty`, { errors: { [this.settings.name]: 'is an empty file' } });
      throw this.failure;
    }
    const head = Buffer.concat(this.head, this.headSize).subarray(0, SNIFF_BYTES);
    this.head = [];
    this.type = sniffType(head);
    if (!typeAllowed(this.settings, this.type)) {
      this.failure = new SvcError('UNSUPPORTED_MEDIA_TYPE', `${this.settings.name}: files of type ${this.type} are not allowed (allowed: ${(this.settings.types ?? []).join(', ')})`, {
        errors: { [this.settings.name]: `must be of type ${(this.settings.types ?? []).join(', ')}` },
      });
      throw this.failure;
    }
  }
}
