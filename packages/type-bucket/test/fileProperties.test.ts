import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { bucketType } from '@svc/type-bucket';
import { startS3 } from './s3Server.js';
import type { TestS3 } from './s3Server.js';

/**
 * File properties kept in a Bucket resource's bucket (app.json `files.bucket`, issue 43), on a
 * real S3-compatible server (s3rver), on the embedded store and on MongoDB: stored under
 * svc-files/, served by the collection under its rules only (never through the Bucket's own
 * paths), replaced and deleted files gone from the bucket, thumbnails kept there.
 */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const HTML = Buffer.from('<!doctype html><script>alert(document.cookie)</script>');

const stores = process.env.SVC_TEST_MONGODB_URL ? ['embedded', 'mongodb'] : ['embedded'];
if (stores.length === 1) process.stderr.write('SKIPPED file properties in a bucket on MongoDB: SVC_TEST_MONGODB_URL is not set\n');

type FileInfo = { id: string; name: string; size: number; type: string; url: string };
type Post = { id: string; owner?: string; photo?: FileInfo | null; docs?: FileInfo[] };

describe.each(stores)('file properties in a Bucket resource (%s store, s3rver)', (store) => {
  let s3: TestS3;
  let app: RunningApp;
  let dir: string;

  /** Keys in the bucket (s3rver keeps each object as a folder of files named after its key). */
  const bucketKeys = async (prefix: string): Promise<string[]> => {
    const entries = await readdir(join(s3.directory, s3.bucket), { recursive: true });
    const keys = new Set(entries.filter((e) => e.endsWith('._S3rver_object')).map((e) => e.slice(0, -'._S3rver_object'.length)));
    return [...keys].filter((k) => k.startsWith(prefix)).sort();
  };

  // A bucket name of this suite's own; the local folder of received parts (svc-files-<bucket>-<hash>
  // in the temporary folder, the app's own) is removed after the suite.
  const bucketName = `files-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    s3 = await startS3(bucketName);
    dir = await mkdtemp(join(tmpdir(), 'svc-files-bucket-'));
    await mkdir(join(dir, 'resources', 'media'), { recursive: true });
    await mkdir(join(dir, 'resources', 'posts'), { recursive: true });
    await writeFile(join(dir, 'resources', 'media', 'config.json'), JSON.stringify({ type: 'Bucket', bucket: s3.bucket, key: s3.key, secret: s3.secret, endpoint: s3.endpoint }));
    await writeFile(
      join(dir, 'resources', 'posts', 'config.json'),
      JSON.stringify({
        type: 'Collection',
        properties: { owner: { type: 'string' }, photo: { type: 'file', types: ['image/*'], thumbs: ['16x16'] }, docs: { type: 'file', many: true } },
        rules: { read: { owner: { $ne: 'nobody' } } },
      }),
    );
    await writeFile(join(dir, 'app.json'), JSON.stringify({ files: { bucket: 'media', sweepMinutes: 0 } }));
    const mongo = process.env.SVC_TEST_MONGODB_URL;
    const db = store === 'mongodb' && mongo ? `${mongo.replace(/\/$/, '')}/svc_files_${randomBytes(5).toString('hex')}` : undefined;
    app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger, resourceTypes: [bucketType], ...(db ? { db } : {}) });
  });
  afterAll(async () => {
    const received = app?.server.resources.find((r) => r.path === '/media')?.fileStorage?.tempDir;
    await app?.close();
    await s3?.close();
    await rm(dir, { recursive: true, force: true });
    if (received !== undefined) await rm(received, { recursive: true, force: true });
  });

  const put = async (path: string, body: Buffer): Promise<{ status: number; body: Post }> => {
    const res = await fetch(app.url + path, { method: 'PUT', body });
    return { status: res.status, body: (await res.json()) as Post };
  };

  it('files go to svc-files/ in the bucket; replaced and deleted ones leave it; thumbnails are kept there', async () => {
    const post = (await (await fetch(`${app.url}/posts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as Post;
    const first = (await put(`/posts/${post.id}/photo?name=a.png`, PNG)).body.photo as FileInfo;
    const served = await fetch(app.url + first.url);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await served.arrayBuffer()).equals(PNG)).toBe(true);
    expect((await fetch(`${app.url}${first.url}?thumb=16x16`)).status).toBe(200);
    const prefix = `svc-files/posts/${post.id}/`;
    expect(await bucketKeys(prefix)).toEqual([`${prefix}photo/${first.id}`, `${prefix}photo/${first.id}.16x16`]);
    const second = (await put(`/posts/${post.id}/photo?name=b.png`, PNG)).body.photo as FileInfo;
    expect(await bucketKeys(prefix)).toEqual([`${prefix}photo/${second.id}`]);
    expect((await fetch(app.url + first.url)).status).toBe(404);
    const docs = (await put(`/posts/${post.id}/docs?name=page.html`, HTML)).body.docs as FileInfo[];
    const page = await fetch(app.url + (docs[0] as FileInfo).url);
    expect(page.headers.get('content-type')).toBe('application/octet-stream');
    expect(page.headers.get('content-disposition')).toMatch(/^attachment/);
    expect((await fetch(`${app.url}/posts/${post.id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await bucketKeys(prefix)).toEqual([]);
  });

  it("the Bucket's own paths never reach file properties' keys: not read, overwritten or deleted, however the path is written", async () => {
    const post = (await (await fetch(`${app.url}/posts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"owner":"nobody"}' })).json()) as Post;
    const root = { 'svc-ssh-key': 'k' };
    const photo = (await (await fetch(`${app.url}/posts/${post.id}/photo`, { method: 'PUT', body: PNG, headers: root })).json() as Post).photo as FileInfo;
    // The object's read rule hides it from everyone but root: so is its file, by its URL.
    expect((await fetch(app.url + photo.url)).status).toBe(404);
    expect((await fetch(app.url + photo.url, { headers: root })).status).toBe(200);
    const key = `svc-files/posts/${post.id}/photo/${photo.id}`;
    for (const [method, path] of [
      ['GET', `/media/${key}`],
      ['PUT', `/media/${key}`],
      ['POST', `/media/${key}`],
      ['DELETE', `/media/${key}`],
      ['GET', `/media/svc-files%2Fposts%2F${post.id}%2Fphoto%2F${photo.id}`],
    ] as const) {
      const res = await fetch(app.url + path, { method, ...(method === 'PUT' || method === 'POST' ? { body: 'x' } : {}) });
      expect([400, 404]).toContain(res.status);
    }
    expect(await bucketKeys(key)).toEqual([key]);
    expect((await fetch(app.url + photo.url, { headers: root })).status).toBe(200);
  });
});
