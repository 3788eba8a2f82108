import type { Logger } from '../logger.js';
import type { StoreCollection } from '../store/Store.js';
import type { PropertyDef } from '../types.js';
import { CollectionFiles } from './CollectionFiles.js';
import type { FileStorage } from './FileStorage.js';
import { collectionPrefix } from './fileKeys.js';
import { fileSettingsOf } from './fileSettings.js';
import type { FileSettings } from './fileSettings.js';
import { DEFAULT_SWEEP, OrphanSweeper } from './orphanSweep.js';
import { ReceivedFiles } from './receiveFile.js';
import type { SweepSchedule } from './orphanSweep.js';
import { DEFAULT_MAX_PIXELS, ThumbnailQueues } from './thumbnails.js';
import type { Thumbnails } from './thumbnails.js';
import type { Thumbnailer } from './thumbnails.js';

/** How a Collection keeps the files of its `file` properties (docs/files.md). */
export interface CollectionFilesConfig {
  /** The disk (createDiskFileStorage) or a Bucket's storage; a function when it exists only once resources are built. */
  storage: FileStorage | (() => FileStorage);
  /** Makes thumbnails; without one, a thumbnail asked for answers 503. */
  thumbnailer?: Thumbnailer;
  /** Images of more pixels get no thumbnail (default 40 million). */
  maxPixels?: number;
  /** The orphan sweep's schedule (defaults: DEFAULT_SWEEP). */
  sweep?: Partial<SweepSchedule>;
  /** What a form's fields may hold together (default 1 MB, as a JSON body). */
  fieldBytes?: number;
  /**
   * The files being received and not yet published, which the sweep of the temporary folder
   * leaves: one per server, shared by every collection whose files go to the same storage and
   * kept across reloads (apps/server's startApp makes it). Default: one of this collection's own,
   * which is enough when no other collection receives into the same storage.
   */
  received?: ReceivedFiles;
  /**
   * The thumbnails being made: one per server, shared by its collections and kept across reloads
   * (apps/server's startApp makes it), so that the server makes a few at a time whatever the
   * collection. Default: one of this collection's own.
   */
  thumbnailQueues?: ThumbnailQueues;
}

/** The files part of a Collection: undefined when it has no `file` property. */
export function collectionFilesOf(options: {
  path: string;
  properties: Record<string, PropertyDef>;
  store: StoreCollection;
  config: CollectionFilesConfig | undefined;
  logger: () => Logger | undefined;
}): { files: CollectionFiles; sweeper: OrphanSweeper } | undefined {
  const resource = collectionPrefix(options.path);
  const settings = new Map<string, FileSettings>();
  for (const [name, def] of Object.entries(options.properties)) if (def.type === 'file') settings.set(name, fileSettingsOf(resource, name, def));
  if (settings.size === 0) return undefined;
  const config = options.config;
  if (config === undefined) throw new Error(`resource ${resource}: file properties need a place for their files (CollectionOptions.files)`);
  const received = config.received ?? new ReceivedFiles();
  const storage = typeof config.storage === 'function' ? config.storage : () => config.storage as FileStorage;
  let thumbnails: Thumbnails | undefined;
  if (config.thumbnailer !== undefined) {
    thumbnails = (config.thumbnailQueues ?? new ThumbnailQueues()).of(config.thumbnailer, config.maxPixels ?? DEFAULT_MAX_PIXELS);
  }
  const files = new CollectionFiles({
    path: options.path,
    settings,
    storage,
    thumbnails,
    received,
    fieldBytes: config.fieldBytes ?? 1024 * 1024,
    get logger() {
      return options.logger();
    },
  });
  const schedule = { ...DEFAULT_SWEEP, ...config.sweep };
  const sweeper = new OrphanSweeper(
    () => ({ storage: storage(), prefix: resource, settings, store: options.store }),
    schedule,
    (err) => options.logger()?.warn(`${resource}: the orphan file sweep failed (tried again later): ${(err as Error).message}`),
    (keys) => options.logger()?.info(`${resource}: the orphan file sweep removed ${keys.length} file(s) no object holds`),
    received,
  );
  return { files, sweeper };
}
