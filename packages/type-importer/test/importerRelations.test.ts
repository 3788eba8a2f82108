import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '@svc/server';
import { json, ROOT, startImporterApp, waitForImport, writeResource } from './importerApp.js';
import { MONGODB_URL, ownDatabase, requireMongo } from './source.js';

// Issue 25: the importer keeps relations. A reference in the source (an ObjectId) becomes the
// referred object's id (its hex string), the same text the referred object's own _id becomes, so
// a `relation` property declared in config.json points at the imported objects and `$expand`
// follows it. The declared relation stays as written (existing definitions win over inferred ones).

const enabled = requireMongo('importer relations test');

describe.runIf(enabled)('Importer: relations survive an import', () => {
  let source: Awaited<ReturnType<typeof ownDatabase>>;
  let dir: string;
  let app: RunningApp | undefined;
  const authors = [new ObjectId(), new ObjectId()];

  beforeAll(async () => {
    source = await ownDatabase(MONGODB_URL ?? '', 'svc_imp_rel');
    const db = source.client.db(source.name);
    await db.collection('authors').insertMany(authors.map((_id, n) => ({ _id, name: `author ${n}` })));
    await db.collection('books').insertMany([
      { title: 'a', author: authors[0] },
      { title: 'b', author: authors[1] },
      { title: 'c', author: authors[0] },
    ]);
    dir = await mkdtemp(join(tmpdir(), 'svc-importer-rel-'));
    await writeResource(dir, 'authors', { type: 'Collection', properties: { name: { type: 'string' } } });
    await writeResource(dir, 'books', { type: 'Collection', properties: { title: { type: 'string' }, author: { type: 'relation', collection: 'authors', onDelete: 'restrict' } } });
    await writeResource(dir, 'import', { type: 'Importer', url: MONGODB_URL, database: source.name, collections: ['books', 'authors'] });
    app = await startImporterApp(dir);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await source?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('references arrive as the ids of the imported objects; the relation declaration is kept; $expand and onDelete follow them', async () => {
    expect((await json(`${app?.url}/import/run`, { method: 'POST', headers: ROOT })).status).toBe(202);
    const status = await waitForImport(`${app?.url}/import`);
    expect(status.state).toBe('done');
    const config = JSON.parse(await readFile(join(dir, 'resources', 'books', 'config.json'), 'utf8')) as { properties: Record<string, unknown> };
    expect(config.properties.author).toEqual({ type: 'relation', collection: 'authors', onDelete: 'restrict' });
    await app?.close();
    app = await startImporterApp(dir);
    const books = (await json(`${app.url}/books?${encodeURIComponent(JSON.stringify({ $expand: ['author'], $sort: { title: 1 } }))}`)).body as { title: string; author: { id: string; name: string } | null }[];
    expect(books.map((b) => [b.title, b.author?.id, b.author?.name])).toEqual([
      ['a', authors[0]?.toHexString(), 'author 0'],
      ['b', authors[1]?.toHexString(), 'author 1'],
      ['c', authors[0]?.toHexString(), 'author 0'],
    ]);
    expect((await json(`${app.url}/authors/${authors[0]?.toHexString()}`, { method: 'DELETE', headers: ROOT })).status).toBe(409);
  });
});
