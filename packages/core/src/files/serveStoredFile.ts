import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { SvcError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { StoredFile } from './CollectionFiles.js';
import type { FileStorage, OpenedFile, WholeFile } from './FileStorage.js';
import type { ThumbSize } from './fileSettings.js';
import { rangeOf, servedHeaders } from './servedHeaders.js';
import { openStored, thumbTypeOf } from './thumbnails.js';
import type { Thumbnails } from './thumbnails.js';

/** One stored file to answer with, already allowed to the caller. */
export interface ServedStoredFile {
  req: IncomingMessage | undefined;
  res: ServerResponse;
  /** HEAD: headers only. */
  head: boolean;
  storage: FileStorage;
  key: string;
  file: StoredFile;
  /** A declared thumbnail size asked for. */
  thumb: { text: string; size: ThumbSize; thumbnails: Thumbnails | undefined } | undefined;
  logger: Logger | undefined;
}

/**
 * Streams a stored file (or its kept thumbnail) with the safe headers of its sniffed type
 * (servedHeaders), one byte range when asked, and `304` when the client has it: the ETag is
 * the file's id (and size), which no other content ever has. `Cache-Control: private, no-cache`:
 * a cache may keep it but asks again each time, so access is checked on every request.
 */
export async function serveStoredFile(options: ServedStoredFile): Promise<void> {
  const { req, res, file, storage } = options;
  let key = options.key;
  let type = file.type;
  let tag = file.id;
  if (options.thumb !== undefined) {
    const thumbType = thumbTypeOf(file.type);
    if (thumbType === undefined) throw new SvcError('BAD_REQUEST', `no thumbnails are made of ${file.type} files`);
    if (options.thumb.thumbnails === undefined) throw new SvcError('UNAVAILABLE', 'thumbnails are not available on this server');
    key = `${options.key}.${options.thumb.text}`;
    type = thumbType;
    tag = `${file.id}.${options.thumb.text}`;
  }
  const etag = `"${tag}"`;
  const common = { ...servedHeaders(type, file.name), etag, 'cache-control': 'private, no-cache', 'accept-ranges': 'bytes' };
  if (req?.headers['if-none-match'] === etag) {
    res.writeHead(304, { etag, 'cache-control': common['cache-control'] });
    res.end();
    return;
  }
  // A range is read against the size, asked first; a whole file is opened at once (read whole
  // when small: FileStorage.openWhole); thumbnails are made when missing.
  const ranged = options.thumb === undefined && req?.headers.range !== undefined;
  const size = ranged ? await storage.size(key) : undefined;
  const asked = size === undefined ? undefined : rangeOf(req?.headers.range, size);
  if (asked === 'unsatisfiable') {
    res.writeHead(416, { 'content-range': `bytes */${size as number}`, ...common });
    res.end();
    return;
  }
  let opened: WholeFile | OpenedFile | undefined;
  if (options.thumb !== undefined) {
    const t = options.thumb;
    opened = await (t.thumbnails as Thumbnails).open(storage, options.key, key, t.size, type);
  } else if (!ranged || size !== undefined) {
    opened = await openStored(storage, key, asked);
  }
  if (opened === undefined) throw new SvcError('NOT_FOUND', 'not found');
  const headers: Record<string, string | number> = { ...common };
  if (asked !== undefined) {
    headers['content-range'] = `bytes ${asked.start}-${asked.end}/${opened.size}`;
    headers['content-length'] = asked.end - asked.start + 1;
  } else {
    headers['content-length'] = opened.size;
  }
  res.writeHead(asked !== undefined ? 206 : 200, headers);
  if ('bytes' in opened) {
    // One write of headers and bytes: no stream to set up and tear down.
    res.end(options.head ? undefined : opened.bytes);
    return;
  }
  if (options.head) {
    opened.body.destroy();
    res.end();
    return;
  }
  try {
    await pipeline(opened.body, res);
  } catch (err) {
    // The client went away, or the storage broke off: the status is already sent.
    options.logger?.info(`file ${key}: the download ended early (${(err as Error).message})`);
  }
}
