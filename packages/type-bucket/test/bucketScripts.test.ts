import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBucketApp } from './bucketApp.js';
import type { BucketApp } from './bucketApp.js';
import { startS3 } from './s3Server.js';
import type { TestS3 } from './s3Server.js';

const scripts = {
  'upload.js': `
    emit('upload', { url: url, fileSize: fileSize, fileName: fileName, self: Object.keys(this).length });
    if (fileSize > 100) cancel('file too big', 413);
    if (fileName.indexOf('secret') !== -1) cancel('no secrets here');
  `,
  'get.js': `
    emit('get', { url: url, fileSize: typeof fileSize, fileName: typeof fileName });
    if (url === '/private.txt' && !isRoot) cancel('not allowed', 401);
  `,
  'delete.js': `
    emit('delete', { url: url });
    if (url.indexOf('/keep/') === 0) cancel('this one stays', 403);
  `,
};

let s3: TestS3;
let app: BucketApp;

beforeAll(async () => {
  s3 = await startS3();
  app = await startBucketApp(s3, { scripts });
});
afterAll(async () => {
  await app?.close();
  await s3?.close();
});

const messages = (name: string): unknown[] => app.realtime.messages.filter((m) => m.message === name).map((m) => m.data);

function formOf(files: Record<string, string>): FormData {
  const form = new FormData();
  for (const [name, text] of Object.entries(files)) form.append('file', new Blob([text], { type: 'text/plain' }), name);
  return form;
}

describe('Bucket event scripts: On Upload, On Get, On Delete', () => {
  it('On Upload sees url, fileSize and fileName of a raw upload, and an empty this', async () => {
    app.realtime.messages.length = 0;
    const res = await fetch(`${app.url}/files/docs/a.txt`, { method: 'POST', body: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(200);
    expect(messages('upload')).toEqual([{ url: '/docs/a.txt', fileSize: 5, fileName: 'docs/a.txt', self: 0 }]);
  });

  it('cancel() in On Upload refuses the upload with its status, and nothing is stored', async () => {
    const big = 'x'.repeat(101);
    const res = await fetch(`${app.url}/files/big.txt`, { method: 'POST', body: big, headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ status: 413, statusCode: 413, message: 'file too big' });
    expect((await fetch(`${app.url}/files/big.txt`)).status).toBe(404);
  });

  it('a refused upload is answered before its body is read, and the connection is closed', async () => {
    const size = 256 * 1024 * 1024;
    let sent = 0;
    const started = Date.now();
    const answer = await new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
      const req = request(`${app.url}/files/huge.bin`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) } }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
      });
      // The server may close while the body is still being sent: that is the point.
      req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
      const chunk = Buffer.alloc(1024 * 1024);
      const pump = (): void => {
        while (sent < size) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toEqual({ status: 413, statusCode: 413, message: 'file too big' });
    expect(answer.connection).toBe('close');
    expect(sent).toBeLessThan(size);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('On Upload runs once per file of a form, with the form file names; one cancel refuses them all', async () => {
    app.realtime.messages.length = 0;
    const ok = await fetch(`${app.url}/files`, { method: 'POST', body: formOf({ 'one.txt': '1', 'two.txt': '22' }) });
    expect(ok.status).toBe(200);
    expect(messages('upload')).toEqual([
      { url: '/', fileSize: 1, fileName: 'one.txt', self: 0 },
      { url: '/', fileSize: 2, fileName: 'two.txt', self: 0 },
    ]);
    const refused = await fetch(`${app.url}/files`, { method: 'POST', body: formOf({ 'fine.txt': 'a', 'secret.txt': 'b' }) });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ status: 400, statusCode: 400, message: 'no secrets here' });
    expect((await fetch(`${app.url}/files/fine.txt`)).status).toBe(404);
    expect((await fetch(`${app.url}/files/secret.txt`)).status).toBe(404);
  });

  it('On Get sees url (no fileSize nor fileName) and may refuse a download', async () => {
    await fetch(`${app.url}/files/private.txt`, { method: 'POST', body: 'psst', headers: { 'content-type': 'text/plain' } });
    app.realtime.messages.length = 0;
    const refused = await fetch(`${app.url}/files/private.txt`);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ status: 401, statusCode: 401, message: 'not allowed' });
    expect(messages('get')).toEqual([{ url: '/private.txt', fileSize: 'undefined', fileName: 'undefined' }]);
    const root = await fetch(`${app.url}/files/private.txt`, { headers: { 'svc-ssh-key': 'any key is root in development' } });
    expect(root.status).toBe(200);
    expect(await root.text()).toBe('psst');
  });

  it('On Delete sees url and may refuse a delete (the file stays)', async () => {
    await fetch(`${app.url}/files/keep/me.txt`, { method: 'POST', body: 'kept', headers: { 'content-type': 'text/plain' } });
    app.realtime.messages.length = 0;
    const refused = await fetch(`${app.url}/files/keep/me.txt`, { method: 'DELETE' });
    expect(refused.status).toBe(403);
    expect(messages('delete')).toEqual([{ url: '/keep/me.txt' }]);
    expect(await (await fetch(`${app.url}/files/keep/me.txt`)).text()).toBe('kept');
    expect((await fetch(`${app.url}/files/docs/a.txt`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${app.url}/files/docs/a.txt`)).status).toBe(404);
  });
});
