import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Double, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '@svc/server';
import type { ImportStatus } from '@svc/type-importer';
import { json, ROOT, startImporterApp, waitForImport, writeResource } from './importerApp.js';
import { MONGODB_URL, ownDatabase, requireMongo } from './source.js';

const enabled = requireMongo('importer tests into the mongodb store');
const url = MONGODB_URL ?? '';

/** The URL of database `name` on the test server. */
function dbUrl(name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

describe.runIf(enabled)('Importer: into the mongodb store, re-runs carry changes, clashes are refused', () => {
  let source: Awaited<ReturnType<typeof ownDatabase>>;
  let target: Awaited<ReturnType<typeof ownDatabase>>;
  let dir: string;
  let app: RunningApp;
  const noteIds = Array.from({ length: 50 }, () => new ObjectId());

  beforeAll(async () => {
    source = await ownDatabase(url, 'svc_imp_src');
    target = await ownDatabase(url, 'svc_imp_tgt');
    const db = source.client.db(source.name);
    await db.collection('notes').insertMany(noteIds.map((_id, n) => ({ _id, title: `note ${n}`, body: `text ${n}`, n })));
    await db.collection<{ _id: string }>('orders.2024').insertMany(
      Array.from({ length: 10 }, (_, k) => ({ _id: `o${k}`, id: 100 + k, total: new Double(k + 0.25), items: [{ sku: `s${k}`, qty: k }] })),
    );
    dir = await mkdtemp(join(tmpdir(), 'svc-importer-mongo-'));
    await writeResource(dir, 'import', { type: 'Importer', url, database: source.name, batchSize: 7 });
    await writeResource(dir, 'missing', { type: 'Importer', url, database: source.name, collections: ['notes', 'nope'] });
    await writeResource(dir, 'clash', { type: 'Importer', url, database: source.name, collections: ['notes'], rename: { notes: 'import' } });
    app = await startImporterApp(dir, dbUrl(target.name));
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await source?.drop();
    await target?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function run(importer = 'import'): Promise<ImportStatus> {
    expect((await json(`${app.url}/${importer}/run`, { method: 'POST', headers: ROOT })).status).toBe(202);
    return waitForImport(`${app.url}/${importer}`);
  }

  it('imports every collection of the database (no list given), naming resources after them', async () => {
    const status = await run();
    expect(status).toMatchObject({ state: 'done', total: 60, read: 60, restartNeeded: true });
    expect(status.collections.map((c) => [c.source, c.resource, c.inserted, c.config])).toEqual([
      ['notes', 'notes', 50, 'created'],
      ['orders.2024', 'orders-2024', 10, 'created'],
    ]);
    expect(status.collections[1]).toMatchObject({
      renamedId: true,
      properties: { total: { type: 'number' }, items: { type: 'array' }, originalId: { type: 'number' } },
    });
    await app.close();
    app = await startImporterApp(dir, dbUrl(target.name));
    expect((await json(`${app.url}/notes/count`, { headers: ROOT })).body).toEqual({ count: 50 });
    expect((await json(`${app.url}/orders-2024/o3`)).body).toEqual({ id: 'o3', originalId: 103, total: 3.25, items: [{ sku: 's3', qty: 3 }] });
  });

  it('a second run updates changed objects, removes vanished properties, adds new ones, and duplicates nothing', async () => {
    const notes = source.client.db(source.name).collection('notes');
    await notes.updateOne({ _id: noteIds[0] }, { $set: { title: 'changed' } });
    await notes.updateOne({ _id: noteIds[1] }, { $unset: { body: '' } });
    const added = new ObjectId();
    await notes.insertOne({ _id: added, title: 'new', n: 50 });
    const status = await run();
    expect(status.state).toBe('done');
    expect(status.collections.map((c) => [c.resource, c.inserted, c.updated, c.unchanged, c.failed, c.config])).toEqual([
      ['notes', 1, 2, 48, 0, 'unchanged'],
      ['orders-2024', 0, 0, 10, 0, 'unchanged'],
    ]);
    expect(status.restartNeeded).toBe(false);
    expect((await json(`${app.url}/notes/count`, { headers: ROOT })).body).toEqual({ count: 51 });
    expect((await json(`${app.url}/notes/${noteIds[0]?.toHexString()}`)).body).toMatchObject({ title: 'changed', body: 'text 0' });
    expect((await json(`${app.url}/notes/${noteIds[1]?.toHexString()}`)).body).toEqual({ id: noteIds[1]?.toHexString(), title: 'note 1', n: 1 });
    expect((await json(`${app.url}/notes/${added.toHexString()}`)).body).toEqual({ id: added.toHexString(), title: 'new', n: 50 });
  });

  it('refuses to import into a resource of another type, and says why in the status', async () => {
    const status = await run('clash');
    expect(status.state).toBe('failed');
    expect(status.error).toBe('resources/import has type Importer, not Collection: import it under another name with "rename"');
    // Refused while planning: nothing was read, nothing written.
    expect(status.collections).toEqual([]);
    expect(status.read).toBe(0);
  });

  it('refuses a listed collection that the source does not have', async () => {
    const status = await run('missing');
    expect(status).toMatchObject({ state: 'failed', error: `database ${source.name} has no collection nope`, read: 0 });
  });
});
