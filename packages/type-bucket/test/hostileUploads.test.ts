import { request } from 'node:http';
import { connect } from 'node:net';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '@svc/core';
import { startBucketApp } from './bucketApp.js';
import type { BucketApp } from './bucketApp.js';
import { startRecordingProxy, startS3 } from './s3Server.js';
import type { RecordingProxy, TestS3 } from './s3Server.js';

// Issue 21, items 1 and 2: uploads as an attacker sends them. Files served back must not run as
// pages of the app's origin, whatever type their uploader declared; an upload that breaks off
// must leave nothing behind. The app reaches s3rver through a recording proxy, so the tests see
// which S3 calls were made.

let s3: TestS3;
let proxy: RecordingProxy;
let app: BucketApp;
let direct: S3Client;
const logged: string[] = [];
const logger: Logger = { info: (m) => logged.push(m), warn: (m) => logged.push(m), error: (m) => logged.push(m) };

beforeAll(async () => {
  s3 = await startS3();
  proxy = await startRecordingProxy(s3.endpoint);
  app = await startBucketApp(s3, { config: { endpoint: proxy.endpoint }, logger });
  direct = new S3Client({ region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, credentials: { accessKeyId: s3.key, secretAccessKey: s3.secret } });
});
afterAll(async () => {
  direct?.destroy();
  await app?.close();
  await proxy?.close();
  await s3?.close();
});

async function listed(): Promise<string[]> {
  const out = await direct.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
  return (out.Contents ?? []).map((o) => o.Key ?? '');
}

const OCTET = 'application/octet-stream';

describe('Bucket downloads: the served type comes from the name, never from the uploader (issue 21.1)', () => {
  it.each([
    { name: 'x.html', sent: 'text/html', type: OCTET, inline: false },
    { name: 'X.HTML', sent: 'text/html', type: OCTET, inline: false },
    { name: 'page.htm', sent: 'text/html', type: OCTET, inline: false },
    { name: 's.svg', sent: 'image/svg+xml', type: 'image/svg+xml', inline: false },
    { name: 'feed.xml', sent: 'application/xml', type: OCTET, inline: false },
    { name: 'app.js', sent: 'text/javascript', type: OCTET, inline: false },
    { name: 'data.json', sent: 'application/json', type: OCTET, inline: false },
    { name: 'evil.png', sent: 'text/html', type: 'image/png', inline: true },
    { name: 'x.html.', sent: 'text/html', type: OCTET, inline: false },
    { name: 'x.html;.png', sent: 'text/html', type: 'image/png', inline: true },
    { name: 'x.png.html', sent: 'image/png', type: OCTET, inline: false },
    { name: 'a.tar.gz', sent: 'application/gzip', type: OCTET, inline: false },
    { name: 'noext', sent: 'text/html', type: OCTET, inline: false },
    { name: 'photo.JPG', sent: 'image/jpeg', type: 'image/jpeg', inline: true },
    { name: 'notes.txt', sent: 'text/html', type: 'text/plain; charset=utf-8', inline: true },
    { name: 'clip.mp4', sent: 'text/html', type: 'video/mp4', inline: true },
    { name: 'doc.pdf', sent: 'application/pdf', type: 'application/pdf', inline: true },
  ])('$name sent as $sent: $type, inline $inline, nosniff', async ({ name, sent, type, inline }) => {
    const body = '<script>document.title = "pwned"</script>';
    const path = `/files/${encodeURIComponent(name)}`;
    const up = await fetch(`${app.url}${path}`, { method: 'POST', body, headers: { 'content-type': sent } });
    expect(up.status).toBe(200);
    expect(((await up.json()) as { contentType: string }).contentType).toBe(type);
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`${app.url}${path}`, { method });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const disposition = res.headers.get('content-disposition');
      if (inline) expect(disposition).toBeNull();
      else expect(disposition).toMatch(/^attachment; filename="[^"]*"; filename\*=UTF-8''/);
      // Chromium's PDF viewer does not open in a sandbox; a PDF runs no script on the origin.
      if (name.endsWith('.pdf')) expect(res.headers.get('content-security-policy')).toBeNull();
      else expect(res.headers.get('content-security-policy')).toContain('sandbox');
      if (method === 'GET') expect(await res.text()).toBe(body);
    }
  });

  it('a provider error quoting a hostile key is passed through, but nosniff and sandboxed', async () => {
    const res = await fetch(`${app.url}/files/${encodeURIComponent('<script>alert(1)</script>.html')}`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/xml');
    const xml = await res.text();
    expect(xml).toContain('<Code>NoSuchKey</Code>');
    expect(xml).not.toContain('<script>');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toContain('sandbox');
  });

  it('a Range request of an html file is still an attachment, nosniff and sandboxed', async () => {
    await fetch(`${app.url}/files/range.html`, { method: 'POST', body: '<script>alert(1)</script>', headers: { 'content-type': 'text/html' } });
    const part = await fetch(`${app.url}/files/range.html`, { headers: { range: 'bytes=0-7' } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe('<script>');
    expect(part.headers.get('content-type')).toBe(OCTET);
    expect(part.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(part.headers.get('x-content-type-options')).toBe('nosniff');
    expect(part.headers.get('content-security-policy')).toContain('sandbox');
  });

  it('a form upload of x.html declared image/png is served as an attachment', async () => {
    const form = new FormData();
    form.append('f', new Blob(['<script>alert(1)</script>'], { type: 'image/png' }), 'formed.html');
    const up = await fetch(`${app.url}/files`, { method: 'POST', body: form });
    expect(up.status).toBe(200);
    const res = await fetch(`${app.url}/files/formed.html`);
    expect(res.headers.get('content-type')).toBe(OCTET);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="formed.html"; filename*=UTF-8\'\'formed.html');
  });

  it('a name with quotes, non-ASCII letters and a CR-free but hostile shape cannot break the header', async () => {
    const name = 'a"b\\c%22;d é.html';
    const path = `/files/${encodeURIComponent(name)}`;
    expect((await fetch(`${app.url}${path}`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/html' } })).status).toBe(200);
    const res = await fetch(`${app.url}${path}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="a_b_c_22;d _.html"; filename*=UTF-8''a%22b%5Cc%2522%3Bd%20%C3%A9.html`);
  });

  /** Sends a request with its path exactly as given (fetch would resolve '..'). */
  function rawStatus(method: string, path: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = request(`${app.url}/`, { method, path, headers: { 'content-type': 'text/html', 'content-length': '1' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('x');
    });
  }

  it.each([
    { name: '..', path: '/files/../x.html' },
    { name: '%2e%2e', path: '/files/%2e%2e/x.html' },
    { name: '.', path: '/files/./x.html' },
    { name: '..%2f', path: '/files/..%2fx.html' },
    { name: 'an encoded slash making an empty part', path: '/files/a%2f%2fb.png' },
    { name: 'NUL', path: '/files/a%00.png' },
    { name: 'CR LF', path: '/files/a%0d%0aSet-Cookie:%20x.png' },
    { name: 'a name over 1024 bytes', path: `/files/${'a'.repeat(1100)}.png` },
  ])('a file name with $name is refused with 400, on upload and download', async ({ path }) => {
    const before = await listed();
    expect(await rawStatus('POST', path)).toBe(400);
    expect(await rawStatus('GET', path)).toBe(400);
    expect(await listed()).toEqual(before);
  });

  it('a form file named ".." is refused', async () => {
    const form = new FormData();
    form.append('f', new Blob(['x'], { type: 'text/plain' }), '..');
    const res = await fetch(`${app.url}/files/sub`, { method: 'POST', body: form });
    expect(res.status).toBe(400);
  });

  it('a long name (1000 bytes) is served with a header that holds it', async () => {
    // s3rver keeps objects as files: no segment over 255 bytes there.
    const base = `${'n'.repeat(220)}.html`;
    const key = `${['d', 'e', 'f', 'g', 'h'].map((c) => c.repeat(150)).join('/')}/${base}`;
    expect(Buffer.byteLength(key)).toBeGreaterThan(970);
    expect((await fetch(`${app.url}/files/${key}`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/html' } })).status).toBe(200);
    const res = await fetch(`${app.url}/files/${key}`);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${base}"; filename*=UTF-8''${base}`);
  });
});

/**
 * Writes a request head and `body` on a raw socket, then closes the socket ('destroy': the client
 * is gone) or half-closes it and reads what the server answers ('end'). Answers the bytes read.
 */
function rawUpload(head: string, body: Buffer, close: 'destroy' | 'end'): Promise<string> {
  const { port } = new URL(app.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? resolve(answer) : reject(err)));
    socket.on('close', () => resolve(answer));
    socket.write(head);
    socket.write(body, () => {
      if (close === 'destroy') socket.destroy();
      else socket.end();
    });
  });
}

/** Waits (bounded) until the server said it stored nothing for `key`, or until `key` can be read. */
async function settled(key: string, since: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (logged.slice(since).some((line) => line.includes(`nothing stored for ${key}`))) return;
    const res = await fetch(`${app.url}/files/${key}`);
    await res.arrayBuffer();
    if (res.status === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the server neither stored nor gave up on ${key}`);
}

async function expectAbsent(key: string): Promise<void> {
  const res = await fetch(`${app.url}/files/${key}`);
  await res.arrayBuffer();
  expect(res.status).toBe(404);
  expect(await listed()).not.toContain(key);
}

const OCTET_HEADER = 'Content-Type: application/octet-stream\r\n';
const head = (path: string, headers: string): string => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n`;

describe('Bucket uploads that break off store nothing (issue 21.2)', () => {
  it('Content-Length 100 MB, 1 KB sent, client gone: no object, and the multipart upload is aborted', async () => {
    const since = logged.length;
    const seen = proxy.requests.length;
    await rawUpload(head('/files/cut.bin', `${OCTET_HEADER}Content-Length: 104857600\r\n`), Buffer.alloc(1024, 'a'), 'destroy');
    await settled('cut.bin', since);
    await expectAbsent('cut.bin');
    const calls = proxy.requests.slice(seen).map((r) => `${r.method} ${r.url.replace(/uploadId=[^&]+/, 'uploadId=*')}`);
    expect(calls.some((c) => /^POST \/test-bucket\/cut\.bin\?uploads/.test(c))).toBe(true);
    expect(calls.some((c) => c.startsWith('DELETE /test-bucket/cut.bin?uploadId=*'))).toBe(true);
    expect(calls.some((c) => /^POST \/test-bucket\/cut\.bin\?uploadId=/.test(c))).toBe(false);
  });

  it('Content-Length 40 MiB, 20 MiB sent (one whole part and a half), client gone: no object, upload aborted', async () => {
    const since = logged.length;
    const seen = proxy.requests.length;
    await rawUpload(head('/files/half.bin', `${OCTET_HEADER}Content-Length: ${40 * 1024 * 1024}\r\n`), Buffer.alloc(20 * 1024 * 1024, 'h'), 'destroy');
    await settled('half.bin', since);
    await expectAbsent('half.bin');
    const calls = proxy.requests.slice(seen).filter((r) => r.url.includes('half.bin'));
    // Part 1 (16 MiB) reached the provider whole; part 2 was cut; the upload was never completed.
    expect(calls.some((r) => r.method === 'PUT' && r.url.includes('partNumber=1') && r.status === 200)).toBe(true);
    expect(calls.some((r) => r.method === 'DELETE' && r.url.includes('uploadId='))).toBe(true);
    expect(calls.some((r) => r.method === 'POST' && r.url.includes('uploadId='))).toBe(false);
  });

  it('Content-Length 100 KB, 1 KB sent, client gone: no object, nothing sent to S3', async () => {
    const since = logged.length;
    const seen = proxy.requests.length;
    await rawUpload(head('/files/small-cut.bin', `${OCTET_HEADER}Content-Length: 102400\r\n`), Buffer.alloc(1024, 'a'), 'destroy');
    await settled('small-cut.bin', since);
    await expectAbsent('small-cut.bin');
    expect(proxy.requests.slice(seen).filter((r) => r.method !== 'GET' && r.url.includes('small-cut'))).toEqual([]);
  });

  it('a Content-Length larger than the body sent before a half-close: no 200, no object', async () => {
    const since = logged.length;
    const answer = await rawUpload(head('/files/short.bin', `${OCTET_HEADER}Content-Length: 2048\r\n`), Buffer.alloc(1024, 'a'), 'end');
    expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
    await settled('short.bin', since);
    await expectAbsent('short.bin');
  });

  it('a previous object under the same name stays as it was', async () => {
    expect((await fetch(`${app.url}/files/kept.bin`, { method: 'POST', body: 'the good one' })).status).toBe(200);
    const since = logged.length;
    await rawUpload(head('/files/kept.bin', `${OCTET_HEADER}Content-Length: 104857600\r\n`), Buffer.alloc(1024, 'b'), 'destroy');
    for (let i = 0; i < 300 && !logged.slice(since).some((l) => l.includes('nothing stored for kept.bin')); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await (await fetch(`${app.url}/files/kept.bin`)).text()).toBe('the good one');
  });

  it('a chunked body that ends without its last chunk: no object', async () => {
    const since = logged.length;
    const chunk = Buffer.concat([Buffer.from('400\r\n'), Buffer.alloc(1024, 'c'), Buffer.from('\r\n')]);
    const answer = await rawUpload(head('/files/chunked-cut.bin', `${OCTET_HEADER}Transfer-Encoding: chunked\r\n`), chunk, 'end');
    expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
    await settled('chunked-cut.bin', since);
    await expectAbsent('chunked-cut.bin');
  });

  it('a form cut in the middle of its file: no object, and the server lives on', async () => {
    const since = logged.length;
    const boundary = 'XyZ';
    const part = `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="form-cut.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
    const body = Buffer.concat([Buffer.from(part), Buffer.alloc(4096, 'd')]);
    await rawUpload(head('/files', `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 1000000\r\n`), body, 'destroy');
    for (let i = 0; i < 300 && !logged.slice(since).some((l) => l.includes('nothing stored for the form')); i++) await new Promise((r) => setTimeout(r, 50));
    await expectAbsent('form-cut.bin');
    expect((await fetch(`${app.url}/files/alive.txt`, { method: 'POST', body: 'yes' })).status).toBe(200);
  });

  it('a whole upload over the single-PUT size goes through a multipart upload and reads back intact', async () => {
    const data = Buffer.alloc(300 * 1024, 'e');
    const res = await fetch(`${app.url}/files/whole.bin`, { method: 'POST', body: data });
    expect(res.status).toBe(200);
    const got = Buffer.from(await (await fetch(`${app.url}/files/whole.bin`)).arrayBuffer());
    expect(got.equals(data)).toBe(true);
  });
});
