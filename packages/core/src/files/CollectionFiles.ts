import type { IncomingMessage } from 'node:http';
import { SvcError } from '../errors.js';
import { createId } from '../ids.js';
import type { Logger } from '../logger.js';
import { isPlainObject } from '../query/parseQueryString.js';
import type { Doc } from '../store/Store.js';
import type { Context, Reply } from '../types.js';
import type { FileStorage } from './FileStorage.js';
import type { FileSettings } from './fileSettings.js';
import { collectionPrefix, createFileId, fileKey, isFileId, isKeySegment } from './fileKeys.js';
import type { ReceivedFile, ReceivedFiles } from './receiveFile.js';
import { receiveForm } from './receiveForm.js';
import { serveStoredFile } from './serveStoredFile.js';
import type { Thumbnails } from './thumbnails.js';
import { crashPoint } from '../crashPoint.js';

/** What a file property holds for each file, stored and answered as it is. */
export interface StoredFile {
  /** Unguessable, never reused: the file's key and URL are made of it. */
  id: string;
  /** The name its uploader gave (made safe); never part of a path. */
  name: string;
  size: number;
  /** Sniffed from the bytes when it was stored. */
  type: string;
  /** Where it is served (under the object's and the property's read rules): `/<c>/<id>/<property>/<file id>`. */
  url: string;
}

/** What a Collection lends its files: the rest of its request path, and its one read path. */
export interface FilesHost {
  /** Collection.handle after the body is in hand: On BeforeRequest, the write or read, the net on the answer. */
  handleRequest(ctx: Context): Promise<Reply>;
  /** What GET /<c>/<id> answers ctx's caller (read rule, On Get, property rules): the stored object and that answer; null where it answers 404. */
  readOneAs(ctx: Context, id: string): Promise<{ stored: Doc; shown: Record<string, unknown> } | null>;
}

/** Options of {@link CollectionFiles}. */
export interface CollectionFilesOptions {
  /** The collection's path ('/posts'). */
  path: string;
  settings: ReadonlyMap<string, FileSettings>;
  /** Where files are kept; asked at each use (a Bucket resource's storage exists once resources are built). */
  storage: () => FileStorage;
  thumbnails?: Thumbnails | undefined;
  /** The server's received files not yet published (the sweep of the temporary folder leaves them). */
  received: ReceivedFiles;
  /** The bytes a form's fields may hold together (the app's body limit). */
  fieldBytes: number;
  logger?: Logger | undefined;
}

/** A file received during a request, published at its key, not yet part of a committed object. */
interface FreshFile {
  property: string;
  key: string;
  file: StoredFile;
}

/** What a request does to one property beyond its body: add the received files, or remove. */
type FileOp = { kind: 'add'; ids: string[]; replace: boolean } | { kind: 'remove'; fileId: string | undefined };

/** The files of one request under way. */
interface RequestFiles {
  fresh: Map<string, FreshFile>;
  ops: Map<string, FileOp>;
  /** A create's object id, given before its files are stored (their keys hold it). */
  objectId: string | undefined;
  committed: Set<string>;
}

/** A request's route among a collection's file paths. */
type FileRoute = { kind: 'form' } | { kind: 'property'; id: string; property: string; settings: FileSettings; fileId: string | undefined };

/**
 * The `file` properties of one Collection (docs/files.md): receiving files in a create's or an
 * update's multipart body or at `/<c>/<id>/<property>`, serving them through the collection's one
 * read path, and keeping the storage in step with the objects: a new file is stored before its
 * object is written, an old one removed after, all of an object's files when it is deleted
 * (what a crash leaves between two steps, the orphan sweep removes).
 */
export class CollectionFiles {
  readonly settings: ReadonlyMap<string, FileSettings>;
  private readonly prefix: string;
  private readonly requests = new Map<Context, RequestFiles>();
  /** File writes to one object, one at a time in this process (parallel replacements lose no file). */
  private readonly locks = new Map<string, Promise<void>>();

  constructor(private readonly options: CollectionFilesOptions) {
    this.settings = options.settings;
    this.prefix = collectionPrefix(options.path);
  }

  get storage(): FileStorage {
    return this.options.storage();
  }

  /** Whether a request is one for the files (its body is then left unread by the server: {@link streamsBody}). */
  owns(ctx: Context): boolean {
    return this.routeOf(ctx.method, ctx.parts, ctx.headers['content-type']) !== undefined;
  }

  /** Whether the server must leave a request's body for this collection unread (a form or a file). */
  streamsBody(req: IncomingMessage, parts: readonly string[]): boolean {
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    return this.routeOf(method, parts, req.headers['content-type']) !== undefined;
  }

  private routeOf(method: string, parts: readonly string[], contentType: string | undefined): FileRoute | undefined {
    if (parts.length >= 2) {
      const property = parts[1] as string;
      const settings = this.settings.get(property);
      if (settings === undefined || parts.length > 3) return undefined;
      return { kind: 'property', id: parts[0] as string, property, settings, fileId: parts[2] };
    }
    if ((method === 'POST' || method === 'PUT') && contentType !== undefined && /^multipart\/form-data\b/i.test(contentType)) return { kind: 'form' };
    return undefined;
  }

  /** Answers a request {@link owns} said is for the files, through `host`'s request path. */
  async handle(ctx: Context, host: FilesHost): Promise<Reply> {
    const route = this.routeOf(ctx.method, ctx.parts, ctx.headers['content-type']);
    if (route === undefined) return host.handleRequest(ctx);
    if (route.kind === 'property' && ctx.method === 'GET') return this.serve(ctx, host, route);
    if (ctx.req === undefined && (route.kind === 'form' || ctx.method !== 'DELETE')) throw new SvcError('BAD_REQUEST', 'files are uploaded over HTTP, not through scripts');
    const state: RequestFiles = { fresh: new Map(), ops: new Map(), objectId: undefined, committed: new Set() };
    this.requests.set(ctx, state);
    try {
      let lockId: string | undefined;
      if (route.kind === 'form') lockId = await this.receiveForm(ctx, state);
      else {
        await this.receiveAtPath(ctx, route, state);
        lockId = route.id;
      }
      return lockId === undefined ? await host.handleRequest(ctx) : await this.locked(lockId, () => host.handleRequest(ctx));
    } catch (err) {
      if (ctx.req !== undefined && !ctx.req.complete) await refusedEarly(ctx.req, ctx.res);
      throw err;
    } finally {
      this.requests.delete(ctx);
      await this.settle(state);
    }
  }

  /** A create's or update's multipart body: files stored, ctx.body the form's values. Answers the object id to lock, if any. */
  private async receiveForm(ctx: Context, state: RequestFiles): Promise<string | undefined> {
    const form = await receiveForm(ctx.req as IncomingMessage, this.settings, this.options.received, this.storage.tempDir, this.options.fieldBytes);
    const named = ctx.parts[0] ?? (typeof ctx.query.id === 'string' ? ctx.query.id : undefined) ?? (typeof form.body.id === 'string' ? form.body.id : undefined);
    const objectId = named ?? (state.objectId = createId());
    try {
      for (const [property, files] of form.files) {
        const ids = await this.publish(state, objectId, property, files);
        state.ops.set(property, { kind: 'add', ids, replace: !(this.settings.get(property) as FileSettings).many });
      }
    } catch (err) {
      for (const files of form.files.values()) for (const f of files) await this.options.received.discard(f.path);
      throw err;
    }
    ctx.body = form.body;
    ctx.bodyKind = form.kind;
    return named;
  }

  /** PUT|POST|DELETE /<c>/<id>/<property>[/<file id>]: turned into an update of the object. */
  private async receiveAtPath(ctx: Context, route: Extract<FileRoute, { kind: 'property' }>, state: RequestFiles): Promise<void> {
    const { id, property, settings, fileId } = route;
    if (ctx.method === 'DELETE') {
      if (fileId !== undefined && !isFileId(fileId)) throw new SvcError('NOT_FOUND', 'not found');
      state.ops.set(property, { kind: 'remove', fileId });
    } else if (ctx.method === 'PUT' || ctx.method === 'POST') {
      if (fileId !== undefined) throw new SvcError('METHOD_NOT_ALLOWED', `files are added at ${this.options.path}/<id>/${property}`, { headers: { allow: 'GET, DELETE' } });
      if (!isKeySegment(id)) throw new SvcError('NOT_FOUND', 'not found');
      const req = ctx.req as IncomingMessage;
      let files: ReceivedFile[];
      if (/^multipart\/form-data\b/i.test(req.headers['content-type'] ?? '')) {
        const form = await receiveForm(req, new Map([[property, settings]]), this.options.received, this.storage.tempDir, this.options.fieldBytes);
        files = form.files.get(property) ?? [];
        if (Object.keys(form.body).length > 0) {
          for (const f of files) await this.options.received.discard(f.path);
          throw new SvcError('BAD_REQUEST', `a form sent to ${this.options.path}/<id>/${property} holds files only`);
        }
      } else {
        files = [await this.options.received.receive(req, settings, this.storage.tempDir, nameOf(ctx))];
      }
      if (files.length === 0) throw new SvcError('BAD_REQUEST', 'no file was sent');
      crashPoint('files:received');
      const ids = await this.publish(state, id, property, files);
      crashPoint('files:stored');
      // POST adds to a list; PUT replaces (one file, or the whole list).
      state.ops.set(property, { kind: 'add', ids, replace: ctx.method === 'PUT' || !settings.many });
    } else {
      throw new SvcError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported on a file property`, { headers: { allow: 'GET, PUT, POST, DELETE' } });
    }
    ctx.method = 'PUT';
    ctx.parts = [id];
    ctx.url = `/${id}`;
    ctx.query = {};
    ctx.body = {};
    ctx.bodyKind = 'json';
  }

  /** Moves received files to their keys (before the object is written): answers their ids. */
  private async publish(state: RequestFiles, objectId: string, property: string, files: readonly ReceivedFile[]): Promise<string[]> {
    const ids: string[] = [];
    for (const [index, received] of files.entries()) {
      const id = createFileId();
      const key = fileKey(this.prefix, objectId, property, id);
      try {
        await this.storage.put(key, received.path, received.type);
        this.options.received.release(received.path);
      } catch (err) {
        for (const rest of files.slice(index)) await this.options.received.discard(rest.path);
        throw storageError(err);
      }
      const file: StoredFile = { id, name: received.name, size: received.size, type: received.type, url: `${this.options.path}/${objectId}/${property}/${id}` };
      state.fresh.set(id, { property, key, file });
      ids.push(id);
    }
    return ids;
  }

  /** Whether an update changes file properties: by this request's files, or by naming one in its body. */
  touches(ctx: Context, body: Record<string, unknown>): boolean {
    if ((this.requests.get(ctx)?.ops.size ?? 0) > 0) return true;
    for (const name of this.settings.keys()) if (Object.hasOwn(body, name)) return true;
    return false;
  }

  /** The id a create gets when its files were stored first (their keys hold it); undefined: a new one. */
  idFor(ctx: Context): string | undefined {
    return this.requests.get(ctx)?.objectId;
  }

  /**
   * Phase "parse body" of a write: each file property the body names or the request's files
   * change becomes its files, taken only from what the object holds (`previous`) and what this
   * request received (a JSON body keeps, reorders or removes files; it never names another
   * object's). `object` is changed in place; the names set are answered (they count as sent).
   */
  resolve(ctx: Context, object: Record<string, unknown>, previous: Record<string, unknown> | undefined, named: ReadonlySet<string>): string[] {
    const state = this.requests.get(ctx);
    const set: string[] = [];
    for (const [property, settings] of this.settings) {
      const op = state?.ops.get(property);
      if (op === undefined && !named.has(property)) continue;
      const before = filesOf(previous?.[property]);
      let list: StoredFile[];
      if (op?.kind === 'remove') {
        if (op.fileId !== undefined && !before.some((f) => f.id === op.fileId)) throw new SvcError('NOT_FOUND', 'not found');
        list = op.fileId === undefined ? [] : before.filter((f) => f.id !== op.fileId);
      } else {
        const base = op?.replace === true ? [] : named.has(property) ? this.fromBody(ctx, property, settings, object[property], before) : before;
        list = [...base, ...(op?.ids ?? []).map((id) => (state?.fresh.get(id) as FreshFile).file)];
      }
      if (list.length > settings.maxFiles) {
        throw new SvcError('VALIDATION_FAILED', undefined, { errors: { [property]: `holds at most ${settings.maxFiles} file${settings.maxFiles === 1 ? '' : 's'}` } });
      }
      object[property] = settings.many ? list : (list[0] ?? null);
      set.push(property);
    }
    return set;
  }

  /** A body's value for a file property: files of the object or of this request, by id (or as answered). */
  private fromBody(ctx: Context, property: string, settings: FileSettings, value: unknown, before: readonly StoredFile[]): StoredFile[] {
    if (value === null || value === undefined || value === '') return [];
    const items = settings.many ? value : [value];
    if (!Array.isArray(items)) throw notAFile(this.options.path, property);
    const out: StoredFile[] = [];
    for (const item of items) {
      const id = typeof item === 'string' ? item : isPlainObject(item) ? item.id : undefined;
      const known = before.find((f) => f.id === id) ?? this.freshOf(ctx, property, id);
      if (known === undefined) throw notAFile(this.options.path, property);
      if (!out.includes(known)) out.push(known);
    }
    return out;
  }

  private freshOf(ctx: Context, property: string, id: unknown): StoredFile | undefined {
    const fresh = typeof id === 'string' ? this.requests.get(ctx)?.fresh.get(id) : undefined;
    return fresh?.property === property ? fresh.file : undefined;
  }

  /**
   * Phase "before store", after the event scripts: each file property holds only files of the
   * object or of this request (a script may keep, reorder or drop files, not make them up),
   * each as it was stored; `required` holds for lists too.
   */
  beforeStore(ctx: Context, object: Record<string, unknown>, previous: Record<string, unknown> | undefined): void {
    for (const [property, settings] of this.settings) {
      if (!Object.hasOwn(object, property)) continue;
      const value = object[property];
      const before = filesOf(previous?.[property]);
      let list: StoredFile[];
      try {
        list = this.fromBody(ctx, property, settings, value, before);
      } catch {
        throw new SvcError('INTERNAL', `${this.options.path.slice(1)}.${property}: an event script set a file that is neither the object's nor this request's`);
      }
      if (list.length > settings.maxFiles) throw new SvcError('VALIDATION_FAILED', undefined, { errors: { [property]: `holds at most ${settings.maxFiles} files` } });
      object[property] = settings.many ? list : (list[0] ?? null);
    }
  }

  /**
   * Phase "after commit": the files the stored object no longer holds are removed (the new ones
   * were stored before it was written); this request's files it holds are kept.
   */
  async afterCommit(ctx: Context, stored: Doc, previous: Doc | undefined): Promise<void> {
    const state = this.requests.get(ctx);
    const gone: string[] = [];
    for (const [property, settings] of this.settings) {
      const after = new Set(filesOf(stored[property]).map((f) => f.id));
      for (const id of after) state?.committed.add(id);
      for (const f of filesOf(previous?.[property])) if (!after.has(f.id)) gone.push(...this.keysOf(stored.id, property, settings, f.id));
    }
    if (gone.length > 0) {
      crashPoint('files:written');
      await this.removeQuietly(gone, `after an update of ${stored.id}`);
    }
  }

  /** Phase "after delete": every file of the deleted objects (and their thumbnails). */
  async objectsRemoved(ids: readonly string[]): Promise<void> {
    crashPoint('files:deleted');
    for (const id of ids) {
      if (!isKeySegment(id)) continue;
      try {
        const files = await this.storage.files(`${this.prefix}/${id}/`);
        if (files.length > 0) await this.storage.remove(files.map((f) => `${this.prefix}/${id}/${f.name}`));
      } catch (err) {
        // The object is gone; its files are orphans the sweep removes.
        this.options.logger?.warn(`${this.prefix}: could not remove the files of deleted object ${id} (the orphan sweep will): ${(err as Error).message}`);
      }
    }
  }

  /** A file's key and its thumbnails' keys. */
  private keysOf(objectId: string, property: string, settings: FileSettings, fileId: string): string[] {
    if (!isKeySegment(objectId) || !isFileId(fileId)) return [];
    const key = fileKey(this.prefix, objectId, property, fileId);
    return [key, ...[...settings.thumbs.keys()].map((size) => `${key}.${size}`)];
  }

  /** After a request: its received files that no committed object holds are removed. */
  private async settle(state: RequestFiles): Promise<void> {
    const orphans = [...state.fresh.entries()].filter(([id]) => !state.committed.has(id)).map(([, fresh]) => fresh.key);
    if (orphans.length > 0) await this.removeQuietly(orphans, 'of a write that did not happen');
  }

  private async removeQuietly(keys: readonly string[], why: string): Promise<void> {
    try {
      await this.storage.remove(keys);
    } catch (err) {
      this.options.logger?.warn(`${this.prefix}: could not remove ${keys.length} file(s) ${why} (the orphan sweep will): ${(err as Error).message}`);
    }
  }

  private async locked<T>(id: string, run: () => Promise<T>): Promise<T> {
    const before = this.locks.get(id);
    let release = (): void => {};
    const mine = new Promise<void>((resolve) => (release = resolve));
    const chain = (before ?? Promise.resolve()).then(() => mine);
    this.locks.set(id, chain);
    try {
      if (before !== undefined) await before;
      return await run();
    } finally {
      release();
      if (this.locks.get(id) === chain) this.locks.delete(id);
    }
  }

  /** GET|HEAD /<c>/<id>/<property>[/<file id>][?thumb=WxH]: through the collection's read path, then streamed. */
  private async serve(ctx: Context, host: FilesHost, route: Extract<FileRoute, { kind: 'property' }>): Promise<Reply> {
    const { id, property, settings } = route;
    const thumb = ctx.query.thumb;
    if (thumb !== undefined && (typeof thumb !== 'string' || !settings.thumbs.has(thumb))) {
      const sizes = [...settings.thumbs.keys()];
      throw new SvcError('BAD_REQUEST', sizes.length === 0 ? `${property} has no thumbnails` : `thumb must be one of ${sizes.join(', ')}`);
    }
    if (ctx.res === undefined) throw new SvcError('BAD_REQUEST', 'files are served over HTTP, not to scripts');
    ctx.parts = [id];
    ctx.url = `/${id}`;
    ctx.query = { id };
    const found = isKeySegment(id) ? await host.readOneAs(ctx, id) : null;
    if (found === null) throw new SvcError('NOT_FOUND', 'not found');
    const stored = filesOf(found.stored[property]);
    const file = route.fileId !== undefined ? stored.find((f) => f.id === route.fileId) : settings.many ? undefined : stored[0];
    // Served only while the caller's GET of the object shows it: read rules, private, On Get's hide().
    if (file === undefined || !filesOf(found.shown[property]).some((f) => f.id === file.id)) throw new SvcError('NOT_FOUND', 'not found');
    await serveStoredFile({
      req: ctx.req,
      res: ctx.res,
      head: ctx.originalMethod === 'HEAD',
      storage: this.storage,
      key: fileKey(this.prefix, id, property, file.id),
      file,
      thumb: thumb === undefined ? undefined : { text: thumb, size: settings.thumbs.get(thumb) as NonNullable<ReturnType<FileSettings['thumbs']['get']>>, thumbnails: this.options.thumbnails },
      logger: this.options.logger,
    });
    return { status: ctx.res.statusCode };
  }
}

/** The rest of a refused body that is read and dropped (so the client gets the answer) rather than closing. */
const DRAIN_BYTES = 1024 * 1024;
const DRAIN_MS = 5000;

/**
 * Refused before the body was read whole: a short rest (its Content-Length at most
 * {@link DRAIN_BYTES}) is read and dropped, so that a client still sending gets the answer rather
 * than a broken pipe; a longer or unknown one closes the connection after the answer.
 */
async function refusedEarly(req: IncomingMessage, res: Context['res']): Promise<void> {
  const length = Number(req.headers['content-length']);
  if (req.headers['content-length'] !== undefined && Number.isSafeInteger(length) && length <= DRAIN_BYTES && !req.destroyed) {
    // Bounded in time too: a client that stops sending gets the answer and the connection closes.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, DRAIN_MS);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      req.once('end', done);
      req.once('close', done);
      req.resume();
    });
    if (req.complete) return;
  }
  if (res && !res.headersSent) res.setHeader('connection', 'close');
}

/** The files a stored value holds (one, a list, or none), as stored. */
export function filesOf(value: unknown): StoredFile[] {
  const items = Array.isArray(value) ? value : value === null || value === undefined ? [] : [value];
  return items.filter((f): f is StoredFile => isPlainObject(f) && isFileId(f.id));
}

function nameOf(ctx: Context): string {
  const query = ctx.query.name;
  if (typeof query === 'string') return query;
  const disposition = ctx.headers['content-disposition'];
  const match = typeof disposition === 'string' ? /filename\*=UTF-8''([^;]+)|filename="?([^";]+)"?/i.exec(disposition) : null;
  if (match?.[1] !== undefined) {
    try {
      return decodeURIComponent(match[1]);
    } catch {
      return 'file';
    }
  }
  return match?.[2] ?? 'file';
}

function notAFile(path: string, property: string): SvcError {
  const message = `files are uploaded with multipart/form-data or to ${path}/<id>/${property}; a JSON body may keep, reorder or remove the object's own files (by id), or set null`;
  return new SvcError('VALIDATION_FAILED', message, { errors: { [property]: 'names a file this object does not hold' } });
}

function storageError(err: unknown): SvcError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return new SvcError('STORAGE_FULL', 'no space left to store the upload', { cause: err });
  if (err instanceof SvcError) return err;
  return new SvcError('STORAGE_FAILED', `the file could not be stored: ${(err as Error).message}`, { cause: err });
}

