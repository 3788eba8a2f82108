import { join } from 'node:path';
import { SvcError, createDiskFileStorage } from '@svc/core';
import type { CollectionFilesConfig, FileStorage, ReceivedFiles, Resource, ThumbSize, Thumbnailer, ThumbnailQueues } from '@svc/core';
import type { AppFolder } from './loadApp.js';

/** app.json `files`: where file properties keep their files, and their sweep (docs/files.md). */
export interface FilesSettings {
  /** A Bucket resource of the app ('/media') whose bucket holds the files; default: the disk, <app>/data/files. */
  bucket?: string;
  /** Images of more pixels get no thumbnail (default 40,000,000). */
  maxPixels?: number;
  /** Files no object holds are removed once this old (default 60 minutes). */
  orphanGraceMinutes?: number;
  /** How often the orphan sweep runs, the first pass right after start (default 10 minutes; 0: never on its own). */
  sweepMinutes?: number;
}

/**
 * The file storage of an app's Collections: the disk under <app>/data/files, or the bucket of
 * the Bucket resource app.json `files.bucket` names (found among `resources` when first used:
 * resources are built in any order). `server`: what the server keeps across its reloads, its files
 * being received and its thumbnails being made.
 */
export function filesConfigOf(app: AppFolder, resources: () => readonly Resource[], server: { received: ReceivedFiles; thumbnailQueues: ThumbnailQueues }): CollectionFilesConfig {
  const settings = (app.settings.files ?? {}) as FilesSettings;
  let storage: FileStorage | (() => FileStorage);
  if (settings.bucket !== undefined) {
    const path = `/${settings.bucket.replace(/^\/+|\/+$/g, '')}`;
    storage = () => {
      const found = resources().find((r) => r.path === path);
      if (found?.fileStorage === undefined) throw new SvcError('UNAVAILABLE', `app.json files.bucket names ${path}, which is not a Bucket resource of this app`);
      return found.fileStorage;
    };
  } else {
    // Stateless (a folder and its paths): a new one per build costs nothing and keeps no module state.
    storage = createDiskFileStorage(join(app.dir, 'data', 'files'));
  }
  return {
    storage,
    received: server.received,
    thumbnailQueues: server.thumbnailQueues,
    thumbnailer: sharpThumbnailer,
    ...(settings.maxPixels !== undefined ? { maxPixels: settings.maxPixels } : {}),
    ...(typeof app.settings.bodyLimit === 'number' ? { fieldBytes: app.settings.bodyLimit } : {}),
    sweep: {
      ...(settings.orphanGraceMinutes !== undefined ? { graceMs: settings.orphanGraceMinutes * 60_000 } : {}),
      ...(settings.sweepMinutes !== undefined ? { intervalMs: settings.sweepMinutes * 60_000 } : {}),
    },
  };
}

/**
 * Thumbnails with sharp (libvips, prebuilt for the platform as an npm package): the image's
 * pixel count is checked from its header before any decoding (`limitInputPixels`), EXIF
 * orientation applied, metadata dropped. `WxH` crops to fill both sides; `Wx0` and `0xH` keep the
 * proportions; an image is never enlarged. sharp is loaded at the first thumbnail (node keeps the
 * module); its settings are set at each (a few native calls beside an image's decoding), so that
 * nothing here holds state.
 */
export const sharpThumbnailer: Thumbnailer = {
  async make(image: Buffer, size: ThumbSize, options: { type: string; maxPixels: number }): Promise<Buffer> {
    const sharp = (await import('sharp')).default;
    // One libvips thread per thumbnail: two cores serve requests too.
    sharp.concurrency(1);
    sharp.cache(false);
    const pipeline = sharp(image, { limitInputPixels: options.maxPixels, failOn: 'error', animated: false })
      .rotate()
      .resize({
        width: size.width === 0 ? undefined : size.width,
        height: size.height === 0 ? undefined : size.height,
        fit: size.width !== 0 && size.height !== 0 ? 'cover' : 'inside',
        withoutEnlargement: true,
      });
    if (options.type === 'image/jpeg') return pipeline.jpeg({ quality: 82, mozjpeg: false }).toBuffer();
    if (options.type === 'image/webp') return pipeline.webp({ quality: 80 }).toBuffer();
    return pipeline.png({ compressionLevel: 6 }).toBuffer();
  },
};
