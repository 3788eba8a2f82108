import { SvcError } from '../errors.js';
import { randomHex } from '../ids.js';

/** One segment of a key: what svc's ids and property names are made of; no '.' or '..'. */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/;
/** A file id: 24 lowercase hex characters (12 random bytes). */
const FILE_ID = /^[0-9a-f]{24}$/;

/** A new file id: unguessable, so that a file's URL names nothing another file could be. */
export function createFileId(): string {
  return randomHex(12);
}

/** Whether a text is a file id (checked before it becomes part of a key). */
export function isFileId(value: unknown): value is string {
  return typeof value === 'string' && FILE_ID.test(value);
}

/** Whether an object id can be a segment of a key: objects with other ids (imported ones) hold no files. */
export function isKeySegment(value: string): boolean {
  return SEGMENT.test(value) && value !== '.' && value !== '..';
}

/**
 * A key as svc makes them, checked once more where it meets a file system or bucket: segments of
 * ids and names only, never '.', '..', an empty segment or anything a path could escape with.
 */
export function checkedKey(key: string): string {
  const segments = key.split('/');
  if (segments.length < 2 || !segments.every((s) => isKeySegment(s))) throw new SvcError('INTERNAL', `not a file key: ${JSON.stringify(key)}`);
  return key;
}

/** Where the files of a collection live ('posts', 'a/b' for /a/b): its path without the leading '/'. */
export function collectionPrefix(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}

/** The key of a file, or of one of its thumbnails. */
export function fileKey(collection: string, objectId: string, property: string, fileId: string, thumb?: string): string {
  if (!isKeySegment(objectId)) throw new SvcError('BAD_REQUEST', 'this object has an id that cannot hold files');
  return `${collection}/${objectId}/${property}/${fileId}${thumb === undefined ? '' : `.${thumb}`}`;
}
