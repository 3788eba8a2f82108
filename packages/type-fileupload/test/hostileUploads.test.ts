import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { startApp } from '@svc/server';
import { fileuploadType } from '@svc/type-fileupload';
import { multipartBody, startFileuploadApp } from './fileuploadApp.js';
import type { FileuploadApp } from './fileuploadApp.js';

// Issue 22: uploads as an attacker sends them. Names never leave the upload folder (no '..', no
// absolute path, no link followed), files are never served as pages of the app, limits hold,
// and an upload that breaks off or fills the disk leaves neither a file nor a record.

let app: FileuploadApp;
let outside: string;

beforeAll(async () => {
  outside = await mkdtemp(join(tmpdir(), 'svc-fileupload-outside-'));
  await writeFile(join(outside, 'secret.txt'), 'secret');
  app = await startFileuploadApp({
    config: { maxFileSize: 1000, maxFiles: 3 },
    beforeStart: async (dir) => {
      await mkdir(join(dir, 'upload'));
      await symlink(join(outside, 'secret.txt'), join(dir, 'upload', 'link.txt'));
      await symlink(outside, join(dir, 'upload', 'out'));
    },
  });
});
afterAll(async () => {
  await app?.close();
  if (outside) await rm(outside, { recursive: true, force: true });
});

const BOUNDARY = '----svc-hostile';
const MULTIPART = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };

async function rawUpload(filename: string, query = '', content = 'x'): Promise<Response> {
  const body = multipartBody(BOUNDARY, [{ name: 'file', filename, content }]);
  return fetch(`${app.url}/fileupload${query}`, { method: 'POST', headers: MULTIPART, body });
}
async function records(): Promise<Record<string, unknown>[]> {
  return (await (await fetch(`${app.url}/fileupload`)).json()) as Record<string, unknown>[];
}
/** Every file under the upload folder and the outside folder, so a test sees where anything landed. */
async function allFiles(): Promise<string[]> {
  const app_ = (await readdir(join(app.dir, 'upload'), { recursive: true })).map((f) => `upload/${f}`);
  const out = (await readdir(outside, { recursive: true })).map((f) => `outside/${f}`);
  return [...app_, ...out].sort();
}

describe('Fileupload: hostile names never leave the upload folder', () => {
  it.each([
    ['../x.txt', 'x.txt'],
    ['../../../../tmp/evil.txt', 'evil.txt'],
    ['/etc/passwd', 'passwd'],
    ['C:\\Windows\\win.ini', 'win.ini'],
    ['%2e%2e%2fenc.txt', '%2e%2e%2fenc.txt'],
  ])('a file named %j is stored as %j inside the folder', async (sent, stored) => {
    const res = await rawUpload(sent);
    expect(res.status).toBe(200);
    const [rec] = (await res.json()) as { filename: string }[];
    expect(rec?.filename).toBe(stored);
    expect(existsSync(join(app.dir, 'upload', stored))).toBe(true);
  });

  it.each([
    ['..', 'a dot name'],
    ['.htaccess', 'a hidden name'],
    ['a\u0000.txt', 'NUL'],
    ['a\u0001b.txt', 'a control character'],
    [`${'a'.repeat(300)}.txt`, 'a very long name'],
  ])('a file named %j (%s) is refused with 400 and nothing is stored', async (sent) => {
    const before = await allFiles();
    const count = (await records()).length;
    const res = await rawUpload(sent);
    expect(res.status).toBe(400);
    expect((await records()).length).toBe(count);
    expect(await allFiles()).toEqual(before);
  });

  it.each([
    ['?subdir=..', '..'],
    ['?subdir=../../x', '../..'],
    ['?subdir=%2e%2e', 'url-encoded ..'],
    ['?subdir=%2e%2e%2f%2e%2e', 'url-encoded ../..'],
    ['?subdir=a%5Cb', 'a backslash'],
    ['?subdir=a%00b', 'NUL'],
    ['?subdir=.incoming', 'the incoming folder'],
    ['?subdir=a//b', 'an empty level'],
    [`?subdir=${'d/'.repeat(20)}`, 'too deep'],
  ])('subdir %s (%s) is refused with 400 and nothing is stored', async (query) => {
    const before = await allFiles();
    const res = await rawUpload('f.txt', query);
    expect(res.status).toBe(400);
    expect(await allFiles()).toEqual(before);
  });

  it('with uniqueFilename, a name whose extension leaves no room is refused; __proto__ fields change nothing', async () => {
    const before = await allFiles();
    expect((await rawUpload(`a.${'x'.repeat(240)}`, '?uniqueFilename=true')).status).toBe(400);
    expect(await allFiles()).toEqual(before);
    const body = multipartBody(BOUNDARY, [
      { name: '__proto__', value: '{"polluted":true}' },
      { name: 'file', filename: 'proto.txt', content: 'p' },
    ]);
    const res = await fetch(`${app.url}/fileupload?constructor=1`, { method: 'POST', headers: MULTIPART, body });
    expect(res.status).toBe(200);
    const [rec] = (await res.json()) as Record<string, unknown>[];
    expect(Object.keys(rec ?? {}).sort()).toEqual(['creationDate', 'filename', 'filesize', 'id', 'type']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('an absolute subdir lands inside the folder', async () => {
    const res = await rawUpload('abs.txt', '?subdir=/etc');
    expect(res.status).toBe(200);
    expect(existsSync(join(app.dir, 'upload', 'etc', 'abs.txt'))).toBe(true);
  });

  it('a symbolic link in the folder is neither followed to write nor to read', async () => {
    const res = await rawUpload('f.txt', '?subdir=out');
    expect(res.status).toBe(409);
    expect(await readdir(outside)).toEqual(['secret.txt']);
    expect((await fetch(`${app.url}/fileupload/link.txt`)).status).toBe(404);
    expect((await fetch(`${app.url}/fileupload/out/secret.txt`)).status).toBe(404);
    // A file named like the link is stored next to it, not through it.
    const next = await rawUpload('link.txt', '', 'mine');
    expect(((await next.json()) as { filename: string }[])[0]?.filename).toBe('link (1).txt');
    expect(await (await fetch(`${app.url}/fileupload/link%20(1).txt`)).text()).toBe('mine');
  });

  it.each([
    '/fileupload/..%2f..%2fresources%2ffileupload%2fconfig.json',
    '/fileupload/%2e%2e/resources/fileupload/config.json',
    '/fileupload/.incoming',
    '/fileupload/x%00.txt',
  ])('GET %s serves nothing of the app', async (path) => {
    const res = await fetch(`${app.url}${path}`);
    expect([400, 404]).toContain(res.status);
    expect(await res.text()).not.toContain('Fileupload');
  });
});

describe('Fileupload: served files never run as pages of the app', () => {
  it.each([
    ['x.html', 'application/octet-stream'],
    ['x.svg', 'image/svg+xml'],
    ['x.xml', 'application/octet-stream'],
    ['x.js', 'application/octet-stream'],
  ])('%s is an attachment typed %s, with nosniff and a sandbox', async (name, type) => {
    const body = multipartBody(BOUNDARY, [{ name: 'file', filename: name, type: 'text/html', content: '<script>alert(1)</script>' }]);
    expect((await fetch(`${app.url}/fileupload?subdir=pages`, { method: 'POST', headers: MULTIPART, body })).status).toBe(200);
    const res = await fetch(`${app.url}/fileupload/pages/${name}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(type);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toContain('sandbox');
  });

  it('an "image" sent as text/html is served as the image its name says', async () => {
    const body = multipartBody(BOUNDARY, [{ name: 'file', filename: 'evil.png', type: 'text/html', content: '<html>' }]);
    await fetch(`${app.url}/fileupload?subdir=pages`, { method: 'POST', headers: MULTIPART, body });
    const res = await fetch(`${app.url}/fileupload/pages/evil.png`);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('Fileupload: limits, and uploads that do not finish', () => {
  it('a file over maxFileSize is 413 and nothing is stored; so are too many files', async () => {
    const before = await allFiles();
    const count = (await records()).length;
    const big = multipartBody(BOUNDARY, [
      { name: 'file', filename: 'small.txt', content: 'ok' },
      { name: 'file', filename: 'big.bin', content: Buffer.alloc(1001, 1) },
    ]);
    const res = await fetch(`${app.url}/fileupload`, { method: 'POST', headers: MULTIPART, body: big });
    expect(res.status).toBe(413);
    const many = multipartBody(BOUNDARY, ['1', '2', '3', '4'].map((n) => ({ name: 'file', filename: `${n}.txt`, content: n })));
    expect((await fetch(`${app.url}/fileupload`, { method: 'POST', headers: MULTIPART, body: many })).status).toBe(413);
    const huge = await fetch(`${app.url}/fileupload`, { method: 'POST', headers: MULTIPART, body: Buffer.alloc(5 * 1024 * 1024, 0x61) });
    expect(huge.status).toBe(413);
    expect((await records()).length).toBe(count);
    expect(await allFiles()).toEqual(before);
  });

  it.each([
    ['the client goes away mid-body', 'close'],
    ['the body ends before Content-Length (half-closed)', 'end'],
  ])('%s: no file and no record', async (_label, how) => {
    const before = await allFiles();
    const count = (await records()).length;
    const body = multipartBody(BOUNDARY, [{ name: 'file', filename: 'cut.txt', content: Buffer.alloc(900, 0x62) }]);
    const { port } = new URL(app.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((done) => socket.once('connect', () => done()));
    // Reads the answer, if any, so that a half-closed socket can close.
    socket.resume();
    socket.write(`POST /fileupload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${MULTIPART['content-type']}\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body.subarray(0, 600));
    // Let the server take the first half in before the connection breaks.
    await new Promise((done) => setTimeout(done, 200));
    if (how === 'close') socket.destroy();
    else socket.end();
    await new Promise((done) => socket.once('close', done));
    // The server finishes with the request on its own time: wait (bounded) for the folder to settle.
    for (let i = 0; i < 50 && (await readdir(join(app.dir, 'upload', '.incoming'))).length > 0; i++) await new Promise((done) => setTimeout(done, 100));
    expect(await readdir(join(app.dir, 'upload', '.incoming'))).toEqual([]);
    expect((await records()).length).toBe(count);
    expect(await allFiles()).toEqual(before);
  });
});

describe('Fileupload: the directory setting', () => {
  it.each([
    ['../outside', /not allowed/],
    ['/etc', /not allowed/],
    ['public', /folder of the app itself/],
    ['resources/x', /folder of the app itself/],
    ['.svc', /not allowed/],
  ])('directory %j stops start-up', async (directory, message) => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-fileupload-dir-'));
    try {
      await mkdir(join(dir, 'resources', 'files'), { recursive: true });
      await writeFile(join(dir, 'resources', 'files', 'config.json'), JSON.stringify({ type: 'Fileupload', directory }));
      await expect(startApp({ appDir: dir, port: 0, logger: silentLogger, resourceTypes: [fileuploadType] })).rejects.toThrow(message);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a directory that is a symbolic link stops start-up', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-fileupload-dir-'));
    try {
      await mkdir(join(dir, 'resources', 'files'), { recursive: true });
      await mkdir(join(dir, 'public'));
      await symlink(join(dir, 'public'), join(dir, 'upload'));
      await writeFile(join(dir, 'resources', 'files', 'config.json'), JSON.stringify({ type: 'Fileupload' }));
      await expect(startApp({ appDir: dir, port: 0, logger: silentLogger, resourceTypes: [fileuploadType] })).rejects.toThrow(/symbolic link/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** True when this process may mount a small tmpfs (root on Linux): the only honest full disk. */
function canMount(): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  try {
    execFileSync('mount', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const mountable = canMount();
if (!mountable) console.log('skipping the full-disk upload test: mounting a small tmpfs needs root on Linux');

describe.skipIf(!mountable)('Fileupload: a full disk', () => {
  let full: FileuploadApp;
  let mounted: string | undefined;
  beforeAll(async () => {
    full = await startFileuploadApp({
      config: { maxFileSize: 10 * 1024 * 1024 },
      beforeStart: async (dir) => {
        mounted = join(dir, 'upload');
        await mkdir(mounted);
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mounted]);
      },
    });
  });
  afterAll(async () => {
    await full?.app.close();
    if (mounted) execFileSync('umount', [mounted]);
    await full?.close();
  });

  it('ENOSPC answers 507 and leaves no file and no record', async () => {
    const body = multipartBody(BOUNDARY, [
      { name: 'file', filename: 'fits.txt', content: 'small' },
      { name: 'file', filename: 'big.bin', content: Buffer.alloc(512 * 1024, 1) },
    ]);
    const res = await fetch(`${full.url}/fileupload`, { method: 'POST', headers: MULTIPART, body });
    expect(res.status).toBe(507);
    expect(await (await fetch(`${full.url}/fileupload`)).json()).toEqual([]);
    expect((await readdir(join(full.dir, 'upload'), { recursive: true })).sort()).toEqual(['.incoming']);
    // The disk has room again once the failed upload is gone.
    const small = multipartBody(BOUNDARY, [{ name: 'file', filename: 'after.txt', content: 'ok' }]);
    expect((await fetch(`${full.url}/fileupload`, { method: 'POST', headers: MULTIPART, body: small })).status).toBe(200);
  });
});
