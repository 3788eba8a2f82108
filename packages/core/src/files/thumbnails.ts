import { mkdir, writeFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { SvcError } from '../errors.js';
import { randomHex } from '../ids.js';
import type { FileStorage, OpenedFile, WholeFile } from './FileStorage.js';
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

/** 40 megapixels: an 8000x5000 photo; larger images get no thumbnail (app.json files.maxPixels). */
export const DEFAULT_MAX_PIXELS = 40_000_000;

/**
 * Files up to this size are answered whole from one read (FileStorage.openWhole): no more memory
 * per answer than a stream's first read (64 KiB), and a declared thumbnail size is usually less.
 */
export const WHOLE_BYTES = 64 * 1024;

/** The file at `key`, whole (read at once when small and the storage can), or the range asked. */
export function openStored(storage: FileStorage, key: string, range?: { start: number; end: number }): Promise<WholeFile | OpenedFile | undefined> {
  return range === undefined && storage.openWhole !== undefined ? storage.openWhole(key, WHOLE_BYTES) : storage.open(key, range);
}

/** The type of the thumbnails of an image of `type`, or undefined when none is made of it. */
export function thumbTypeOf(type: string): string | undefined {
  if (!THUMBNAILED.has(type)) return undefined;
  return type === 'image/jpeg' || type === 'image/webp' ? type : 'image/png';
}

/**
 * The thumbnail makers of one server, shared by its collections and kept across its reloads
 * (apps/server's startApp makes one per server, as it does ReceivedFiles): one Thumbnails per
 * thumbnailer, so that the server makes at most `parallel` at a time whatever the collection, and
 * a reload's new collections wait on what the old ones started. Bounded: one entry per thumbnailer
 * given (a server has one); a new `maxPixels` replaces its thumbnailer's entry (those who hold the
 * old one keep using it until they go).
 */
export class ThumbnailQueues {
  readonly #byThumbnailer = new Map<Thumbnailer, Thumbnails>();

  /** The Thumbnails of `thumbnailer` at `maxPixels`: the one already made when it has the same limit. */
  of(thumbnailer: Thumbnailer, maxPixels: number): Thumbnails {
    const kept = this.#byThumbnailer.get(thumbnailer);
    if (kept !== undefined && kept.maxPixels === maxPixels) return kept;
    const made = new Thumbnails(thumbnailer, maxPixels);
    this.#byThumbnailer.set(thumbnailer, made);
    return made;
  }
}

/**
 * Thumbnails made once and kept beside their image (`<image key>.<size>`), at most `parallel`
 * made at a time (per ThumbnailQueues: per server) and each size of an image made once however
 * many ask for it together. They go with their image: its key holds an id never reused.
 */
export class Thumbnails {
  private readonly making = new Map<string, Promise<void>>();
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly thumbnailer: Thumbnailer,
    readonly maxPixels: number,
    private readonly parallel = 2,
  ) {}

  /** The kept thumbnail at `thumbKey` of the image at `key` (whole), made first when there is none. */
  async open(storage: FileStorage, key: string, thumbKey: string, size: ThumbSize, type: string): Promise<WholeFile | OpenedFile | undefined> {
    const kept = await openStored(storage, thumbKey);
    if (kept !== undefined) return kept;
    let made = this.making.get(thumbKey);
    if (made === undefined) {
      made = this.make(storage, key, thumbKey, size, type).finally(() => this.making.delete(thumbKey));
      this.making.set(thumbKey, made);
    }
    await made;
    return openStored(storage, thumbKey);
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
