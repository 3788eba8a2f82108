import { open, readdir } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Doc } from './Store.js';
import { SEQ } from './internal/copy.js';
import { nedbModel } from './internal/nedbModel.js';

/** One collection of a {@link EmbeddedSnapshot}. */
export interface SnapshotCollection {
  /** The collection's name (`a/b` for the file `a.b.db`). */
  readonly name: string;
  /** The data file read. */
  readonly file: string;
  /** How many bytes of the file the snapshot holds (up to the last complete line). */
  readonly bytes: number;
  /**
   * The collection's objects as they were when the snapshot was taken, in insertion order
   * (objects as the store answers them: `id`, no internal fields). Read on demand, one collection
   * at a time, so that memory holds one collection.
   */
  read(): Promise<Doc[]>;
  /** The same objects, `size` at a time (default 1,000), so that memory need not hold them all. */
  pages(size?: number): AsyncIterable<Doc[]>;
  /** How many objects the collection holds in the snapshot. */
  count(): Promise<number>;
}

/** A consistent copy of an embedded store's data folder; {@link EmbeddedSnapshot.close} releases it. */
export interface EmbeddedSnapshot {
  readonly collections: readonly SnapshotCollection[];
  close(): Promise<void>;
}

/** `a.b.db` -> `a/b`; undefined for any other file (`.lock`, `x.db~`, stray files). */
export function collectionOfDataFile(file: string): string | undefined {
  const m = /^([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\.db$/.exec(file);
  return m ? (m[1] as string).replaceAll('.', '/') : undefined;
}

/** The data file of a collection: `a/b` -> `a.b.db`. */
export function dataFileOfCollection(name: string): string {
  return `${name.replaceAll('/', '.')}.db`;
}

/**
 * Takes a snapshot of an embedded store's data folder without its lock, so that it works while a
 * server writes to the folder (an online backup) and does not disturb it.
 *
 * Why it is consistent: a data file is only ever appended to (one line per write, each write
 * acknowledged once its line is in the file), or replaced whole by a rename (compaction writes
 * `<file>~` with everything in it, then renames it over the file). Every file is first opened and
 * its length taken, all in one quick pass; the open handle keeps that version of the file even if
 * a compaction replaces it afterwards. Each file is then read up to that length and cut after its
 * last complete line (a write under way at that instant is left out: it was not acknowledged yet).
 * So each collection is exactly as it was at the instant its file was opened, and every write
 * acknowledged before the snapshot began is in it. Collections are opened within the same pass,
 * a few milliseconds apart, not at one instant together.
 *
 * A line that is not a complete object anywhere but at the end is corruption: read() rejects
 * naming the file and line.
 */
export async function snapshotEmbeddedStore(dir: string): Promise<EmbeddedSnapshot> {
  dir = resolve(dir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { collections: [], close: () => Promise.resolve() };
    throw err;
  }
  const present = new Set(names);
  const handles: FileHandle[] = [];
  const collections: SnapshotCollection[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(handles.splice(0).map((h) => h.close().catch(() => undefined)));
  };
  try {
    const files = names.filter((f) => collectionOfDataFile(f) !== undefined);
    // A crash inside a compaction's rename can leave only `<file>~` (nedb renames it back at load).
    for (const f of names) if (f.endsWith('.db~') && !present.has(f.slice(0, -1)) && collectionOfDataFile(f.slice(0, -1))) files.push(f);
    files.sort();
    const opened: { name: string; file: string; handle: FileHandle; size: number }[] = [];
    for (const f of files) {
      const file = join(dir, f);
      let handle: FileHandle;
      try {
        handle = await open(file, 'r');
      } catch (err) {
        // Renamed away between the listing and the open (a compaction): open the name again.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        if (f.endsWith('~')) continue;
        handle = await open(file, 'r');
      }
      handles.push(handle);
      opened.push({ name: collectionOfDataFile(f.replace(/~$/, '')) as string, file, handle, size: (await handle.stat()).size });
    }
    for (const o of opened) {
      const bytes = { value: o.size };
      const read = (): Promise<Doc[]> => replay(o.handle, o.size, o.file, bytes);
      collections.push({
        name: o.name,
        file: o.file,
        get bytes() {
          return bytes.value;
        },
        read,
        async *pages(size = 1000) {
          const docs = await read();
          for (let i = 0; i < docs.length; i += size) yield docs.slice(i, i + size);
        },
        count: async () => (await read()).length,
      });
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { collections, close };
}

type Raw = { _id: string } & Record<string, unknown>;

/** Reads a data file up to `size` and applies its lines in order, as nedb's loader does. */
async function replay(handle: FileHandle, size: number, file: string, kept: { value: number }): Promise<Doc[]> {
  const buf = Buffer.alloc(size);
  let got = 0;
  while (got < size) {
    const { bytesRead } = await handle.read(buf, got, size - got, got);
    // Shorter than it was (a failed append cut off again on a full disk): what is there counts.
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  const end = buf.lastIndexOf(0x0a, got - 1) + 1;
  kept.value = end;
  const docs = new Map<string, Raw>();
  let start = 0;
  let line = 0;
  while (start < end) {
    const nl = buf.indexOf(0x0a, start);
    line++;
    const text = buf.toString('utf8', start, nl);
    start = nl + 1;
    if (text === '') continue;
    let raw: unknown;
    try {
      raw = nedbModel.deserialize(text);
    } catch (err) {
      throw new Error(`${file}: line ${line} is corrupt (${(err as Error).message})`, { cause: err });
    }
    if (typeof raw !== 'object' || raw === null) throw new Error(`${file}: line ${line} is not an object`);
    const r = raw as Record<string, unknown>;
    if ('$$indexCreated' in r || '$$indexRemoved' in r) continue;
    const id = r._id;
    if (typeof id !== 'string') throw new Error(`${file}: line ${line} has no string _id`);
    if (r.$$deleted === true) docs.delete(id);
    else docs.set(id, r as Raw);
  }
  const raws = [...docs.values()];
  raws.sort((a, b) => seqOf(a) - seqOf(b));
  return raws.map(toDoc);
}

const seqOf = (raw: Raw): number => (typeof raw[SEQ] === 'number' ? raw[SEQ] : 0);

function toDoc(raw: Raw): Doc {
  const out: Record<string, unknown> = { id: raw._id };
  for (const key of Object.keys(raw)) if (key !== '_id' && key !== SEQ) out[key] = raw[key];
  return out as Doc;
}
