import { request } from 'node:http';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import type { Collection } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { bucketType } from '@svc/type-bucket';
import { startS3 } from './s3Server.js';
import type { TestS3 } from './s3Server.js';

/**
 * The local folder where file properties are received (issue 43): two apps whose buckets have
 * the same name (two S3-compatible servers, or two environments) each have their own, so that the
 * orphan sweep of one, with `orphanGraceMinutes: 0`, never removes an upload the other is
 * receiving; and the sweep of an app never removes its own uploads in progress (bucket or disk).
 */
const BUCKET = 'same-name';

interface TestApp {
  app: RunningApp;
  dir: string;
  s3: TestS3 | undefined;
  posts: Collection;
  tempDir: string;
}

/** An app with a file property kept in a Bucket on its own s3rver (bucket name BUCKET), or on the disk. */
async function startFilesApp(store: 'bucket' | 'disk' = 'bucket', watch = false): Promise<TestApp> {
  const s3 = store === 'bucket' ? await startS3(BUCKET) : undefined;
  const dir = await mkdtemp(join(tmpdir(), 'svc-files-tmpdir-'));
  await mkdir(join(dir, 'resources', 'posts'), { recursive: true });
  if (s3 !== undefined) {
    await mkdir(join(dir, 'resources', 'media'), { recursive: true });
    await writeFile(join(dir, 'resources', 'media', 'config.json'), JSON.stringify({ type: 'Bucket', bucket: s3.bucket, key: s3.key, secret: s3.secret, endpoint: s3.endpoint }));
  }
  await writeFile(join(dir, 'resources', 'posts', 'config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, doc: { type: 'file' } } }));
  await writeFile(join(dir, 'app.json'), JSON.stringify({ files: { ...(s3 ? { bucket: 'media' } : {}), orphanGraceMinutes: 0, sweepMinutes: 0 } }));
  const app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger, resourceTypes: [bucketType], ...(watch ? { watch: true, env: 'development' as const } : {}) });
  const posts = app.server.resources.find((r) => r.path === '/posts') as Collection;
  const tempDir = s3 !== undefined ? (app.server.resources.find((r) => r.path === '/media')?.fileStorage?.tempDir as string) : join(dir, 'data', 'files', '.tmp');
  return { app, dir, s3, posts, tempDir };
}

/** Sends half of a file to `a`, runs the sweep of `sweeper` (grace 0; `between` first), sends the rest: the upload must succeed whole. */
async function uploadAcrossSweep(a: TestApp, sweeper: TestApp, between?: () => Promise<Collection>): Promise<void> {
  const post = (await (await fetch(`${a.app.url}/posts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":"t"}' })).json()) as { id: string };
  const body = Buffer.alloc(300_000, 'x');
  const upload = slowUpload(`${a.app.url}/posts/${post.id}/doc?name=a.txt`, body, 100_000);
  // A's part is on the disk, half received.
  await until(
    () => readdir(a.tempDir).catch(() => [] as string[]),
    (names) => names.some((n) => n.endsWith('.part')),
  );
  await (between ? await between() : sweeper.posts).sweepOrphanFiles();
  const answer = await upload.rest();
  expect(answer.status, answer.body).toBe(200);
  const doc = (JSON.parse(answer.body) as { doc: { size: number; url: string } }).doc;
  expect(doc.size).toBe(body.length);
  const served = await fetch(a.app.url + doc.url);
  expect(served.status).toBe(200);
  expect((await served.arrayBuffer()).byteLength).toBe(body.length);
  // Published: nothing left in the folder, which the next sweep would otherwise clear.
  expect((await readdir(a.tempDir)).filter((n) => n.endsWith('.part'))).toEqual([]);
}

/** Starts a PUT of `size` bytes and sends the first `sent` of them; `rest()` sends the others and resolves the answer. */
function slowUpload(url: string, body: Buffer, sent: number): { rest(): Promise<{ status: number; body: string }> } {
  const target = new URL(url);
  const req = request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: 'PUT', headers: { 'content-length': body.length } });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
  });
  req.write(body.subarray(0, sent));
  return {
    rest() {
      req.end(body.subarray(sent));
      return answer;
    },
  };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('timed out waiting');
}

describe('the receiving folder of file properties', () => {
  const apps: TestApp[] = [];
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    apps.push((a = await startFilesApp()), (b = await startFilesApp()));
  });
  afterAll(async () => {
    for (const x of apps) {
      await x.app.close();
      await x.s3?.close();
      await rm(x.dir, { recursive: true, force: true });
      await rm(x.tempDir, { recursive: true, force: true });
    }
  });

  it('of a Bucket is the app own: the sweep of another app with a bucket of the same name leaves its uploads in progress', async () => {
    expect(a.tempDir).not.toBe(b.tempDir);
    expect(a.tempDir.startsWith(join(tmpdir(), `svc-files-${BUCKET}-`))).toBe(true);
    await uploadAcrossSweep(a, b);
  });

  it("of a Bucket is left alone by the app's own sweep while an upload is under way (orphanGraceMinutes 0)", async () => {
    await uploadAcrossSweep(a, a);
  });

  it("on the disk is left alone by the app's own sweep while an upload is under way (orphanGraceMinutes 0)", async () => {
    const disk = await startFilesApp('disk');
    apps.push(disk);
    await uploadAcrossSweep(disk, disk);
  });

  it("on the disk is left alone by the sweep of the app's next version after a reload (development) while the previous one receives it", async () => {
    const disk = await startFilesApp('disk', true);
    apps.push(disk);
    await uploadAcrossSweep(disk, disk, async () => {
      // A new property: the watcher reloads, and the new version's collection (a new object) sweeps.
      await writeFile(join(disk.dir, 'resources', 'posts', 'config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, doc: { type: 'file' }, note: { type: 'string' } } }));
      const reloaded = await until(
        async () => disk.app.server.resources.find((r) => r.path === '/posts') as Collection,
        (posts) => posts !== disk.posts,
      );
      return reloaded;
    });
  });

  it('still loses what no process holds: a part left by a killed process', async () => {
    await writeFile(join(a.tempDir, 'left-by-a-kill.part'), 'half');
    await a.posts.sweepOrphanFiles();
    expect(await readdir(a.tempDir)).toEqual([]);
  });
});
