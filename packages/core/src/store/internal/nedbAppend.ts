import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { nedbModel as model } from './nedbModel.js';

/** The part of nedb's Persistence this module replaces (documented in nedb's source, not typed). */
interface Persistence {
  filename: string;
  inMemoryOnly: boolean;
  modes: { fileMode: number };
  persistNewStateAsync(docs: unknown[]): Promise<void>;
  persistCachedDatabaseAsync(): Promise<void>;
}

/**
 * Makes a nedb datastore append through one file handle kept open, instead of nedb's
 * `fs.promises.appendFile` per write (open + write + close, three trips through the thread pool).
 * The line format is nedb's own. An append resolves only once its bytes were written, so a write
 * is still acknowledged only after it reached the file (not fsynced, as before).
 *
 * nedb rewrites the datafile on load and compaction (a new file renamed over the old one); the
 * handle is closed around that so the next append opens the new file. nedb runs appends and
 * rewrites in its executor, one at a time.
 *
 * Answers a function that closes the handle.
 */
export function appendThroughOpenHandle(db: object): () => Promise<void> {
  const persistence = Reflect.get(db, 'persistence') as Persistence | undefined;
  if (!persistence || typeof persistence.persistNewStateAsync !== 'function' || typeof persistence.persistCachedDatabaseAsync !== 'function') {
    throw new Error('nedb without the expected persistence layer');
  }
  if (persistence.inMemoryOnly) return () => Promise.resolve();
  let handle: FileHandle | undefined;
  let opening: Promise<FileHandle> | undefined;

  const close = async (): Promise<void> => {
    const h = handle ?? (opening ? await opening.catch(() => undefined) : undefined);
    handle = undefined;
    opening = undefined;
    await h?.close();
  };

  const append = async (text: string): Promise<void> => {
    const h = handle ?? (await (opening ??= open(persistence.filename, 'a', persistence.modes.fileMode).then((fh) => (handle = fh))));
    const bytes = Buffer.from(text, 'utf8');
    let offset = 0;
    while (offset < bytes.length) {
      const { bytesWritten } = await h.write(bytes, offset, bytes.length - offset);
      offset += bytesWritten;
    }
  };

  persistence.persistNewStateAsync = async (docs: unknown[]): Promise<void> => {
    let text = '';
    for (const doc of docs) text += `${model.serialize(doc)}\n`;
    if (text.length > 0) await append(text);
  };
  const rewrite = persistence.persistCachedDatabaseAsync.bind(persistence);
  persistence.persistCachedDatabaseAsync = async (): Promise<void> => {
    await close();
    try {
      await rewrite();
    } finally {
      await close();
    }
  };
  return close;
}
