import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFileuploadApp } from './fileuploadApp.js';
import type { FileuploadApp } from './fileuploadApp.js';

// Issue 22: the records of a Fileupload live in the app's store; on MongoDB (FerretDB here) in
// dpd-fileupload's collection `<resource>fileupload`, where a Deployd app's records already are.

const MONGO = process.env.SVC_TEST_MONGODB_URL;
if (!MONGO) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_MONGODB_URL is not set');
  console.log('skipping the Fileupload MongoDB test: SVC_TEST_MONGODB_URL is not set');
}

describe.skipIf(!MONGO)('Fileupload on MongoDB', () => {
  const dbName = `svc_fileupload_${randomBytes(5).toString('hex')}`;
  let client: MongoClient;
  let app: FileuploadApp;

  beforeAll(async () => {
    client = new MongoClient(MONGO as string);
    await client.connect();
    // A record Deployd's dpd-fileupload wrote before the migration.
    await client.db(dbName).collection('fileuploadfileupload').insertOne({ _id: 'aaaaaaaaaaaaaaaa' as never, filename: 'old.png', filesize: 3, creationDate: 1, subdir: 'photos' });
    app = await startFileuploadApp({ db: `${(MONGO as string).replace(/\/$/, '')}/${dbName}` });
  });
  afterAll(async () => {
    await app?.close();
    await client?.db(dbName).dropDatabase().catch(() => undefined);
    await client?.close();
  });

  it('uploads, lists (with Deployd-era records), filters, fetches by id and deletes', async () => {
    const data = new FormData();
    data.append('file', new Blob(['abc']), 'new.png');
    data.append('file', new Blob(['abcdef']), 'big.png');
    const res = await fetch(`${app.url}/fileupload?subdir=photos&rank=2`, { method: 'POST', body: data });
    expect(res.status).toBe(200);
    const stored = (await res.json()) as { id: string; filename: string }[];
    const list = (await (await fetch(`${app.url}/fileupload?subdir=photos`)).json()) as { id: string; filename: string }[];
    expect(list.map((r) => r.filename).sort()).toEqual(['big.png', 'new.png', 'old.png']);
    expect(list.find((r) => r.filename === 'old.png')?.id).toBe('aaaaaaaaaaaaaaaa');
    const ranked = (await (await fetch(`${app.url}/fileupload?rank=2&${encodeURIComponent('$sort')}=${encodeURIComponent('{"filesize":-1}')}`)).json()) as { filename: string }[];
    expect(ranked.map((r) => r.filename)).toEqual(['big.png', 'new.png']);
    expect(await (await fetch(`${app.url}/fileupload/${stored[0]?.id}`)).json()).toMatchObject({ filename: 'new.png', rank: 2 });
    expect((await fetch(`${app.url}/fileupload/${stored[0]?.id}`, { method: 'DELETE' })).status).toBe(200);
    expect(await client.db(dbName).collection('fileuploadfileupload').countDocuments()).toBe(2);
  });
});
