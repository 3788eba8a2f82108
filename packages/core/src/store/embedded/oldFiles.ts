import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Doc } from '../Store.js';

/**
 * The old embedded store's data files, read without nedb, for their conversion to the engine
 * (convert.ts). A data file `<name>.db` (`a.b.db` for collection `a/b`) is nedb's JSON lines: one
 * line per write (`{"_id": ..., ..., "__svcSeq": n}`, the object as written; `{"$$deleted": true,
 * "_id": ...}`; `{"$$indexCreated": ...}` / `{"$$indexRemoved": ...}`), dates as `{"$$date": ms}`.
 * The last line of an `_id` is its object. Lines end at `\n` only: svc before issue 38 wrote
 * U+2028, U+2029 and U+0085 raw inside strings, and they are characters of the line here (nedb's
 * own loader took them for line ends and refused such files).
 */

/** One old data file of a folder. */
export interface OldDataFile {
  collection: string;
  /** The file read: `<name>.db`, or `<name>.db~` when a compaction was cut short before its rename. */
  file: string;
}

/** `a.b.db` -> `a/b`; undefined for any other file. */
export function collectionOfOldFile(file: string): string | undefined {
  const m = /^([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\.db$/.exec(file);
  return m ? (m[1] as string).replaceAll('.', '/') : undefined;
}

/** The old data files of a folder (its top level), by collection name. */
export async function oldDataFiles(dir: string): Promise<OldDataFile[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const present = new Set(names);
  const out: OldDataFile[] = [];
  for (const name of names) {
    const plain = collectionOfOldFile(name);
    if (plain !== undefined) out.push({ collection: plain, file: name });
    // nedb renames `<file>~` back when the file itself is missing (a crash inside a compaction).
    else if (name.endsWith('.db~') && !present.has(name.slice(0, -1))) {
      const collection = collectionOfOldFile(name.slice(0, -1));
      if (collection !== undefined) out.push({ collection, file: name });
    }
  }
  return out.sort((a, b) => (a.collection < b.collection ? -1 : a.collection > b.collection ? 1 : 0));
}

/** What a data file holds, read whole. */
export interface OldCollection {
  /** The objects in insertion order (the old store's `__svcSeq`), as the old store answered them. */
  docs(): Generator<Doc>;
  count: number;
  /** SHA-256 of the file's bytes (hex): it tells a file changed since it was read. */
  fileHash: string;
  /** Bytes of a torn last line that was left out (a write never acknowledged), 0 when none. */
  tornBytes: number;
}

const SEQ = '__svcSeq';

/** nedb's reviver: `{"$$date": ms}` is a date. */
function reviver(key: string, value: unknown): unknown {
  if (key === '$$date') return new Date(value as number);
  if (typeof value !== 'object' || value === null) return value;
  const date = (value as { $$date?: unknown }).$$date;
  return date instanceof Date ? date : value;
}

/**
 * Reads a data file and replays its lines as the old store did (a torn last line, one without its
 * `\n` that is not JSON, is left out: it was never acknowledged; a bad line anywhere else throws
 * naming the file and line). Only the place of each object's last line is kept until docs() reads
 * them again, so memory holds the file and an index, not every object.
 */
export async function readOldCollection(dir: string, file: string): Promise<OldCollection> {
  const path = join(dir, file);
  const buf = await readFile(path);
  const fileHash = createHash('sha256').update(buf).digest('hex');
  const live = new Map<string, { seq: number; start: number; end: number }>();
  let start = 0;
  let line = 0;
  let tornBytes = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0x0a, start);
    const last = end < 0;
    if (last) end = buf.length;
    line++;
    const at = start;
    start = end + 1;
    if (end === at) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(buf.toString('utf8', at, end), reviver);
    } catch (err) {
      if (last) {
        tornBytes = end - at;
        break;
      }
      throw new Error(`${path}: line ${line} is corrupt (${(err as Error).message})`, { cause: err });
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${path}: line ${line} is not an object`);
    const r = raw as Record<string, unknown>;
    if ('$$indexCreated' in r || '$$indexRemoved' in r) continue;
    const id = r._id;
    if (typeof id !== 'string') throw new Error(`${path}: line ${line} has no string _id`);
    if (r.$$deleted === true) {
      live.delete(id);
      continue;
    }
    // A later line of the same object keeps its place in the order (nedb updates keep __svcSeq).
    live.delete(id);
    live.set(id, { seq: typeof r[SEQ] === 'number' ? r[SEQ] : 0, start: at, end });
  }
  // Stable: objects of equal (or no) __svcSeq keep the order of their last lines.
  const order = [...live.values()].sort((a, b) => a.seq - b.seq);
  return {
    count: order.length,
    fileHash,
    tornBytes,
    *docs() {
      for (const place of order) yield toDoc(JSON.parse(buf.toString('utf8', place.start, place.end), reviver) as Record<string, unknown>);
    },
  };
}

/** The old store's answer for a stored line: `id` first, without `_id` and `__svcSeq`. */
function toDoc(raw: Record<string, unknown>): Doc {
  const out: Record<string, unknown> = { id: raw._id };
  // defineProperty: a stored "__proto__" key stays a property (an assignment would set the prototype).
  for (const key of Object.keys(raw)) if (key !== '_id' && key !== SEQ) Object.defineProperty(out, key, { value: raw[key], enumerable: true, writable: true, configurable: true });
  return out as Doc;
}
