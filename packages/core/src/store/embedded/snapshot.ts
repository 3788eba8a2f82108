import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import type { Doc } from '../Store.js';
import type { EmbeddedSnapshot, SnapshotCollection } from '../embeddedSnapshot.js';
import { decodeDoc } from './codec.js';
import { ENGINE_FILE, sqlite } from './engine.js';
import { ident } from './sqlText.js';

/** Objects read at a time by a snapshot's pages. */
const PAGE = 1000;

/**
 * A consistent snapshot of the engine's database, taken on a connection of its own (read-only),
 * so that it works while a server writes to it (an online backup: `svc backup`, the dashboard's,
 * the scheduled ones) and does not stop it: one read transaction over every collection.
 *
 * Why it is consistent: in WAL mode a read transaction sees the database as it was at its first
 * read, whatever is committed after (SQLite keeps the pages it needs in the WAL until it ends),
 * and the writer is never blocked by it. So every collection is as it was at one instant, and
 * every write acknowledged before the snapshot began is in it. A long snapshot only keeps the WAL
 * from being checkpointed past its start (it grows meanwhile; the next checkpoint after close()
 * catches up).
 */
export async function snapshotEngineStore(dir: string): Promise<EmbeddedSnapshot> {
  const file = join(resolve(dir), ENGINE_FILE);
  if (!existsSync(file)) return { collections: [], close: () => Promise.resolve() };
  // busy timeout: a connection that finds a WAL to recover (after a crash) waits for the lock.
  const db: DatabaseSync = new (sqlite().DatabaseSync)(file, { readOnly: true, timeout: 10_000 });
  let open = true;
  const close = (): Promise<void> => {
    if (open) {
      open = false;
      try {
        if (db.isTransaction) db.exec('COMMIT');
      } finally {
        db.close();
      }
    }
    return Promise.resolve();
  };
  try {
    db.exec('BEGIN');
    const known = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'svc_collections'").get();
    const tables = known === undefined ? [] : (db.prepare('SELECT name, tbl FROM svc_collections ORDER BY name').all() as { name: string; tbl: string }[]);
    const collections = tables.map(({ name, tbl }): SnapshotCollection => {
      const table = ident(tbl);
      const pages = async function* (size = PAGE): AsyncGenerator<Doc[]> {
        const statement = db.prepare(`SELECT seq, doc FROM ${table} WHERE seq > ? ORDER BY seq LIMIT ?`);
        let after = 0;
        for (;;) {
          if (!open) throw new Error('the snapshot is closed');
          const rows = statement.all(after, size) as { seq: number; doc: string }[];
          if (rows.length === 0) return;
          after = (rows[rows.length - 1] as { seq: number }).seq;
          yield rows.map((row) => decodeDoc(row.doc));
        }
      };
      return {
        name,
        file,
        bytes: 0,
        pages,
        count: () => Promise.resolve((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n),
        async read() {
          const docs: Doc[] = [];
          for await (const page of pages()) for (const doc of page) docs.push(doc);
          return docs;
        },
      };
    });
    return { collections, close };
  } catch (err) {
    await close();
    throw err;
  }
}
