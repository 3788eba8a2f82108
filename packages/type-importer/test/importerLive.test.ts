import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { LiveEvent, SvcClient } from '@svc/client';
import type { RunningApp } from '@svc/server';
import { ROOT, json, startImporterApp, waitForImport, writeResource } from './importerApp.js';
import { MONGODB_URL, requireMongo } from './source.js';

// What an import writes reaches the live queries of the collection it writes into, each object as
// the subscriber's GET would show it (private properties left out), on both target stores.

const enabled = requireMongo('importer live-query tests (FerretDB source)');
const url = MONGODB_URL ?? '';
const SOURCE = `svc_import_live_${process.pid}_${Date.now()}`;

type Note = { id: string; title?: string; secret?: string };

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const TARGETS = [
  { name: 'embedded', db: () => undefined },
  { name: 'mongodb', db: () => `${url.replace(/\/$/, '')}/${SOURCE}_target` },
];

describe.runIf(enabled).each(TARGETS)('Importer: imports reach live queries ($name target store)', (target) => {
  let dir: string;
  let app: RunningApp;
  let source: MongoClient;
  const clients: SvcClient[] = [];

  beforeAll(async () => {
    source = new MongoClient(url);
    await source.connect();
    const notes = source.db(`${SOURCE}_${target.name}`).collection('notes');
    await notes.insertMany([
      { _id: 'n1' as never, title: 'one', secret: 'private 1' },
      { _id: 'n2' as never, title: 'two', secret: 'private 2' },
    ]);
    dir = await mkdtemp(join(tmpdir(), 'svc-importer-live-'));
    await writeResource(dir, 'notes', { type: 'Collection', properties: { title: { type: 'string' }, secret: { type: 'string', private: true } } });
    await writeResource(dir, 'import', { type: 'Importer', url, database: `${SOURCE}_${target.name}`, collections: ['notes'] });
    app = await startImporterApp(dir, target.db());
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.close();
    await app?.close();
    await source?.db(`${SOURCE}_${target.name}`).dropDatabase();
    if (target.db() !== undefined) await source?.db(`${SOURCE}_target`).dropDatabase();
    await source?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('each object imported is a create, each one changed by a re-run an update, without private properties', async () => {
    const client = createClient(app.url);
    clients.push(client);
    await new Promise<void>((resolve) => client.socketReady(resolve));
    const events: LiveEvent<Note>[] = [];
    client.notes!.subscribe<Note>({}, (e) => events.push(e), { snapshot: true });
    await until(() => events.length === 1);
    expect(events[0]).toEqual({ type: 'snapshot', objects: [] });

    expect((await json(`${app.url}/import/run`, { method: 'POST', headers: ROOT })).status).toBe(202);
    expect((await waitForImport(`${app.url}/import`)).state).toBe('done');
    await until(() => events.length === 3);
    expect(events.slice(1).map((e) => ('object' in e ? `${e.type}:${e.object.title}` : e.type)).sort()).toEqual(['create:one', 'create:two']);

    // A re-run after the source changed: the changed object is an update, the unchanged one nothing.
    await source.db(`${SOURCE}_${target.name}`).collection('notes').updateOne({ _id: 'n2' as never }, { $set: { title: 'two, edited' } });
    expect((await json(`${app.url}/import/run`, { method: 'POST', headers: ROOT })).status).toBe(202);
    expect((await waitForImport(`${app.url}/import`)).state).toBe('done');
    await until(() => events.length === 4);
    await new Promise((r) => setTimeout(r, 300));
    expect(events.slice(3).map((e) => ('object' in e ? `${e.type}:${e.object.title}` : e.type))).toEqual(['update:two, edited']);
    expect(JSON.stringify(events)).not.toContain('private');
  });
});
