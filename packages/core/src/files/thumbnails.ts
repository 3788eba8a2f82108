import { mkdir, writeFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { SvcError } from '../errors.js';
import { randomHex } from '../ids.js';
import type { FileStorage, OpenedFile } from './FileStorage.js';
import type { ThumbSize } from './fileSettings.js';

/**
 * Makes a thumbnail of an image (apps/server gives one built on sharp). It must refuse an image
 * of more than `maxPixels` pixels before decoding it (a decompression bomb: a few KB that
 * decode to gigabytes), and answer the thumbnail encoded as `type`.
 */
export interface Thumbnailer {
  make(image: Buffer, size: ThumbSize, options: { type: string; maxPixels: number }): Promise<Buffer>;
}

/** Image types thumbnails are made of. */
const THUMBNAILED = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'image/tiff']);

/** A thumbnail to answer with: opened in its storage, or its bytes held in memory. */
export type ThumbFile = OpenedFile | { size: number; body: undefined; bytes: Buffer };

/** Kept thumbnails up to this size are also held in memory (most are a few KB). */
const HELD_MAX = 256 * 1024;
/** The most bytes of thumbnails held in memory per process; the least recently served go first. */
const HELD_TOTAL = 16 * 1024 * 1024;

/** 40 megapixels: an 8000x5000 photo; larger images get no thumbnail (app.json files.maxPixels). */
export const DEFAULT_MAX_PIXELS = 40_000_000;

/** The type of the thumbnails of an image of `type`, or undefined when none is made of it. */
export function thumbTypeOf(type: string): string | undefined {
  if (!THUMBNAILED.has(type)) return undefined;
  return type === 'image/jpeg' || type === 'image/webp' ? type : 'image/png';
}

/**
 * Thumbnails made once and kept beside their image (`<image key>.<size>`), at most `parallel`
 * made at a time in the process and each size of an image made once however many ask for it
 * together. They go with their image: its key holds an id never reused. The small ones are held
 * in memory too ({@link HELD_TOTAL} at most), so that a thumbnail served again costs no file
 * system or bucket call: a key's bytes never change, and every request is allowed first (the
 * object must still hold the image), so one held after its image went is never served.
 */
export class Thumbnails {
  private readonly making = new Map<string, Promise<void>>();
  /** Held thumbnails by key, least recently served first, with the storage they are of. */
  private readonly held = new Map<string, { storage: FileStorage; bytes: Buffer }>();
  private heldBytes = 0;
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly thumbnailer: Thumbnailer,
    private readonly maxPixels: number,
    private readonly parallel = 2,
  ) {}

  /** The kept thumbnail at `thumbKey` of the image at `key`, made first when there is none. */
  async open(storage: FileStorage, key: string, thumbKey: string, size: ThumbSize, type: string): Promise<ThumbFile | undefined> {
    const held = this.heldOf(storage, thumbKey);
    if (held !== undefined) return held;
    const kept = await this.read(storage, thumbKey);
    if (kept !== undefined) return kept;
    let made = this.making.get(thumbKey);
    if (made === undefined) {
      made = this.make(storage, key, thumbKey, size, type).finally(() => this.making.delete(thumbKey));
      this.making.set(thumbKey, made);
    }
    await made;
    return this.heldOf(storage, thumbKey) ?? this.read(storage, thumbKey);
  }

  /** The kept thumbnail from its storage: a small one is read whole and held. */
  private async read(storage: FileStorage, thumbKey: string): Promise<ThumbFile | undefined> {
    const kept = await storage.open(thumbKey);
    if (kept === undefined || kept.size > HELD_MAX) return kept;
    const chunks: Buffer[] = [];
    for await (const chunk of kept.body) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    this.hold(storage, thumbKey, bytes);
    return { size: bytes.length, body: undefined, bytes };
  }

  private heldOf(storage: FileStorage, thumbKey: string): ThumbFile | undefined {
    const held = this.held.get(thumbKey);
    if (held === undefined || held.storage !== storage) return undefined;
    // Served again: last to go.
    this.held.delete(thumbKey);
    this.held.set(thumbKey, held);
    return { size: held.bytes.length, body: undefined, bytes: held.bytes };
  }

  private hold(storage: FileStorage, thumbKey: string, bytes: Buffer): void {
    if (bytes.length > HELD_MAX) return;
    const before = this.held.get(thumbKey);
    if (before !== undefined) this.heldBytes -= before.bytes.length;
    this.held.delete(thumbKey);
    this.held.set(thumbKey, { storage, bytes });
    this.heldBytes += bytes.length;
    for (const [oldest, entry] of this.held) {
      if (this.heldBytes <= HELD_TOTAL) break;
      this.held.delete(oldest);
      this.heldBytes -= entry.bytes.length;
    }
  }

  private async make(storage: FileStorage, key: string, thumbKey: string, size: ThumbSize, type: string): Promise<void> {
    await this.turn();
    try {
      const image = await storage.open(key);
      if (image === undefined) throw new SvcError('NOT_FOUND', 'not found');
      const chunks: Buffer[] = [];
      for await (const chunk of image.body) chunks.push(chunk as Buffer);
      let thumb: Buffer;
      try {
        thumb = await this.thumbnailer.make(Buffer.concat(chunks), size, { type, maxPixels: this.maxPixels });
      } catch (err) {
        throw new SvcError('UNSUPPORTED_MEDIA_TYPE', `no thumbnail of this image: ${(err as Error).message}`, { cause: err });
      }
      await mkdir(storage.tempDir, { recursive: true });
      const temp = join(storage.tempDir, `${randomHex(12)}.thumb`);
      await writeFile(temp, thumb, { flag: 'wx' });
      try {
        await storage.put(thumbKey, temp, type);
        this.hold(storage, thumbKey, thumb);
      } finally {
        await unlink(temp).catch(() => undefined);
      }
    } finally {
      this.done();
    }
  }

  private turn(): Promise<void> {
    if (this.running < this.parallel) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private done(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}
