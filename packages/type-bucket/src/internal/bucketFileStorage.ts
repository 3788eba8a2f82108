import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { FileStorage, Logger, OpenedFile, StoredEntry } from '@svc/core';
import { ProviderError } from './providerError.js';
import type { S3Send } from './storeObject.js';
import { storeObject } from './storeObject.js';

/**
 * Where file properties' keys live in a bucket. The Bucket resource's own paths refuse it
 * (bucketResource.ts): these files are served only by their collections, under their rules.
 */
export const FILES_PREFIX = 'svc-files/';

/** At most this many listing pages for one object's files (1,000 keys each). */
const MAX_PAGES = 100;
/** At most this many listing pages (1,000 keys each) for one batch of the sweep's object folders. */
const MAX_FOLDER_PAGES = 1000;

/**
 * The local folder where files for `bucket` are received before they are stored, one per app
 * and Bucket resource: `svc-files-<bucket>-<hash of the app's folder, the resource's path, the
 * endpoint and the bucket>`. The processes of one app share it (what a killed one left, the
 * sweep of the next removes); two apps never do, even with the same bucket name, so that the
 * sweep of one (with `orphanGraceMinutes: 0`) cannot remove the other's uploads in progress.
 */
export function bucketTempDir(owner: { appDir: string; path: string; endpoint?: string | undefined }, bucket: string): string {
  const hash = createHash('sha256').update(JSON.stringify([owner.appDir, owner.path, owner.endpoint ?? '', bucket])).digest('hex').slice(0, 16);
  return join(tmpdir(), `svc-files-${bucket.replace(/[^A-Za-z0-9.-]/g, '_').slice(0, 63)}-${hash}`);
}

/**
 * File properties' files in a Bucket resource's bucket (app.json `files.bucket`), under
 * {@link FILES_PREFIX}. A file is received on the local disk first, in `tempDir` (its size and
 * type known, its limits checked), then stored with one PutObject or a multipart upload: it
 * appears whole.
 */
export function createBucketFileStorage(bucket: string, tempDir: string, send: S3Send, logger: Logger): FileStorage {
  const keyOf = (key: string): string => `${FILES_PREFIX}${key}`;
  const missing = (err: unknown): boolean => err instanceof ProviderError && err.status === 404;
  return {
    description: `bucket ${bucket}`,
    tempDir,
    async put(key, file, type) {
      try {
        const { size } = await stat(file);
        await storeObject(send, { bucket, key: keyOf(key), contentType: type, size, body: createReadStream(file) }, logger);
      } finally {
        await unlink(file).catch(() => undefined);
      }
    },
    async open(key, range): Promise<OpenedFile | undefined> {
      try {
        const answer = await send((s3) => s3.send(new GetObjectCommand({ Bucket: bucket, Key: keyOf(key), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) })));
        const total = answer.ContentRange !== undefined ? Number(answer.ContentRange.split('/')[1]) : answer.ContentLength;
        return { size: total ?? 0, body: answer.Body as Readable };
      } catch (err) {
        if (missing(err)) return undefined;
        throw err;
      }
    },
    async size(key) {
      try {
        return (await send((s3) => s3.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(key) })))).ContentLength;
      } catch (err) {
        if (missing(err) || (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return undefined;
        throw err;
      }
    },
    async remove(keys) {
      for (const key of keys) await send((s3) => s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(key) })));
    },
    async folders(prefix, after, limit) {
      // From the keys, not from a Delimiter listing's CommonPrefixes: some S3-compatible servers
      // (s3rver) answer none for keys nested deeper than one folder, and the sweep found nothing.
      // A folder's keys are listed in a row, so its name is counted once.
      const full = keyOf(prefix);
      const names: string[] = [];
      let token: string | undefined;
      for (let page = 0; page < MAX_FOLDER_PAGES; page++) {
        // After every key of the folder `after`: its keys are ASCII, below U+FFFF.
        const start = token !== undefined ? { ContinuationToken: token } : after !== undefined ? { StartAfter: `${full}${after}/\uffff` } : {};
        const answer = await send((s3) => s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: full, ...start })));
        for (const o of answer.Contents ?? []) {
          const rest = (o.Key ?? '').slice(full.length);
          const slash = rest.indexOf('/');
          if (slash <= 0 || names[names.length - 1] === rest.slice(0, slash)) continue;
          if (names.length === limit) return names;
          names.push(rest.slice(0, slash));
        }
        if (!answer.IsTruncated || !answer.NextContinuationToken) break;
        token = answer.NextContinuationToken;
      }
      return names;
    },
    async files(prefix) {
      const full = keyOf(prefix);
      const out: StoredEntry[] = [];
      let token: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const answer = await send((s3) => s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: full, ...(token ? { ContinuationToken: token } : {}) })));
        for (const o of answer.Contents ?? []) if (o.Key !== undefined) out.push({ name: o.Key.slice(full.length), size: o.Size ?? 0, modified: o.LastModified?.getTime() ?? 0 });
        if (!answer.IsTruncated || !answer.NextContinuationToken) break;
        token = answer.NextContinuationToken;
      }
      return out;
    },
  };
}
