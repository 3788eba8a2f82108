import { Readable } from 'node:stream';
import { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, PutObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import type { CompletedPart, S3Client } from '@aws-sdk/client-s3';
import { SvcError } from '@svc/core';
import type { Logger } from '@svc/core';

/**
 * Bodies up to this size are read whole, then stored with one PutObject; larger ones go as a
 * multipart upload, streamed part by part. Either way the object appears only once every
 * declared byte has arrived: a PutObject is not sent before, a multipart upload is not completed.
 */
export const SINGLE_PUT_MAX = 256 * 1024;
/** Parts are streamed, not held, so their size costs no memory; S3 wants 5 MiB at least. */
const PART_SIZE = 16 * 1024 * 1024;
/** S3's cap on the number of parts of one upload. */
const MAX_PARTS = 10_000;

/** Sends one S3 command; see createBucketResource's `send` (a transport failure becomes a 503). */
export type S3Send = <T>(call: (s3: S3Client) => Promise<T>) => Promise<T>;

/** What to store, and where. */
export interface ObjectToStore {
  bucket: string;
  key: string;
  contentType: string;
  /** The number of bytes the body must have: fewer, more or a broken body stores nothing. */
  size: number;
  body: Readable;
}

/**
 * Stores `object.body` under its key, all of it or nothing. A body that breaks off (the client
 * went away), ends early or runs longer than `size` rejects with a 400 and leaves no object; a
 * multipart upload begun for it is aborted.
 */
export async function storeObject(send: S3Send, object: ObjectToStore, logger: Logger): Promise<void> {
  const reader = new ExactReader(object.body, object.size);
  try {
    await (object.size <= SINGLE_PUT_MAX ? putWhole(send, object, reader) : putInParts(send, object, reader, logger));
  } catch (err) {
    if (reader.error === undefined) throw err;
    // The body's own failure says more than the abort it caused in the part being sent.
    logger.info(`bucket ${object.bucket}: nothing stored for ${object.key}: ${reader.error.message}`);
    throw reader.error;
  }
}

async function putWhole(send: S3Send, { bucket, key, contentType, size }: ObjectToStore, reader: ExactReader): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of reader.take(size)) chunks.push(chunk);
  await reader.end();
  const body = Buffer.concat(chunks);
  await send((s3) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: size, ContentType: contentType })));
}

async function putInParts(send: S3Send, { bucket, key, contentType, size }: ObjectToStore, reader: ExactReader, logger: Logger): Promise<void> {
  const created = await send((s3) => s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: contentType })));
  const uploadId = created.UploadId;
  if (uploadId === undefined) throw new SvcError('BAD_GATEWAY', 'the storage provider started a multipart upload without an upload id');
  // Cuts the part being sent when the body breaks, so that the provider never receives it whole.
  const cut = new AbortController();
  reader.onError = () => cut.abort();
  try {
    const partSize = Math.max(PART_SIZE, Math.ceil(size / MAX_PARTS));
    const parts: CompletedPart[] = [];
    for (let number = 1, offset = 0; offset < size; number++) {
      const length = Math.min(partSize, size - offset);
      const body = Readable.from(reader.take(length), { objectMode: false });
      // The SDK pipes the body without listening for its errors; the reader keeps the error and
      // its onError has already cut the part, which rejects the send below.
      body.on('error', () => {});
      const part = await send((s3) => s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: number, Body: body, ContentLength: length }), { abortSignal: cut.signal }));
      parts.push({ ETag: part.ETag, PartNumber: number });
      offset += length;
    }
    await reader.end();
    await send((s3) => s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } })));
  } catch (err) {
    cut.abort();
    try {
      await send((s3) => s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId })));
    } catch (abortErr) {
      // The parts stay invisible; the bucket's lifecycle rules (or a later abort) reclaim them.
      logger.warn(`bucket ${bucket}: could not abort the multipart upload of ${key}`, { error: abortErr });
    }
    throw err;
  }
}

/**
 * Reads exactly `size` bytes from a stream, in slices of chosen lengths. Any failure (the stream
 * errors or is destroyed, ends early, or holds more) is kept in `error` and reported to `onError`.
 */
class ExactReader {
  error: SvcError | undefined;
  onError: () => void = () => {};
  private readonly source: AsyncIterator<Buffer>;
  private leftover: Buffer | undefined;
  private read = 0;

  constructor(
    body: Readable,
    private readonly size: number,
  ) {
    this.source = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  }

  /** The next `length` bytes. */
  async *take(length: number): AsyncGenerator<Buffer> {
    let left = length;
    while (left > 0) {
      const chunk = this.leftover ?? (await this.next());
      this.leftover = undefined;
      if (chunk.length > left) {
        this.leftover = chunk.subarray(left);
        yield chunk.subarray(0, left);
        return;
      }
      left -= chunk.length;
      yield chunk;
    }
  }

  /** Resolves when the stream ended right after the `size` bytes (and fully: not broken off). */
  async end(): Promise<void> {
    if (this.leftover !== undefined) throw this.fail('the upload is longer than its declared size');
    let more: IteratorResult<Buffer>;
    try {
      more = await this.source.next();
    } catch (err) {
      throw this.fail(`the upload broke off after all of its ${this.size} bytes`, err);
    }
    if (!more.done) throw this.fail('the upload is longer than its declared size');
  }

  private async next(): Promise<Buffer> {
    let result: IteratorResult<Buffer>;
    try {
      result = await this.source.next();
    } catch (err) {
      throw this.fail(`the upload broke off after ${this.read} of its ${this.size} bytes`, err);
    }
    if (result.done) throw this.fail(`the upload ended after ${this.read} of its ${this.size} bytes`);
    this.read += result.value.length;
    return result.value;
  }

  private fail(message: string, cause?: unknown): SvcError {
    this.error ??= new SvcError('BAD_REQUEST', message, { cause });
    this.onError();
    return this.error;
  }
}
