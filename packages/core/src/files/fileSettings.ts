import type { PropertyDef } from '../types.js';

/** A thumbnail size a property declares: `"100x100"` (cropped to fill) or `"400x0"` (one side, the other in proportion). */
export interface ThumbSize {
  readonly width: number;
  readonly height: number;
}

/** The settings of one `file` property, checked once when the collection is built. */
export interface FileSettings {
  readonly name: string;
  readonly many: boolean;
  /** Bytes one file may hold. */
  readonly maxSize: number;
  /** Files the property may hold (1 when not `many`). */
  readonly maxFiles: number;
  /** Sniffed types allowed (`image/png`, `image/*`); undefined: any. */
  readonly types: readonly string[] | undefined;
  /** Declared thumbnail sizes by their text (`"100x100"`); any other size is refused. */
  readonly thumbs: ReadonlyMap<string, ThumbSize>;
}

/** 10 MB: a photo from a phone fits; a property says more with `maxSize`. */
export const DEFAULT_MAX_SIZE = 10 * 1024 * 1024;
/** Files of a `many` property without `maxFiles`. */
export const DEFAULT_MAX_FILES = 20;
/** The most files one property may declare (a list answered whole with its object). */
export const MAX_FILES_CAP = 1000;
/** The largest side of a declared thumbnail. */
export const MAX_THUMB_SIDE = 4096;
/** At most this many sizes per property: each is made once per image and kept. */
const MAX_THUMB_SIZES = 16;

const THUMB = /^(\d{1,4})x(\d{1,4})$/;
const TYPE = /^[a-z]+\/(?:\*|[a-z0-9][a-z0-9.+-]*)$/;

/**
 * Reads a `file` property's settings, throwing an Error that names the resource and the
 * property when one is wrong (start-up stops, as for any other bad property).
 */
export function fileSettingsOf(resource: string, name: string, def: PropertyDef): FileSettings {
  const where = `resource ${resource}: property ${name}`;
  const many = def.many === true;
  const maxSize = def.maxSize ?? DEFAULT_MAX_SIZE;
  if (!Number.isSafeInteger(maxSize) || maxSize < 1) throw new Error(`${where}: maxSize must be a whole number of bytes (at least 1)`);
  const maxFiles = many ? (def.maxFiles ?? DEFAULT_MAX_FILES) : 1;
  if (!Number.isSafeInteger(maxFiles) || maxFiles < 1 || maxFiles > MAX_FILES_CAP) throw new Error(`${where}: maxFiles must be a whole number from 1 to ${MAX_FILES_CAP}`);
  if (!many && def.maxFiles !== undefined && def.maxFiles !== 1) throw new Error(`${where}: maxFiles needs "many": true`);
  let types: string[] | undefined;
  if (def.types !== undefined) {
    if (!Array.isArray(def.types) || def.types.length === 0 || !def.types.every((t) => typeof t === 'string' && TYPE.test(t))) {
      throw new Error(`${where}: types must be a non-empty list of media types such as "image/png" or "image/*"`);
    }
    types = [...def.types];
  }
  const thumbs = new Map<string, ThumbSize>();
  if (def.thumbs !== undefined) {
    if (!Array.isArray(def.thumbs) || def.thumbs.length > MAX_THUMB_SIZES) throw new Error(`${where}: thumbs must be a list of at most ${MAX_THUMB_SIZES} sizes such as "100x100" or "400x0"`);
    for (const text of def.thumbs) {
      const match = typeof text === 'string' ? THUMB.exec(text) : null;
      const width = Number(match?.[1]);
      const height = Number(match?.[2]);
      if (match === null || (width === 0 && height === 0) || width > MAX_THUMB_SIDE || height > MAX_THUMB_SIDE) {
        throw new Error(`${where}: thumbs: ${JSON.stringify(text)} is not a size such as "100x100" or "400x0" (sides up to ${MAX_THUMB_SIDE}, not both 0)`);
      }
      thumbs.set(text as string, { width, height });
    }
  }
  return { name, many, maxSize, maxFiles, types, thumbs };
}

/** Markup that can hold scripts: a wildcard (`image/*`) never takes it; a property names it to allow it. */
const ONLY_BY_NAME = new Set(['image/svg+xml']);

/** Whether a sniffed type is one the property allows. */
export function typeAllowed(settings: FileSettings, type: string): boolean {
  if (settings.types === undefined) return true;
  const slash = type.indexOf('/');
  return settings.types.some((allowed) => allowed === type || (allowed.endsWith('/*') && !ONLY_BY_NAME.has(type) && allowed.slice(0, -1) === type.slice(0, slash + 1)));
}
