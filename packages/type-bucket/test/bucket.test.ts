import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '@svc/server';
import { silentLogger } from '@svc/core';
import { bucketType } from '@svc/type-bucket';
import { startBucketApp } from './bucketApp.js';
import type { BucketApp } from './bucketApp.js';
import { startS3 } from './s3Server.js';
import type { TestS3 } from './s3Server.js';

let s3: TestS3;
let app: BucketApp;

beforeAll(async () => {
  s3 = await startS3();
  app = await startBucketApp(s3);
});
afterAll(async () => {
  await app?.close();
  await s3?.close();
});

const sha = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

async function upload(path: string, body: Buffer | string, contentType = 'application/octet-stream'): Promise<Response> {
  return fetch(`${app.url}${path}`, { method: 'POST', body, headers: { 'content-type': contentType } });
}

/** Sends a body with Transfer-Encoding: chunked (no Content-Length), as streaming clients do. */
function uploadChunked(path: string, chunks: Buffer[], contentType: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': contentType } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    Readable.from(chunks).pipe(req);
  });
}

function form(files: { field: string; name: string; type: string; data: string | Buffer }[]): FormData {
  const data = new FormData();
  data.append('note', 'not a file');
  for (const f of files) data.append(f.field, new Blob([f.data], { type: f.type }), f.name);
  return data;
}

describe('Bucket: raw uploads, downloads and deletes against a real S3 server', () => {
  it('POST /<bucket>/<file> stores the body; GET answers it with the Content-Type of its extension', async () => {
    const res = await upload('/files/hello.txt', 'hello world', 'text/plain');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ fileName: 'hello.txt', url: '/files/hello.txt', size: 11, contentType: 'text/plain; charset=utf-8' });
    const got = await fetch(`${app.url}/files/hello.txt`);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.headers.get('content-length')).toBe('11');
    expect(await got.text()).toBe('hello world');
  });

  it('keeps binary content intact, in nested keys with encoded characters', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 17);
    const res = await upload('/files/photos/2024/m%C3%BCnchen%20map.png', data, 'image/png');
    expect(res.status).toBe(200);
    expect(((await res.json()) as { fileName: string }).fileName).toBe('photos/2024/münchen map.png');
    const got = await fetch(`${app.url}/files/photos/2024/m%C3%BCnchen%20map.png`);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(sha(Buffer.from(await got.arrayBuffer()))).toBe(sha(data));
  });

  it('PUT works like POST, and a chunked body (no Content-Length) is stored with its real size', async () => {
    expect((await fetch(`${app.url}/files/put.txt`, { method: 'PUT', body: 'via put', headers: { 'content-type': 'text/plain' } })).status).toBe(200);
    expect(await (await fetch(`${app.url}/files/put.txt`)).text()).toBe('via put');
    const chunks = [Buffer.from('one,'), Buffer.from('two,'), Buffer.from('three')];
    const res = await uploadChunked('/files/chunked.csv', chunks, 'text/csv');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ fileName: 'chunked.csv', size: 13, contentType: 'text/csv; charset=utf-8' });
    expect(await (await fetch(`${app.url}/files/chunked.csv`)).text()).toBe('one,two,three');
  });

  it('answers HEAD with the headers only and a Range with 206', async () => {
    await upload('/files/range.txt', '0123456789', 'text/plain');
    const head = await fetch(`${app.url}/files/range.txt`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('10');
    expect(head.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const part = await fetch(`${app.url}/files/range.txt`, { headers: { range: 'bytes=2-5' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 2-5/10');
    expect(await part.text()).toBe('2345');
  });

  it('DELETE answers 200; the file is gone and GET passes the provider 404 through as it is', async () => {
    await upload('/files/doomed.txt', 'bye', 'text/plain');
    const del = await fetch(`${app.url}/files/doomed.txt`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    const got = await fetch(`${app.url}/files/doomed.txt`);
    expect(got.status).toBe(404);
    expect(got.headers.get('content-type')).toContain('application/xml');
    const xml = await got.text();
    expect(xml).toContain('<Code>NoSuchKey</Code>');
    expect(xml).toContain('<Key>doomed.txt</Key>');
  });

  it.each([
    { name: 'GET without a file name', method: 'GET', path: '/files', status: 400, message: 'a file name is needed in the path: /<bucket>/<file>' },
    { name: 'POST without a file name nor a form', method: 'POST', path: '/files', status: 400, message: 'a file name is needed in the path: /<bucket>/<file>' },
    { name: 'DELETE without a file name', method: 'DELETE', path: '/files/', status: 400, message: 'a file name is needed in the path: /<bucket>/<file>' },
    { name: 'PATCH', method: 'PATCH', path: '/files/x', status: 405, message: 'PATCH is not supported by a bucket' },
  ])('$name: $status', async ({ method, path, status, message }) => {
    const res = await fetch(`${app.url}${path}`, { method, ...(method === 'POST' ? { body: 'x', headers: { 'content-type': 'text/plain' } } : {}) });
    expect(res.status).toBe(status);
    expect(await res.json()).toEqual({ status, statusCode: status, message });
  });
});

describe('Bucket: multipart/form-data uploads', () => {
  it('stores every file of the form under its own name and answers 200 with the list', async () => {
    const png = randomBytes(200_000);
    const res = await fetch(`${app.url}/files`, {
      method: 'POST',
      body: form([
        { field: 'a', name: 'notes.txt', type: 'text/plain', data: 'some notes' },
        { field: 'b', name: 'pic.png', type: 'image/png', data: png },
      ]),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([
      { fileName: 'notes.txt', url: '/files/notes.txt', size: 10, contentType: 'text/plain; charset=utf-8' },
      { fileName: 'pic.png', url: '/files/pic.png', size: 200_000, contentType: 'image/png' },
    ]);
    const pic = await fetch(`${app.url}/files/pic.png`);
    expect(pic.headers.get('content-type')).toBe('image/png');
    expect(sha(Buffer.from(await pic.arrayBuffer()))).toBe(sha(png));
    expect(await (await fetch(`${app.url}/files/notes.txt`)).text()).toBe('some notes');
  });

  it('redirects to the Referer when there is one, and stores under the folder of the path', async () => {
    const res = await fetch(`${app.url}/files/uploads`, {
      method: 'POST',
      redirect: 'manual',
      headers: { referer: 'http://example.test/upload.html' },
      body: form([{ field: 'f', name: 'C:\\fakepath\\report.pdf', type: 'application/pdf', data: '%PDF-1.4' }]),
    });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('http://example.test/upload.html');
    const got = await fetch(`${app.url}/files/uploads/report.pdf`);
    expect(got.headers.get('content-type')).toBe('application/pdf');
    expect(await got.text()).toBe('%PDF-1.4');
  });

  it('refuses a form with no file (400) and a malformed body (400)', async () => {
    const none = await fetch(`${app.url}/files`, { method: 'POST', body: form([]) });
    expect(none.status).toBe(400);
    expect(await none.json()).toEqual({ status: 400, statusCode: 400, message: 'the form holds no file' });
    const bad = await fetch(`${app.url}/files`, { method: 'POST', body: 'garbage', headers: { 'content-type': 'multipart/form-data' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/^malformed multipart\/form-data/);
  });
});

describe('Bucket: provider errors pass through as they are', () => {
  it.each([
    { name: 'an unknown access key', config: { key: 'nobody' }, status: 403, code: 'InvalidAccessKeyId' },
    { name: 'a bucket that does not exist', config: { bucket: 'no-such-bucket' }, status: 404, code: 'NoSuchBucket' },
  ])('$name: $status with the provider XML ($code), on upload and download', async ({ config, status, code }) => {
    const other = await startBucketApp(s3, { config });
    try {
      const up = await fetch(`${other.url}/files/x.txt`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } });
      expect(up.status).toBe(status);
      expect(up.headers.get('content-type')).toContain('application/xml');
      expect(await up.text()).toContain(`<Code>${code}</Code>`);
      const down = await fetch(`${other.url}/files/hello.txt`);
      expect(down.status).toBe(status);
      expect(await down.text()).toContain(`<Code>${code}</Code>`);
    } finally {
      await other.close();
    }
  });

  it('answers 503 with a JSON error when the provider cannot be reached', async () => {
    const other = await startBucketApp(s3, { config: { endpoint: 'http://127.0.0.1:1' } });
    try {
      const res = await fetch(`${other.url}/files/x.txt`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { message: string }).message).toMatch(/^storage provider unreachable/);
    } finally {
      await other.close();
    }
  });

  it('refuses to start when a required setting is missing, naming it', async () => {
    const { mkdtemp, mkdir, writeFile, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'svc-bucket-bad-'));
    try {
      await mkdir(join(dir, 'resources', 'files'), { recursive: true });
      await writeFile(join(dir, 'resources', 'files', 'config.json'), JSON.stringify({ type: 'Bucket', bucket: 'b', key: 'k' }));
      await expect(startApp({ appDir: dir, port: 0, logger: silentLogger, resourceTypes: [bucketType] })).rejects.toThrow('resource files: setting secret is required (string)');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
