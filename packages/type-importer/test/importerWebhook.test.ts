import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { importerType } from '@svc/type-importer';
import { webhookType } from '@svc/type-webhook';
import { ROOT, json, waitForImport, writeResource } from './importerApp.js';
import { MONGODB_URL, requireMongo } from './source.js';

// What an import writes is told to the collection's webhooks as its own writes are: a Webhook on
// creates and updates only (no deletes, so no reads before deletes: `wantsChanges` is false for
// it) is delivered each object an import creates, and each one a re-run changes.

const enabled = requireMongo('importer webhook tests (FerretDB source)');
const url = MONGODB_URL ?? '';
const SOURCE = `svc_import_hook_${process.pid}_${Date.now()}`;

describe.runIf(enabled)('Importer: imports reach the collection\'s webhooks', () => {
  let dir: string;
  let app: RunningApp;
  let source: MongoClient;
  let receiver: Server;
  const received: { event: string; object: { id: string; title?: string } }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push(JSON.parse(body) as (typeof received)[number]);
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as { port: number }).port;
    source = new MongoClient(url);
    await source.connect();
    await source.db(SOURCE).collection('notes').insertMany([
      { _id: 'n1' as never, title: 'one' },
      { _id: 'n2' as never, title: 'two' },
    ]);
    dir = await mkdtemp(join(tmpdir(), 'svc-importer-hook-'));
    await writeFile(join(dir, 'app.json'), JSON.stringify({ outbound: { allow: [`127.0.0.1:${port}`] } }));
    await writeResource(dir, 'notes', { type: 'Collection', properties: { title: { type: 'string' } } });
    await writeResource(dir, 'import', { type: 'Importer', url, database: SOURCE, collections: ['notes'] });
    await writeResource(dir, 'hooks', { type: 'Webhook', collection: 'notes', events: ['create', 'update'], url: `http://127.0.0.1:${port}/hook`, secret: 'importer-hook-secret-0123456789' });
    app = await startApp({ appDir: dir, port: 0, logger: silentLogger, resourceTypes: [importerType, webhookType] });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await source?.db(SOURCE).dropDatabase();
    await source?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('each object imported is a create delivery, each one a re-run changed an update', async () => {
    expect((await json(`${app.url}/import/run`, { method: 'POST', headers: ROOT })).status).toBe(202);
    expect((await waitForImport(`${app.url}/import`)).state).toBe('done');
    const until = async (n: number): Promise<void> => {
      const end = Date.now() + 15_000;
      while (received.length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    };
    await until(2);
    expect(received.map((p) => `${p.event}:${String(p.object.title)}`).sort()).toEqual(['create:one', 'create:two']);
    await source.db(SOURCE).collection('notes').updateOne({ _id: 'n2' as never }, { $set: { title: 'two, edited' } });
    expect((await json(`${app.url}/import/run`, { method: 'POST', headers: ROOT })).status).toBe(202);
    expect((await waitForImport(`${app.url}/import`)).state).toBe('done');
    await until(3);
    expect(received.map((p) => `${p.event}:${String(p.object.title)}`).sort()).toEqual(['create:one', 'create:two', 'update:two, edited']);
  });
});
