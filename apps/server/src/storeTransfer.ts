import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DEFAULT_EMBEDDED_ENGINE, collectionOfDataFile, createEmbeddedStore, dataFileOfCollection, escapeLineBreaks, isCollectionName, lockDataFolder, snapshotEmbeddedStore, snapshotEngineStore } from '@svc/core';
import type { Doc, EmbeddedEngine, EmbeddedSnapshot, Store } from '@svc/core';
import { importEngine } from './engineImport.js';

/**
 * The export format (docs/deploying.md, "Moving between stores"): JSON lines, UTF-8.
 *   line 1:   {"format":"svc-export","version":1,"store":"embedded","exportedAt":"<ISO time>"}
 *   then:     {"collection":"<name>","object":{"id":"...", ...}}   one per object
 *   last:     {"end":true,"objects":<count>}
 * Objects are written as stored, users with their password hash (`password`); a Date is
 * {"$date":"<ISO time>"}. The end line tells a complete file from a cut one.
 */
export const EXPORT_FORMAT = 'svc-export';
export const EXPORT_VERSION = 1;
/** The longest line an import reads: MongoDB's own limit on an object is 16 MiB. */
export const MAX_LINE_BYTES = 17 * 1024 * 1024;
/** Deepest nesting of objects and arrays accepted (MongoDB's limit is 100). */
export const MAX_DEPTH = 100;
const PAGE = 1000;
/**
 * Objects written at once while importing into the embedded store (its group commit writes them
 * in one append, in call order). A store without that gets one at a time, or ordered batches
 * (MongoDB's insertMany), so that its natural order is the file's.
 */
const IMPORT_CONCURRENCY = 32;
/** A batch sent to MongoDB at once: at most this many objects, or about this many bytes. */
const BATCH_OBJECTS = 1000;
const BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Where an export reads: the embedded store's data folder (no lock taken; `engine` says which of
 * the two embedded stores keeps it, default DEFAULT_EMBEDDED_ENGINE), or an open store.
 */
export type ExportSource = { kind: 'embedded'; dir: string; engine?: EmbeddedEngine } | { kind: 'store'; store: Store };

/** A consistent snapshot of an embedded store's data folder, whichever engine keeps it. */
export function snapshotOf(source: { dir: string; engine?: EmbeddedEngine }): Promise<EmbeddedSnapshot> {
  return (source.engine ?? DEFAULT_EMBEDDED_ENGINE) === 'sqlite' ? snapshotEngineStore(source.dir) : snapshotEmbeddedStore(source.dir);
}

/** What an export or import did. */
export interface TransferSummary {
  objects: number;
  collections: Record<string, number>;
}

/**
 * Writes every collection of the source to `out` in the export format. The embedded store is read
 * from its files (a consistent snapshot, see snapshotEmbeddedStore and snapshotEngineStore), so it
 * works while a server runs on them; MongoDB is read collection by collection in id order, through
 * the store.
 */
export async function exportStore(source: ExportSource, out: NodeJS.WritableStream): Promise<TransferSummary> {
  const summary: TransferSummary = { objects: 0, collections: {} };
  const write = (line: string): Promise<void> =>
    new Promise((resolve, reject) => {
      out.write(`${line}\n`, (err) => (err ? reject(err) : resolve()));
    });
  const emit = async (collection: string, docs: Doc[]): Promise<void> => {
    let chunk = '';
    for (const doc of docs) {
      // NEL, U+2028 and U+2029 escaped: readers that split lines as Unicode does (Python's
      // splitlines, many tools) would cut an object holding them in two.
      chunk += `${escapeLineBreaks(JSON.stringify({ collection, object: encodeValue(doc, `${collection} ${JSON.stringify(doc.id)}`) }))}\n`;
      if (chunk.length > 1 << 20) {
        await write(chunk.slice(0, -1));
        chunk = '';
      }
    }
    if (chunk) await write(chunk.slice(0, -1));
    summary.objects += docs.length;
    summary.collections[collection] = (summary.collections[collection] ?? 0) + docs.length;
  };
  const kind = source.kind === 'embedded' ? 'embedded' : source.store.kind;
  await write(JSON.stringify({ format: EXPORT_FORMAT, version: EXPORT_VERSION, store: kind, exportedAt: new Date().toISOString() }));
  if (source.kind === 'embedded') {
    const snapshot = await snapshotOf(source);
    try {
      for (const c of snapshot.collections) {
        summary.collections[c.name] = 0;
        for await (const page of c.pages()) await emit(c.name, page);
      }
    } finally {
      await snapshot.close();
    }
  } else {
    const store = source.store;
    if (!store.listCollections) throw new Error(`the ${store.kind} store cannot list its collections`);
    for (const name of await store.listCollections()) {
      summary.collections[name] = 0;
      // In natural order (MongoDB's insertion order in practice), which the embedded store keeps
      // as its insertion order: a list without $sort answers the same after the move. One
      // collection is in memory at a time.
      await emit(name, await store.collection(name).find({}));
    }
  }
  await write(JSON.stringify({ end: true, objects: summary.objects }));
  return summary;
}

/**
 * A stored value in the export's JSON: Dates become {"$date": ISO}; anything JSON cannot carry
 * exactly (NaN, a BSON ObjectId or Decimal128 written by another program) stops the export,
 * naming where, rather than being changed on the way.
 */
function encodeValue(value: unknown, where: string): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`${where} holds ${value}, which JSON cannot carry`);
    return value;
  }
  if (Array.isArray(value)) return value.map((v: unknown, i) => encodeValue(v, `${where}[${i}]`));
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new Error(`${where} holds an invalid date`);
    return { $date: value.toISOString() };
  }
  if (typeof value === 'object') {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const type = (value as { _bsontype?: unknown })._bsontype ?? (value as object).constructor.name;
      throw new Error(`${where} holds a ${String(type)}, which the export format cannot carry`);
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v !== undefined) Object.defineProperty(out, k, { value: encodeValue(v, `${where}.${k}`), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  throw new Error(`${where} holds a ${typeof value}, which the export format cannot carry`);
}

/** Writes an export to `file` (mode 0600: it holds password hashes): a `.partial` file renamed when complete. */
export async function exportToFile(source: ExportSource, file: string): Promise<TransferSummary> {
  await mkdir(dirname(file), { recursive: true });
  const partial = `${file}.partial`;
  const handle = await open(partial, 'w', 0o600);
  const stream = handle.createWriteStream();
  try {
    const summary = await exportStore(source, stream);
    await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
    await handle.sync().catch(() => undefined);
    await handle.close();
    await rename(partial, file);
    return summary;
  } catch (err) {
    stream.destroy();
    await handle.close().catch(() => undefined);
    await unlink(partial).catch(() => undefined);
    throw err;
  }
}

/** One object of an export file. */
interface ExportedObject {
  line: number;
  /** Length of the line. */
  bytes: number;
  collection: string;
  doc: Doc;
}

/**
 * Reads an export file, checking every line (see checkObject); calls `onObject` for each object in
 * order and answers the summary once the end line was read and matched. Throws `line N: ...` at
 * the first thing wrong.
 */
export async function readExport(file: string, onObject: (o: ExportedObject) => Promise<void> | void): Promise<TransferSummary> {
  const summary: TransferSummary = { objects: 0, collections: {} };
  const seen = new Map<string, Map<string, number>>();
  const folded = new Map<string, string>();
  let header = false;
  let ended = false;
  let lineNo = 0;
  for await (const text of readLines(file)) {
    lineNo++;
    const fail = (message: string): Error => new Error(`${file}: line ${lineNo}: ${message}`);
    if (text.trim() === '') continue;
    if (ended) throw fail('there is more after the end line');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw fail(`not JSON (${(err as Error).message})`);
    }
    if (!isPlain(value)) throw fail('not a JSON object');
    if (!header) {
      if (value.format !== EXPORT_FORMAT) throw fail(`not an svc export (the first line must be {"format":"${EXPORT_FORMAT}",...})`);
      if (typeof value.version !== 'number' || value.version > EXPORT_VERSION) throw fail(`export format version ${String(value.version)} is newer than this svc reads (${EXPORT_VERSION}): update svc`);
      header = true;
      continue;
    }
    if (value.end === true) {
      if (value.objects !== summary.objects) throw fail(`the end line counts ${String(value.objects)} objects, the file holds ${summary.objects}`);
      ended = true;
      continue;
    }
    const keys = Object.keys(value);
    if (keys.length !== 2 || typeof value.collection !== 'string' || !('object' in value)) throw fail('expected {"collection": <name>, "object": {...}}');
    const collection = value.collection;
    if (!isCollectionName(collection)) throw fail(`invalid collection name ${JSON.stringify(collection)} (segments of A-Z a-z 0-9 _ - joined by /)`);
    const other = folded.get(collection.toLowerCase());
    if (other !== undefined && other !== collection) throw fail(`collection ${collection} differs from ${other} only in case`);
    folded.set(collection.toLowerCase(), collection);
    let doc: Doc;
    try {
      doc = checkObject(value.object);
    } catch (err) {
      throw fail(`${collection}: ${(err as Error).message}`);
    }
    let ids = seen.get(collection);
    if (!ids) seen.set(collection, (ids = new Map()));
    const before = ids.get(doc.id);
    if (before !== undefined) throw fail(`${collection}: id ${JSON.stringify(doc.id)} was already on line ${before}`);
    ids.set(doc.id, lineNo);
    summary.objects++;
    summary.collections[collection] = (summary.collections[collection] ?? 0) + 1;
    await onObject({ line: lineNo, bytes: text.length, collection, doc });
  }
  if (!header) throw new Error(`${file}: empty: not an svc export`);
  if (!ended) throw new Error(`${file}: ends at line ${lineNo} without its end line: the export is cut short (it did not finish, or the file was truncated)`);
  return summary;
}

/** Lines of a file, refusing one longer than MAX_LINE_BYTES before buffering more of it. */
async function* readLines(file: string): AsyncGenerator<string> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let lineNo = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const part = chunk.subarray(start, nl);
      if (pendingBytes + part.length > MAX_LINE_BYTES) throw new Error(`${file}: line ${lineNo + 1} is longer than ${MAX_LINE_BYTES} bytes`);
      const line = pending.length === 0 ? part : Buffer.concat([...pending, part]);
      pending = [];
      pendingBytes = 0;
      lineNo++;
      yield line.toString('utf8');
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    pendingBytes += rest.length;
    if (pendingBytes > MAX_LINE_BYTES) throw new Error(`${file}: line ${lineNo + 1} is longer than ${MAX_LINE_BYTES} bytes`);
    if (rest.length > 0) pending.push(Buffer.from(rest));
  }
  if (pendingBytes > 0) yield Buffer.concat(pending).toString('utf8');
}

const RESERVED = new Set(['_id', '__svcSeq']);

/**
 * An exported object made safe for either store: a non-empty string `id` (not `__proto__`, which
 * a plain-object cache would turn into a prototype); no `_id` or `__svcSeq` (the stores' own);
 * property names neither starting with `$` nor holding a `.` (nedb refuses them, MongoDB treats
 * them as operators and paths) nor `__proto__`; nesting at most MAX_DEPTH; {"$date": ISO} read as
 * a Date.
 */
function checkObject(value: unknown): Doc {
  if (!isPlain(value)) throw new Error('the object is not a JSON object');
  const id = value.id;
  if (typeof id !== 'string' || id === '') throw new Error('the object has no id (a non-empty string)');
  if (id === '__proto__') throw new Error('the id "__proto__" cannot be stored');
  for (const key of Object.keys(value)) if (RESERVED.has(key)) throw new Error(`${JSON.stringify(id)}: property ${key} is reserved by the stores`);
  return decodeValue(value, JSON.stringify(id), 0) as Doc;
}

function decodeValue(value: unknown, where: string, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new Error(`${where}: nested deeper than ${MAX_DEPTH} levels`);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v: unknown, i) => decodeValue(v, `${where}[${i}]`, depth + 1));
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length === 1 && keys[0] === '$date') {
    const date = typeof obj.$date === 'string' ? new Date(obj.$date) : undefined;
    if (!date || Number.isNaN(date.getTime())) throw new Error(`${where}: {"$date": ...} needs an ISO date string`);
    return date;
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    if (key.startsWith('$')) throw new Error(`${where}: property name ${JSON.stringify(key)} starts with $`);
    if (key.includes('.')) throw new Error(`${where}: property name ${JSON.stringify(key)} holds a "."`);
    if (key === '__proto__') throw new Error(`${where}: property name "__proto__" cannot be stored`);
    out[key] = decodeValue(obj[key], `${where}.${key}`, depth + 1);
  }
  return out;
}

function isPlain(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Where an import writes (see ExportSource). */
export type ImportTarget = { kind: 'embedded'; dir: string; engine?: EmbeddedEngine } | { kind: 'store'; store: Store };

/** Options of {@link importFile}. */
export interface ImportOptions {
  /** Allow a target that holds objects: they are all removed first (after `safetyFile` is written). */
  replace?: boolean;
  /** Where the target's objects are exported before `replace` removes them. */
  safetyFile?: string;
  /** Told the progress in words (the safety export, the swap). */
  note?: (message: string) => void;
}

/** What {@link importFile} did. */
export interface ImportSummary extends TransferSummary {
  /** The export of what the target held before, when `replace` removed something. */
  safetyFile?: string;
}

/**
 * Imports an export file into a store, all or nothing: the whole file is read and checked first
 * (nothing is written when a line is wrong). A target holding objects is refused unless `replace`
 * (svc's own collections, `_sessions`, do not count: they are replaced by the file's).
 *
 * The embedded store (its data folder locked throughout: a running server refuses it, and no
 * server can start meanwhile) is written into a new folder beside it, which is loaded back and
 * counted, and only then are its files moved into the data folder in place of the old ones. On
 * MongoDB the objects are inserted; when that fails midway, those inserted are removed again.
 */
export async function importFile(file: string, target: ImportTarget, options: ImportOptions = {}): Promise<ImportSummary> {
  const info = await stat(file).catch((err: NodeJS.ErrnoException) => {
    throw new Error(err.code === 'ENOENT' ? `${file}: no such file` : `${file}: ${err.message}`, { cause: err });
  });
  if (info.isDirectory()) throw new Error(`${file} is a folder, not an export file`);
  const expected = await readExport(file, () => undefined);
  if (target.kind === 'embedded' && (target.engine ?? DEFAULT_EMBEDDED_ENGINE) === 'sqlite') return importEngine(file, target.dir, expected, options);
  if (target.kind === 'embedded') return importEmbedded(file, target.dir, expected, options);
  return importStore(file, target.store, expected, options);
}

/** The data folder made and locked for an import; a running server's lock is refused with what to do. */
export async function lockForImport(dir: string): Promise<() => Promise<void>> {
  await mkdir(dir, { recursive: true });
  try {
    return await lockDataFolder(dir);
  } catch (err) {
    throw new Error(`${(err as Error).message} (stop the server before importing into its data folder)`, { cause: err });
  }
}

async function importEmbedded(file: string, dir: string, expected: TransferSummary, options: ImportOptions): Promise<ImportSummary> {
  const unlock = await lockForImport(dir);
  const staging = `${dir}.import-${process.pid}`;
  try {
    const held = await holding({ kind: 'embedded', dir });
    const safetyFile = await guardReplace(held, { kind: 'embedded', dir }, options);
    await rm(staging, { recursive: true, force: true });
    const store = await createEmbeddedStore({ dir: staging, compactionIntervalMs: 2 ** 31 - 1 });
    try {
      await writeAll(file, store);
      for (const [name, count] of Object.entries(expected.collections)) {
        const n = await store.collection(name).count({});
        if (n !== count) throw new Error(`the new ${name} holds ${n} objects where the file has ${count}`);
      }
    } finally {
      await store.close();
    }
    // Loaded again from its files, as the server will: what it counts is what was written.
    const check = await snapshotEmbeddedStore(staging);
    try {
      for (const c of check.collections) {
        const n = (await c.read()).length;
        if (n !== (expected.collections[c.name] ?? 0)) throw new Error(`the new ${c.name} file holds ${n} objects where the export has ${expected.collections[c.name] ?? 0}`);
      }
    } finally {
      await check.close();
    }
    options.note?.(`moving the imported files into ${dir}`);
    const fresh = (await readdir(staging)).filter((f) => collectionOfDataFile(f) !== undefined);
    for (const f of await readdir(dir)) {
      const name = collectionOfDataFile(f.replace(/~$/, ''));
      if (name !== undefined && !fresh.includes(dataFileOfCollection(name))) await unlink(join(dir, f));
    }
    for (const f of fresh) {
      await unlink(join(dir, `${f}~`)).catch(() => undefined);
      await rename(join(staging, f), join(dir, f));
    }
    return { ...expected, ...(safetyFile ? { safetyFile } : {}) };
  } finally {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    await unlock();
  }
}

async function importStore(file: string, store: Store, expected: TransferSummary, options: ImportOptions): Promise<ImportSummary> {
  const held = await holding({ kind: 'store', store });
  const safetyFile = await guardReplace(held, { kind: 'store', store }, options);
  // Replaced: everything with --replace, else only the internal collections (guardReplace refused any other).
  for (const name of Object.keys(held.collections)) await store.collection(name).remove({});
  const written: { collection: string; id: string }[] = [];
  // (Ids attempted, not only acknowledged: the target held none of them.)
  try {
    await writeAll(file, store, (collection, id) => written.push({ collection, id }));
  } catch (err) {
    // Back to the state before (empty, or emptied by replace): nothing half imported.
    const byCollection = new Map<string, string[]>();
    for (const w of written) byCollection.set(w.collection, [...(byCollection.get(w.collection) ?? []), w.id]);
    let undone = true;
    for (const [name, ids] of byCollection) {
      for (let i = 0; i < ids.length; i += PAGE) {
        await store
          .collection(name)
          .remove({ id: { $in: ids.slice(i, i + PAGE) } })
          .catch(() => (undone = false));
      }
    }
    const state = undone ? 'the objects it had written were removed again' : `the ${written.length} objects it had written could not all be removed`;
    throw new Error(`${(err as Error).message}; ${state}${safetyFile ? `; what the store held before is in ${safetyFile} (svc import --from it --replace)` : ''}`, { cause: err });
  }
  return { ...expected, ...(safetyFile ? { safetyFile } : {}) };
}

/**
 * Reads the file again and inserts its objects in file order: on the embedded store up to
 * IMPORT_CONCURRENCY at a time; where the store inserts many in one round trip (MongoDB), in
 * batches of consecutive objects of one collection. `attempted` is told each id before it is
 * written (the target held none of them, so they can all be removed again).
 */
export async function writeAll(file: string, store: Store, attempted?: (collection: string, id: string) => void): Promise<void> {
  const concurrency = store.kind === 'embedded' ? IMPORT_CONCURRENCY : 1;
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  let batch: { collection: string; docs: Doc[]; first: number; last: number; bytes: number } | undefined;
  const flush = async (): Promise<void> => {
    if (!batch) return;
    const b = batch;
    batch = undefined;
    for (const doc of b.docs) attempted?.(b.collection, doc.id);
    const many = store.collection(b.collection).insertMany?.bind(store.collection(b.collection)) as (docs: Doc[]) => Promise<void>;
    try {
      await many(b.docs);
    } catch (err) {
      throw new Error(`${file}: lines ${b.first}-${b.last}: ${b.collection}: refused: ${(err as Error).message}`, { cause: err });
    }
  };
  await readExport(file, async ({ line, bytes, collection, doc }) => {
    if (failure !== undefined) throw failure as Error;
    const target = store.collection(collection);
    if (target.insertMany) {
      if (batch && batch.collection !== collection) await flush();
      batch ??= { collection, docs: [], first: line, last: line, bytes: 0 };
      batch.docs.push(doc);
      batch.last = line;
      batch.bytes += bytes;
      if (batch.docs.length >= BATCH_OBJECTS || batch.bytes >= BATCH_BYTES) await flush();
      return;
    }
    attempted?.(collection, doc.id);
    const p = target
      .insert(doc)
      .then(
        () => undefined,
        (err: unknown) => {
          failure ??= new Error(`${file}: line ${line}: ${collection} ${JSON.stringify(doc.id)} was refused: ${(err as Error).message}`, { cause: err });
        },
      )
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
    if (inFlight.size >= concurrency) await Promise.race(inFlight);
  });
  await flush();
  await Promise.all(inFlight);
  if (failure !== undefined) throw failure as Error;
}

/**
 * Collections whose name starts with `_` are svc's own (`_sessions`: the sessions and the key of
 * anonymous ids), not the app's data: a store holding only those counts as empty, and an import
 * replaces them with the file's.
 */
const isInternal = (name: string): boolean => name.startsWith('_');

/** What the target holds: objects per collection that holds any, and how many are the app's. */
export interface Held extends TransferSummary {
  /** Objects outside the internal collections. */
  appObjects: number;
}

export async function holding(target: ExportSource): Promise<Held> {
  const held: Held = { objects: 0, appObjects: 0, collections: {} };
  const add = (name: string, n: number): void => {
    if (n === 0) return;
    held.collections[name] = n;
    held.objects += n;
    if (!isInternal(name)) held.appObjects += n;
  };
  if (target.kind === 'embedded') {
    const snapshot = await snapshotOf(target);
    try {
      for (const c of snapshot.collections) add(c.name, await c.count());
    } finally {
      await snapshot.close();
    }
    return held;
  }
  const store = target.store;
  if (!store.listCollections) throw new Error(`the ${store.kind} store cannot list its collections`);
  for (const name of await store.listCollections()) add(name, await store.collection(name).count({}));
  return held;
}

/** Refuses a target holding objects unless replace; with replace, exports them first. */
export async function guardReplace(held: Held, target: ExportSource, options: ImportOptions): Promise<string | undefined> {
  if (held.appObjects === 0) return undefined;
  const what = Object.entries(held.collections)
    .filter(([name]) => !isInternal(name))
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');
  if (!options.replace) throw new Error(`the target store already holds ${held.appObjects} objects (${what}); import into an empty store, or pass --replace to replace them (they are exported first)`);
  if (!options.safetyFile) throw new Error('replace needs a file to keep what it replaces');
  options.note?.(`exporting the ${held.objects} objects the store holds now to ${options.safetyFile}`);
  await exportToFile(target, options.safetyFile);
  return options.safetyFile;
}

