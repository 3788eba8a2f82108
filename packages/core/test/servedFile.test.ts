import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedStore, servedFile } from '@svc/core';
import type { Store } from '@svc/core';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 21.1: how uploaded files are served (servedFile, shared by the Bucket and the file types
// to come), and nosniff on the app's own public/ files.

describe('servedFile: inline only from an allow-list of extensions, the rest as attachments', () => {
  it.each([
    ['a.png', 'image/png', true],
    ['dir/b.JPEG', 'image/jpeg', true],
    ['x.html;.png', 'image/png', true],
    ['notes.txt', 'text/plain; charset=utf-8', true],
    ['report.pdf', 'application/pdf', true],
    ['x.html', 'application/octet-stream', false],
    ['X.HTM', 'application/octet-stream', false],
    ['x.xhtml', 'application/octet-stream', false],
    ['s.svg', 'image/svg+xml', false],
    ['a.xml', 'application/octet-stream', false],
    ['a.js', 'application/octet-stream', false],
    ['a.mjs', 'application/octet-stream', false],
    ['a.css', 'application/octet-stream', false],
    ['x.html.', 'application/octet-stream', false],
    ['x.png ', 'application/octet-stream', false],
    ['.png', 'application/octet-stream', false],
    ['png', 'application/octet-stream', false],
    ['a.toString', 'application/octet-stream', false],
    ['a.constructor', 'application/octet-stream', false],
    ['a.__proto__', 'application/octet-stream', false],
  ])('%s: %s, inline %s', (name, type, inline) => {
    const served = servedFile(name);
    expect(served.contentType).toBe(type);
    expect(served.inline).toBe(inline);
    expect(served.headers['content-type']).toBe(type);
    expect(served.headers['x-content-type-options']).toBe('nosniff');
    if (inline) expect(served.headers['content-disposition']).toBeUndefined();
    else expect(served.headers['content-disposition']).toMatch(/^attachment/);
    if (type !== 'application/pdf') expect(served.headers['content-security-policy']).toContain('sandbox');
  });

  it('names in Content-Disposition: the base name, ASCII fallback and RFC 8187 form, no way out of the header', () => {
    expect(servedFile('dir/sub/x.html').headers['content-disposition']).toBe(`attachment; filename="x.html"; filename*=UTF-8''x.html`);
    expect(servedFile('a"b\\c\r\n%.bin').headers['content-disposition']).toBe(`attachment; filename="a_b_c___.bin"; filename*=UTF-8''a%22b%5Cc%0D%0A%25.bin`);
    expect(servedFile("it's (1)*.bin").headers['content-disposition']).toBe(`attachment; filename="it's (1)*.bin"; filename*=UTF-8''it%27s%20%281%29%2A.bin`);
    expect(servedFile('x\u202Egnp.html').headers['content-disposition']).toBe(`attachment; filename="x_gnp.html"; filename*=UTF-8''x_gnp.html`);
    expect(servedFile('bad\uD800.bin').headers['content-disposition']).toBe(`attachment; filename="bad_.bin"; filename*=UTF-8''bad%EF%BF%BD.bin`);
  });
});

describe("public/ files: served inline as written, with nosniff", () => {
  let dir: string;
  let store: Store;
  let t: TestServer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-public-'));
    await mkdir(join(dir, 'public', 'docs'), { recursive: true });
    await writeFile(join(dir, 'public', 'index.html'), '<!doctype html><p>home</p>');
    await writeFile(join(dir, 'public', 'app.js'), 'console.log(1)');
    await writeFile(join(dir, 'public', 'docs', 'notes'), 'no extension');
    store = await createEmbeddedStore({ dir: join(dir, 'data') });
    t = await startTestServer(store, [], { publicDir: join(dir, 'public') });
  });
  afterAll(async () => {
    await t?.close();
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['/', 'text/html; charset=utf-8'],
    ['/index.html', 'text/html; charset=utf-8'],
    ['/app.js', 'text/javascript; charset=utf-8'],
    ['/docs/notes', 'application/octet-stream'],
  ])('GET and HEAD %s: %s, nosniff, no attachment', async (path, type) => {
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`${t.url}${path}`, { method });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-disposition')).toBeNull();
    }
  });
});
