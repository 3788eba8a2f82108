import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeDoc, decodeDoc } from './codec.js';
import { ENGINE_FILE, Engine } from './engine.js';
import { oldDataFiles, readOldCollection } from './oldFiles.js';
import type { OldDataFile } from './oldFiles.js';
import { ident } from './sqlText.js';
import { crashPoint } from '../../crashPoint.js';

/**
 * Conversion of the old embedded store's data files (`<name>.db`, nedb's JSON lines) to the
 * engine's database, at the first start of an app on the engine. Safe to kill at any point:
 *
 * 1. The objects are written into `store.sqlite.converting` (never `store.sqlite`, so a database
 *    half converted is never taken for the store), in transactions of BATCH objects, each with
 *    the conversion's progress in the same transaction (svc_meta `convert:<collection>`: the
 *    hash of the file and how many of its objects are in). A start after a kill goes on from
 *    there; a file changed since (its hash) is converted again from its first object.
 * 2. It is verified: per collection, the count and a SHA-256 over the objects in order, of the
 *    old file read again against the database read back.
 * 3. What was converted is written into it (svc_meta `converted`: each file with its hash and
 *    count, and the folder the files go to), it is closed (its WAL written into it) and renamed
 *    to `store.sqlite` in one step.
 * 4. The old files are moved into that folder inside the data folder, one rename each. A start
 *    that finds `store.sqlite` beside old files finishes this step when they are the files its
 *    `converted` record names, unchanged; otherwise it refuses (see finishConversion).
 */

/** Objects per transaction of a conversion. */
const BATCH = 5000;
/** The database a conversion writes before it is verified. */
export const CONVERTING_FILE = `${ENGINE_FILE}.converting`;

/** One converted file, as the record in the new database says. */
interface ConvertedFile {
  file: string;
  collection: string;
  fileHash: string;
  count: number;
}

interface ConvertedRecord {
  at: string;
  /** The folder inside the data folder that the old files are moved into. */
  folder: string;
  files: ConvertedFile[];
}


/**
 * Converts the old data files of a data folder (whose lock the caller holds) when there are any
 * and no `store.sqlite` yet; finishes a conversion a crash cut short. Answers whether it did
 * anything. Throws, changing no old file, when a file cannot be read (a corrupt line) or the
 * verification fails.
 */
export async function convertOldFiles(dir: string, warn: (message: string) => void): Promise<boolean> {
  const files = await oldDataFiles(dir);
  if (existsSync(join(dir, ENGINE_FILE))) {
    if (files.length === 0) return false;
    await finishConversion(dir, files, warn);
    return true;
  }
  if (files.length === 0) return false;
  const started = performance.now();
  const staging = join(dir, CONVERTING_FILE);
  const resumed = existsSync(staging);
  warn(`embedded store: ${resumed ? 'going on with the conversion of' : 'converting'} the old data files of ${dir} (${files.map((f) => f.file).join(', ')}) to ${ENGINE_FILE}; they are kept until it is verified`);
  const engine = new Engine(staging, 'normal');
  let record: ConvertedRecord;
  try {
    const converted: ConvertedFile[] = [];
    for (const f of files) converted.push(await convertFile(engine, dir, f, warn));
    crashPoint('convert:written');
    await verify(engine, dir, converted);
    record = { at: new Date().toISOString(), folder: `old-files-${new Date().toISOString().replace(/\.\d+Z$/, 'Z').replaceAll(':', '-')}`, files: converted };
    await engine.write(() => engine.prepare('INSERT OR REPLACE INTO svc_meta (key, value) VALUES (?1, ?2)').run('converted', JSON.stringify(record)));
  } finally {
    await engine.close();
  }
  crashPoint('convert:verified');
  for (const leftover of [`${staging}-wal`, `${staging}-shm`]) await unlink(leftover).catch(() => undefined);
  await syncPath(staging);
  await rename(staging, join(dir, ENGINE_FILE));
  await syncPath(dir);
  crashPoint('convert:renamed');
  await moveAside(dir, record, files);
  const objects = record.files.reduce((n, f) => n + f.count, 0);
  warn(`embedded store: converted ${objects} objects of ${record.files.length} collections to ${join(dir, ENGINE_FILE)} in ${((performance.now() - started) / 1000).toFixed(1)} s (counts and checksums verified); the old files are in ${join(dir, record.folder)}: remove them once you no longer need them`);
  return true;
}

/** Writes one file's objects into the database, from where a conversion cut short stopped. */
async function convertFile(engine: Engine, dir: string, f: OldDataFile, warn: (message: string) => void): Promise<ConvertedFile> {
  const old = await readOldCollection(dir, f.file);
  const key = `convert:${f.collection}`;
  const progress = readMeta<{ fileHash: string; next: number }>(engine, key);
  let next = progress?.fileHash === old.fileHash ? progress.next : 0;
  if (progress !== undefined && progress.fileHash !== old.fileHash) {
    // Changed since its conversion began: its objects are written anew.
    await engine.write(() => engine.schema.drop(f.collection));
  }
  if (old.tornBytes > 0) warn(`embedded store: left out a torn last line (${old.tornBytes} bytes, a write that never completed) of ${join(dir, f.file)}`);
  let batch: { id: string; text: string }[] = [];
  let index = 0;
  const flush = async (): Promise<void> => {
    const rows = batch;
    batch = [];
    const upto = index;
    await engine.write(() => {
      const info = engine.schema.ensureTable(f.collection);
      const insert = engine.prepare(`INSERT INTO ${ident(info.tbl)} (id, doc) VALUES (?1, ?2)`);
      for (const row of rows) {
        const grown = info.facts.add(decodeDoc(row.text));
        if (grown !== undefined) info.plans?.clear();
        if (grown !== undefined) engine.schema.saveFacts(info, grown);
        insert.run(row.id, row.text);
      }
      engine.prepare('INSERT OR REPLACE INTO svc_meta (key, value) VALUES (?1, ?2)').run(key, JSON.stringify({ fileHash: old.fileHash, next: upto }));
    });
    next = upto;
    crashPoint(`convert:batch:${f.collection}`);
  };
  for (const doc of old.docs()) {
    index++;
    if (index <= next) continue;
    batch.push({ id: doc.id, text: encodeOld(doc, f.file) });
    if (batch.length >= BATCH) await flush();
  }
  if (batch.length > 0 || index === 0) await flush();
  return { file: f.file, collection: f.collection, fileHash: old.fileHash, count: old.count };
}

function encodeOld(doc: Parameters<typeof encodeDoc>[0], file: string): string {
  try {
    return encodeDoc(doc);
  } catch (err) {
    throw new Error(`${file}: object ${JSON.stringify(doc.id)} cannot be converted: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Per collection: the count and a SHA-256 over every object's text in order, of the old file
 * read again (and encoded) against the database read back. Throws naming the first that differs.
 */
async function verify(engine: Engine, dir: string, converted: ConvertedFile[]): Promise<void> {
  for (const c of converted) {
    const old = await readOldCollection(dir, c.file);
    if (old.fileHash !== c.fileHash) throw new Error(`${c.file} changed while it was converted; start again`);
    const want = createHash('sha256');
    for (const doc of old.docs()) want.update(encodeDoc(doc)).update('\n');
    const got = createHash('sha256');
    let count = 0;
    const info = engine.schema.table(c.collection);
    if (info !== undefined) {
      for (const row of engine.prepare(`SELECT doc FROM ${ident(info.tbl)} ORDER BY seq`).iterate() as unknown as Iterable<[string]>) {
        got.update(row[0]).update('\n');
        count++;
      }
    }
    if (count !== old.count || got.digest('hex') !== want.digest('hex')) {
      throw new Error(`the conversion of ${c.file} does not verify (${count} objects in ${CONVERTING_FILE}, ${old.count} in the file, or their texts differ); the old files are untouched: remove ${join(dir, CONVERTING_FILE)} to convert again from the start`);
    }
  }
}

/**
 * `store.sqlite` is there, and old files beside it: a conversion was cut short after its rename
 * (step 4) when they are the files its record names, unchanged; they are moved aside now.
 * Otherwise the folder holds two stores (old files written after a conversion, an app switched
 * between engines, files copied in): the start is refused rather than one being ignored.
 */
async function finishConversion(dir: string, files: OldDataFile[], warn: (message: string) => void): Promise<void> {
  const engine = new Engine(join(dir, ENGINE_FILE), 'normal');
  let record: ConvertedRecord | undefined;
  try {
    record = readMeta<ConvertedRecord>(engine, 'converted');
  } finally {
    await engine.close();
  }
  const names = files.map((f) => f.file).join(', ');
  const refuse = (why: string): Error =>
    new Error(
      `the data folder ${dir} holds both ${ENGINE_FILE} (the embedded engine's database) and data files of the old embedded store (${names}), ${why}: move away the one that is not the app's data (to run on the old files, app.json "embeddedStore": {"engine": "files"} and no ${ENGINE_FILE}; to move them into the engine, svc export and svc import)`,
    );
  if (record === undefined) throw refuse('and the database was not converted from them');
  for (const f of files) {
    const known = record.files.find((r) => r.file === f.file);
    if (known === undefined) throw refuse(`and ${f.file} is not one of the files it was converted from`);
    const hash = createHash('sha256')
      .update(await readFile(join(dir, f.file)))
      .digest('hex');
    if (hash !== known.fileHash) throw refuse(`and ${f.file} changed after it was converted`);
  }
  await moveAside(dir, record, files);
  warn(`embedded store: finished the conversion of ${dir} that was cut short: the old files are in ${join(dir, record.folder)}`);
}

/** Step 4: the old files into the record's folder inside the data folder (compaction leftovers `~` too). */
async function moveAside(dir: string, record: ConvertedRecord, files: OldDataFile[]): Promise<void> {
  const folder = join(dir, record.folder);
  await mkdir(folder, { recursive: true });
  for (const f of files) {
    for (const name of [f.file, `${f.file.replace(/~$/, '')}~`]) {
      if (!existsSync(join(dir, name))) continue;
      await rename(join(dir, name), join(folder, name));
      crashPoint('convert:moved-one');
    }
  }
  await syncPath(folder);
  await syncPath(dir);
}

function readMeta<T>(engine: Engine, key: string): T | undefined {
  const row = engine.prepare('SELECT value FROM svc_meta WHERE key = ?1').get(key) as unknown as [string] | undefined;
  return row === undefined ? undefined : (JSON.parse(row[0]) as T);
}

/** fsync of a file or a folder (a rename survives a crash of the machine too). */
async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
