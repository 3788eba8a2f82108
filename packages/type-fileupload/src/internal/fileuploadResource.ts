import type { FileHandle } from 'node:fs/promises';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { SvcError, createId, servedFile } from '@svc/core';
import type { Context, Doc, Filter, FindOptions, Reply, ResourceImplementation, ResourceTypeContext } from '@svc/core';
import type { FileuploadSettings } from '../fileuploadType.js';
import { receiveForm } from './receiveForm.js';
import type { ReceivedFile } from './receiveForm.js';
import { badName, openUploadFolder, subdirParts } from './uploadFolder.js';
import type { UploadFolder } from './uploadFolder.js';

/** Fields of a record the server sets: an upload's own fields of these names are replaced. */
const COMPUTED = new Set(['id', '_id', 'filename', 'originalFilename', 'filesize', 'creationDate', 'type', 'uploaderId']);
/** Query keys that steer the upload instead of being stored. */
const NOT_STORED = new Set(['uniqueFilename', '_method', '__proto__', 'constructor', 'prototype']);
/** Comparison operators a listing may use on a record field, with plain values. */
const LIST_OPERATORS = new Set(['$gt', '$gte', '$lt', '$lte', '$ne', '$in', '$nin', '$exists']);
const MAX_LIST = 1000;

type HttpContext = Context & { req: NonNullable<Context['req']> };

/** Builds the request handler of one Fileupload resource. */
export async function createFileuploadResource(context: ResourceTypeContext<FileuploadSettings>): Promise<ResourceImplementation> {
  const { settings, scripts, logger } = context;
  for (const field of ['maxFileSize', 'maxFiles'] as const) {
    const value = settings[field];
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`resource ${context.name}: setting ${field} must be a whole number of at least 1, not ${value}`);
  }
  const folder: UploadFolder = await openUploadFolder(context.name, context.appDir, settings.directory);
  // dpd-fileupload's collection name, so that records kept in MongoDB by Deployd are found as they are.
  const records = context.store.collection(`${context.name.replaceAll('/', '_')}fileupload`);

  /** dpd-fileupload's rule: with `authorization`, nothing without a logged-in user (root passes too). */
  const authorize = (ctx: Context): void => {
    if (settings.authorization && ctx.me === undefined && !ctx.isRoot) throw new SvcError('FORBIDDEN', "You're not authorized to upload / modify files.");
  };

  /** POST|PUT /<r>[?subdir=...&field=...], multipart/form-data: every file of the form, all or none. */
  async function upload(ctx: Context): Promise<Reply> {
    const req = ctx.req;
    if (req === undefined) throw new SvcError('BAD_REQUEST', 'files are uploaded over HTTP, not through the client library');
    if (!headerOf(ctx, 'content-type').toLowerCase().startsWith('multipart/form-data')) {
      throw new SvcError('UNSUPPORTED_MEDIA_TYPE', 'upload files as multipart/form-data');
    }
    const declared = Number(headerOf(ctx, 'content-length') || Number.NaN);
    if (Number.isFinite(declared) && declared > settings.maxFileSize * settings.maxFiles + 1024 * 1024) {
      throw new SvcError('PAYLOAD_TOO_LARGE', `the upload is larger than ${settings.maxFiles} files of ${settings.maxFileSize} bytes`);
    }
    const incoming: string[] = [];
    try {
      return await store({ ...ctx, req }, incoming);
    } catch (err) {
      // Refused before the body was read: close the connection instead of reading the rest.
      if (!req.complete && ctx.res && !ctx.res.headersSent) ctx.res.setHeader('connection', 'close');
      throw err;
    } finally {
      await Promise.all(incoming.map((path) => rm(path, { force: true })));
    }
  }

  async function store(ctx: HttpContext, incoming: string[]): Promise<Reply> {
    const form = await receiveForm(ctx.req, folder, settings, incoming).catch((err: unknown) => {
      logger.info(`${context.name}: nothing stored: ${(err as Error).message}`);
      throw err;
    });
    // dpd-fileupload takes the query's parameters; a form's own fields count as well (the query wins).
    const params: Record<string, unknown> = { ...form.fields, ...ctx.query };
    const subdirValue = params.subdir;
    if (subdirValue !== undefined && typeof subdirValue !== 'string') throw new SvcError('BAD_REQUEST', 'subdir must be a string');
    const subdir = subdirParts(subdirValue ?? '');
    const unique = params.uniqueFilename === undefined ? settings.uniqueFilename : String(params.uniqueFilename) === 'true';
    const properties: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(params)) {
      if (NOT_STORED.has(key) || COMPUTED.has(key) || key.startsWith('$') || key.includes('.')) continue;
      properties[key] = key === 'subdir' ? subdir.join('/') : parsedValue(value);
    }
    if (subdir.length === 0) delete properties.subdir;

    const named = form.files.map((file) => ({ file, ...nameOf(file, unique) }));
    if (named.length === 0) throw new SvcError('BAD_REQUEST', 'the form holds no file');
    // Every file passes On Upload before any is stored: a cancel refuses the whole upload.
    for (const { file, filename, originalFilename } of named) {
      if (scripts.has('upload')) {
        await scripts.run('upload', ctx, {
          object: {},
          locals: { url: ctx.url, filesize: file.size, filename, originalFilename, uniqueFilename: unique, subdir: subdir.length > 0 ? subdir.join('/') : undefined },
        });
      }
    }
    const placed: { name: string; id?: string }[] = [];
    try {
      const stored: Doc[] = [];
      for (const { file, filename, originalFilename } of named) {
        const name = await folder.place(file.path, subdir, filename);
        const entry: { name: string; id?: string } = { name };
        placed.push(entry);
        const record: Doc = {
          ...properties,
          id: createId(),
          filename: name,
          ...(unique ? { originalFilename } : {}),
          filesize: file.size,
          creationDate: Date.now(),
          type: servedFile(name).contentType,
          ...(settings.authorization && ctx.me !== undefined ? { uploaderId: ctx.me.id } : {}),
        };
        entry.id = record.id;
        stored.push(await records.insert(record));
      }
      return { status: 200, body: stored };
    } catch (err) {
      // All or nothing: what this upload placed or recorded goes again.
      for (const entry of placed) {
        await folder.remove(subdir, entry.name).catch(() => {});
        if (entry.id !== undefined) await records.remove({ id: entry.id }).catch(() => {});
      }
      throw err;
    }
  }

  /** GET /<r> lists, GET /<r>/<id> answers a record, GET /<r>/[<subdir>/]<file> serves the file. */
  async function get(ctx: Context): Promise<Reply | undefined> {
    if (ctx.parts.length === 0) {
      const { filter, options } = listQuery(ctx.query);
      const data = await records.find(filter, options);
      if (!scripts.has('get')) return { status: 200, body: data };
      const outcome = await scripts.run('get', ctx, { object: {}, locals: { url: ctx.url, data } });
      return { status: 200, body: outcome.resultSet ? (outcome.result as Doc[]) : data };
    }
    if (ctx.parts.length === 1) {
      const record = await records.findOne({ id: ctx.parts[0] });
      if (record !== null) {
        if (!scripts.has('get')) return { status: 200, body: record };
        const outcome = await scripts.run('get', ctx, { object: record, locals: { url: ctx.url, data: record } });
        return { status: 200, body: outcome.resultSet ? outcome.result : withoutHidden(outcome.object, outcome.hidden) };
      }
    }
    return serveFile(ctx);
  }

  async function serveFile(ctx: Context): Promise<Reply | undefined> {
    const res = ctx.res;
    if (res === undefined) throw new SvcError('BAD_REQUEST', 'files are downloaded over HTTP, not from scripts');
    const name = ctx.parts[ctx.parts.length - 1] as string;
    let subdir: string[];
    try {
      subdir = subdirParts(ctx.parts.slice(0, -1).join('/'));
    } catch {
      throw notFound(ctx);
    }
    const handle: FileHandle | undefined = badName(name) === undefined ? await folder.open(subdir, name) : undefined;
    if (handle === undefined) throw notFound(ctx);
    try {
      const info = await handle.stat();
      res.statusCode = 200;
      // The type and disposition come from the name: html, svg, xml, js are downloads, never pages.
      for (const [header, value] of Object.entries(servedFile(name).headers)) res.setHeader(header, value);
      res.setHeader('content-length', info.size);
      res.setHeader('last-modified', info.mtime.toUTCString());
      if (ctx.originalMethod === 'HEAD') {
        res.end();
        return undefined;
      }
      try {
        await pipeline(handle.createReadStream({ autoClose: false }), res);
      } catch (err) {
        // The client went away: the status is already sent.
        logger.warn(`${context.name}: download of ${[...subdir, name].join('/')} ended early`, { error: err });
      }
      return undefined;
    } finally {
      await handle.close();
    }
  }

  /** DELETE /<r>/<id>: the record and its file. With `authorization`, only the uploader's own. */
  async function remove(ctx: Context): Promise<Reply> {
    const id = ctx.parts[0];
    if (id === undefined || ctx.parts.length > 1) throw new SvcError('BAD_REQUEST', 'delete a file by its id: DELETE /<resource>/<id>');
    if (scripts.has('delete')) await scripts.run('delete', ctx, { object: {}, locals: { url: ctx.url } });
    const filter: Filter = settings.authorization && !ctx.isRoot ? { id, uploaderId: ctx.me?.id } : { id };
    const record = await records.findOne(filter);
    if (record === null) throw new SvcError('NOT_FOUND', `no file with id ${id}`);
    await records.remove({ id });
    const filename = String(record.filename);
    // A record whose subdir is no folder of the upload folder names no file to remove.
    const subdir = safeSubdir(record.subdir);
    if (subdir !== undefined) await folder.remove(subdir, filename);
    // dpd-fileupload's answer, word for word: pages compare it.
    return { status: 200, body: { statusCode: 200, message: `File ${filename} successfuly deleted` } };
  }

  return {
    rawBody: true,
    async handle(ctx) {
      authorize(ctx);
      switch (ctx.method) {
        case 'GET':
          return get(ctx);
        case 'POST':
        case 'PUT':
          return upload(ctx);
        case 'DELETE':
          return remove(ctx);
        default:
          throw new SvcError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported by a file upload resource`, { headers: { allow: 'GET, HEAD, POST, PUT, DELETE' } });
      }
    },
  };
}

/** The name a received file is stored under; refuses names that are no plain file name. */
function nameOf(file: ReceivedFile, unique: boolean): { filename: string; originalFilename: string } {
  const bad = badName(file.fileName);
  if (bad !== undefined) throw new SvcError('BAD_REQUEST', `file name ${JSON.stringify(file.fileName.slice(0, 100))} is not allowed: ${bad}`);
  if (!unique) return { filename: file.fileName, originalFilename: file.fileName };
  const dot = file.fileName.lastIndexOf('.');
  const ext = dot > 0 ? file.fileName.slice(dot + 1) : '';
  // 32 random hex characters, as long as dpd-fileupload's md5, but not guessable from the time.
  const random = createId() + createId();
  const filename = ext === '' ? random : `${random}.${ext}`;
  if (badName(filename) !== undefined) throw new SvcError('BAD_REQUEST', `the extension of ${JSON.stringify(file.fileName.slice(0, 100))} is too long for a unique name`);
  return { filename, originalFilename: file.fileName };
}

/** dpd-fileupload stores each parameter parsed as JSON when it is JSON ('3' is 3, 'true' is true). */
function parsedValue(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/**
 * A listing's query: equality on record fields (a '3' also matches the number 3, as the value
 * stored from it), simple comparisons, and `$sort`, `$limit`, `$skip`, `$fields`.
 */
function listQuery(query: Record<string, unknown>): { filter: Filter; options: FindOptions } {
  const filter: Filter = {};
  const options: FindOptions = { limit: MAX_LIST };
  for (const [key, value] of Object.entries(query)) {
    if (key === '$sort' || key === '$orderby') options.sort = sortOf(value);
    else if (key === '$limit') options.limit = Math.min(countOf(key, value), MAX_LIST);
    else if (key === '$skip') options.skip = countOf(key, value);
    else if (key === '$fields') options.fields = fieldsOf(value);
    else if (key.startsWith('$') || NOT_STORED.has(key)) continue;
    else filter[key] = conditionOf(key, value);
  }
  return { filter, options };
}

function conditionOf(key: string, value: unknown): unknown {
  if (isScalar(value)) return typeof value === 'string' && parsedValue(value) !== value ? { $in: [value, parsedValue(value)] } : value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const condition: Record<string, unknown> = {};
    for (const [op, operand] of Object.entries(value)) {
      const plain = isScalar(operand) || (Array.isArray(operand) && operand.every(isScalar));
      if (!LIST_OPERATORS.has(op) || !plain) throw new SvcError('INVALID_QUERY', `${key}: only ${[...LIST_OPERATORS].join(' ')} with plain values are accepted`);
      condition[op] = operand;
    }
    return condition;
  }
  throw new SvcError('INVALID_QUERY', `${key}: not a value to filter on`);
}

function isScalar(value: unknown): value is string | number | boolean | null {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

function countOf(key: string, value: unknown): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new SvcError('INVALID_QUERY', `${key} must be a whole number`);
  return n;
}

function sortOf(value: unknown): Record<string, 1 | -1> {
  const spec = typeof value === 'string' ? parsedValue(value) : value;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new SvcError('INVALID_QUERY', '$sort must be an object: {"field": 1 or -1}');
  const out: Record<string, 1 | -1> = {};
  for (const [field, dir] of Object.entries(spec)) out[field] = Number(dir) < 0 ? -1 : 1;
  return out;
}

function fieldsOf(value: unknown): Record<string, 0 | 1> {
  const spec = typeof value === 'string' ? parsedValue(value) : value;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new SvcError('INVALID_QUERY', '$fields must be an object: {"field": 1 or 0}');
  const out: Record<string, 0 | 1> = {};
  for (const [field, on] of Object.entries(spec)) out[field] = Number(on) ? 1 : 0;
  return out;
}

function safeSubdir(value: unknown): string[] | undefined {
  try {
    return subdirParts(typeof value === 'string' ? value : '');
  } catch {
    return undefined;
  }
}

function withoutHidden(object: Record<string, unknown>, hidden: readonly string[]): Record<string, unknown> {
  const out = { ...object };
  for (const key of hidden) delete out[key];
  return out;
}

function notFound(ctx: Context): SvcError {
  return new SvcError('NOT_FOUND', `no file at ${ctx.url}`);
}

function headerOf(ctx: Context, name: string): string {
  const value = ctx.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}
