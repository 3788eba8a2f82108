import http from 'node:http';
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
 * The local folder where a Bucket's file properties are received (issue 43): two apps whose
 * buckets have the same name (two S3-compatible servers, or two environments) each have their
 * own, so that the orphan sweep of one, with `orphanGraceMinutes: 0`, never removes an upload
 * the other is receiving.
 */
const BUCKET = 'same-name';

interface TestApp {
  app: RunningApp;
  dir: string;
  s3: TestS3;
  posts: Collection;
  tempDir: string;
}

async function startFilesApp(): Promise<TestApp> {
  const s3 = await startS3(BUCKET);
  const dir = await mkdtemp(join(tmpdir(), 'svc-files-tmpdir-'));
  await mkdir(join(dir, 'resources', 'media'), { recursive: true });
  await mkdir(join(dir, 'resources', 'posts'), { recursive: true });
  await writeFile(join(dir, 'resources', 'media', 'config.json'), JSON.stringify({ type: 'Bucket', bucket: s3.bucket, key: s3.key, secret: s3.secret, endpoint: s3.endpoint }));
  await writeFile(join(dir, 'resources', 'posts', 'config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, doc: { type: 'file' } } }));
  await writeFile(join(dir, 'app.json'), JSON.stringify({ files: { bucket: 'media', orphanGraceMinutes: 0, sweepMinutes: 0 } }));
  const app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger, resourceTypes: [bucketType] });
  const posts = app.server.resources.find((r) => r.path === '/posts') as Collection;
  const tempDir = app.server.resources.find((r) => r.path === '/media')?.fileStorage?.tempDir as string;
  return { app, dir, s3, posts, tempDir };
}

/** Starts a PUT of `size` bytes and sends the first `sent` of them; `rest()` sends the others and resolves the answer. */
function slowUpload(url: string, body: Buffer, sent: number): { rest(): Promise<{ status: number; body: string }> } {
  const target = new URL(url);
  let answer!: Promise<{ status: number; body: string }>;
  const req = http.request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: 'PUT', headers: { 'content-length': body.length } });
  answer = new Promise((resolve, reject) => {
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

describe('the receiving folder of a Bucket used for file properties', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await startFilesApp();
    b = await startFilesApp();
  });
  afterAll(async () => {
    for (const x of [a, b]) {
      if (x === undefined) continue;
      await x.app.close();
      await x.s3.close();
      await rm(x.dir, { recursive: true, force: true });
      await rm(x.tempDir, { recursive: true, force: true });
    }
  });

  it('is the app own: the sweep of another app with a bucket of the same name leaves its uploads in progress', async () => {
    expect(a.tempDir).not.toBe(b.tempDir);
    expect(a.tempDir.startsWith(join(tmpdir(), `svc-files-${BUCKET}-`))).toBe(true);
    const post = (await (await fetch(`${a.app.url}/posts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":"t"}' })).json()) as { id: string };
    const body = Buffer.alloc(300_000, 'x');
    const upload = slowUpload(`${a.app.url}/posts/${post.id}/doc?name=a.txt`, body, 100_000);
    // A's part is on the disk, half received.
    await until(
      () => readdir(a.tempDir).catch(() => [] as string[]),
      (names) => names.some((n) => n.endsWith('.part')),
    );
    await b.posts.sweepOrphanFiles();
    const answer = await upload.rest();
    expect(answer.status, answer.body).toBe(200);
    const doc = (JSON.parse(answer.body) as { doc: { size: number; url: string } }).doc;
    expect(doc.size).toBe(body.length);
    const served = await fetch(a.app.url + doc.url);
    expect(served.status).toBe(200);
    expect((await served.arrayBuffer()).byteLength).toBe(body.length);
  });
});
