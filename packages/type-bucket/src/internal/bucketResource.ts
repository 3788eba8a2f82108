import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import { SvcError, isSvcError, servedFile } from '@svc/core';
import type { Context, Reply, ResourceFiles, ResourceImplementation, ResourceTypeContext } from '@svc/core';
import type { BucketSettings } from '../bucketType.js';
import { receiveForm } from './formUpload.js';
import { ProviderError } from './providerError.js';
import { createS3Client } from './s3Client.js';
import { createSpoolDir } from './spool.js';
import { FILES_PREFIX, bucketTempDir, createBucketFileStorage } from './bucketFileStorage.js';
import { storeObject } from './storeObject.js';

/** What an upload answers, one entry per stored file. */
interface StoredFile {
  fileName: string;
  url: string;
  size: number;
  contentType: string;
}

/** One body to store: where its bytes come from, and how many there are. */
interface UploadSource {
  key: string;
  fileName: string;
  size: number;
  body: () => Readable;
}

/** Builds the request handler of one Bucket resource. */
export function createBucketResource(context: ResourceTypeContext<BucketSettings>): ResourceImplementation {
  const client: S3Client = createS3Client(context.settings, context.logger);
  const bucket = context.settings.bucket;
  const { scripts, logger } = context;

  const runEvent = async (event: string, ctx: Context, locals: Record<string, unknown>): Promise<void> => {
    if (scripts.has(event)) await scripts.run(event, ctx, { object: {}, locals });
  };
  /** Sends one command; a provider error stays as it is, a transport failure becomes a 503. */
  const send = async <T>(call: (s3: S3Client) => Promise<T>): Promise<T> => {
    try {
      return await call(client);
    } catch (err) {
      if (err instanceof ProviderError || isSvcError(err)) throw err;
      throw new SvcError('UNAVAILABLE', `storage provider unreachable: ${(err as Error).message}`, { cause: err });
    }
  };
  /** A body that broke off before its end (the client went away): nothing is stored, a line says so. */
  const notStored = (ctx: Context, what: string, err: unknown): unknown => {
    if (ctx.req?.complete === true) return err;
    logger.info(`bucket ${bucket}: nothing stored for ${what}: the upload broke off before its end`);
    return isSvcError(err) ? err : new SvcError('BAD_REQUEST', 'the upload broke off before its end', { cause: err });
  };
  const urlOf = (key: string): string => `${context.path}/${key.split('/').map(encodeURIComponent).join('/')}`;

  /** Stores a body under the type its name gets when served: what the uploader declared is not kept. */
  async function put(source: UploadSource): Promise<StoredFile> {
    const { contentType } = servedFile(source.key);
    await storeObject(send, { bucket, key: source.key, contentType, size: source.size, body: source.body() }, logger);
    return { fileName: source.key, url: urlOf(source.key), size: source.size, contentType };
  }

  /** POST|PUT /<bucket>/<file>: the body is the file. */
  async function uploadRaw(ctx: Context & { req: NonNullable<Context['req']> }): Promise<Reply> {
    const key = keyOf(ctx);
    const declared = Number(headerOf(ctx, 'content-length'));
    if (Number.isSafeInteger(declared) && declared >= 0) {
      // The size is known before a byte is read: the script may refuse without receiving the file.
      await runEvent('upload.js', ctx, { url: ctx.url, fileSize: declared, fileName: key });
      const req = ctx.req;
      return { status: 200, body: await put({ key, fileName: key, size: declared, body: () => req }) };
    }
    const spool = await createSpoolDir();
    try {
      const file = await spool.write(ctx.req).catch((err: unknown) => {
        throw notStored(ctx, key, err);
      });
      await runEvent('upload.js', ctx, { url: ctx.url, fileSize: file.size, fileName: key });
      return { status: 200, body: await put({ key, fileName: key, size: file.size, body: () => createReadStream(file.path) }) };
    } finally {
      await spool.remove();
    }
  }

  /** POST /<bucket>[/<folder>] with multipart/form-data: every file of the form. */
  async function uploadForm(ctx: Context & { req: NonNullable<Context['req']> }): Promise<Reply> {
    const prefix = ctx.parts.join('/');
    const spool = await createSpoolDir();
    try {
      const files = await receiveForm(ctx.req, spool).catch((err: unknown) => {
        throw notStored(ctx, `the form to /${prefix}`, err);
      });
      if (files.length === 0) throw new SvcError('BAD_REQUEST', 'the form holds no file');
      // Every file passes On Upload before any is stored: a cancel refuses the whole form.
      for (const file of files) await runEvent('upload.js', ctx, { url: ctx.url, fileSize: file.size, fileName: file.fileName });
      const stored: StoredFile[] = [];
      for (const file of files) {
        const key = checkedKey(prefix === '' ? file.fileName : `${prefix}/${file.fileName}`);
        stored.push(await put({ key, fileName: file.fileName, size: file.size, body: () => createReadStream(file.path) }));
      }
      const referer = headerOf(ctx, 'referer');
      if (referer !== undefined) return { status: 302, headers: { location: referer } };
      return { status: 200, body: stored };
    } finally {
      await spool.remove();
    }
  }

  async function upload(ctx: Context): Promise<Reply> {
    const req = ctx.req;
    if (req === undefined) throw new SvcError('BAD_REQUEST', 'files are uploaded over HTTP, not through the client library');
    const httpCtx = { ...ctx, req };
    try {
      const multipart = (headerOf(ctx, 'content-type') ?? '').toLowerCase().startsWith('multipart/form-data');
      return await (multipart ? uploadForm(httpCtx) : uploadRaw(httpCtx));
    } catch (err) {
      // Refused before the body was read: close the connection instead of reading the rest.
      if (!req.complete && ctx.res && !ctx.res.headersSent) ctx.res.setHeader('connection', 'close');
      throw err;
    }
  }

  /** GET (and HEAD) /<bucket>/<file>: streams the object, typed by its name's extension. */
  async function download(ctx: Context): Promise<Reply | undefined> {
    const res = ctx.res;
    if (res === undefined) throw new SvcError('BAD_REQUEST', 'files are downloaded over HTTP, not from scripts');
    const key = keyOf(ctx);
    await runEvent('get.js', ctx, { url: ctx.url });
    const conditions = {
      Bucket: bucket,
      Key: key,
      ...optional('Range', headerOf(ctx, 'range')),
      ...optional('IfNoneMatch', headerOf(ctx, 'if-none-match')),
      ...optional('IfModifiedSince', dateOf(headerOf(ctx, 'if-modified-since'))),
    };
    if (ctx.originalMethod === 'HEAD') {
      const head = await send((s3) => s3.send(new HeadObjectCommand(conditions)));
      writeHead(res, key, 200, head);
      res.end();
      return undefined;
    }
    const object = await send((s3) => s3.send(new GetObjectCommand(conditions)));
    writeHead(res, key, object.ContentRange ? 206 : 200, object);
    try {
      await pipeline(object.Body as Readable, res);
    } catch (err) {
      // The client went away or the provider broke off: the status is already sent.
      logger.warn(`${context.name}: download of ${key} ended early`, { error: err });
    }
    return undefined;
  }

  async function remove(ctx: Context): Promise<Reply> {
    const key = keyOf(ctx);
    await runEvent('delete.js', ctx, { url: ctx.url });
    await send((s3) => s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })));
    return { status: 200 };
  }

  /** For svc itself (app.json backups.bucket): no event script runs, keys are checked as uploads' are. */
  const files: ResourceFiles = {
    async put(key, file) {
      const { size } = await stat(file);
      await put({ key: checkedKey(key), fileName: key, size, body: () => createReadStream(file) });
    },
    async list(prefix) {
      const keys: string[] = [];
      let token: string | undefined;
      // Bounded: 1,000 pages of 1,000 keys.
      for (let page = 0; page < 1000; page++) {
        const answer = await send((s3) => s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) })));
        for (const o of answer.Contents ?? []) if (o.Key !== undefined) keys.push(o.Key);
        if (!answer.IsTruncated || !answer.NextContinuationToken) break;
        token = answer.NextContinuationToken;
      }
      return keys;
    },
    async remove(key) {
      await send((s3) => s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: checkedKey(key) })));
    },
  };

  return {
    rawBody: true,
    files,
    fileStorage: createBucketFileStorage(bucket, bucketTempDir({ appDir: context.appDir, path: context.path, endpoint: context.settings.endpoint }, bucket), send, logger),
    async handle(ctx) {
      try {
        switch (ctx.method) {
          case 'GET':
            return await download(ctx);
          case 'POST':
          case 'PUT':
            return await upload(ctx);
          case 'DELETE':
            return await remove(ctx);
          default:
            throw new SvcError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported by a bucket`, { headers: { allow: 'GET, HEAD, POST, PUT, DELETE' } });
        }
      } catch (err) {
        if (err instanceof ProviderError) return err.toReply();
        throw err;
      }
    },
    async close() {
      client.destroy();
    },
  };
}

function keyOf(ctx: Context): string {
  const key = ctx.parts.join('/');
  if (key === '') throw new SvcError('BAD_REQUEST', 'a file name is needed in the path: /<bucket>/<file>');
  return checkedKey(key);
}

/** S3 refuses longer keys. */
const MAX_KEY_BYTES = 1024;

/**
 * Refuses keys that name something else than they seem: '.' and '..' segments (a browser
 * resolves them in the file's URL, and a provider on a file system might too) and control
 * characters (NUL, CR, LF, ...), which no file name needs.
 */
function checkedKey(key: string): string {
  // eslint-disable-next-line no-control-regex
  const bad = /[\x00-\x1f\x7f]/.test(key) || key.split('/').some((segment) => segment === '' || segment === '.' || segment === '..');
  if (bad) throw new SvcError('BAD_REQUEST', 'the file name is not allowed: no empty, "." or ".." parts and no control characters');
  // File properties' files (app.json files.bucket) are read and written by their collections, under their rules.
  if (key.startsWith(FILES_PREFIX)) throw new SvcError('NOT_FOUND', `${FILES_PREFIX} is kept for file properties`);
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new SvcError('BAD_REQUEST', `the file name is longer than ${MAX_KEY_BYTES} bytes`);
  return key;
}

function headerOf(ctx: Context, name: string): string | undefined {
  const value = ctx.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function dateOf(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function optional<K extends string, V>(name: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [name]: value } as Record<K, V>);
}

interface ObjectHeaders {
  ContentLength?: number | undefined;
  ContentRange?: string | undefined;
  ETag?: string | undefined;
  LastModified?: Date | undefined;
  CacheControl?: string | undefined;
  ContentEncoding?: string | undefined;
}

/**
 * The type and disposition come from the key's extension (servedFile), never from what is stored
 * with the object: its uploader chose that, and an 'image' stored as text/html must not run.
 */
function writeHead(res: ServerResponse, key: string, status: number, object: ObjectHeaders): void {
  res.statusCode = status;
  for (const [name, value] of Object.entries(servedFile(key).headers)) res.setHeader(name, value);
  res.setHeader('accept-ranges', 'bytes');
  if (object.ContentLength !== undefined) res.setHeader('content-length', object.ContentLength);
  if (object.ContentRange) res.setHeader('content-range', object.ContentRange);
  if (object.ETag) res.setHeader('etag', object.ETag);
  if (object.LastModified) res.setHeader('last-modified', object.LastModified.toUTCString());
  if (object.CacheControl) res.setHeader('cache-control', object.CacheControl);
  if (object.ContentEncoding) res.setHeader('content-encoding', object.ContentEncoding);
}
