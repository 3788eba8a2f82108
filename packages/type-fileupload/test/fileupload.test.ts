import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipartBody, startFileuploadApp } from './fileuploadApp.js';
import type { FileuploadApp } from './fileuploadApp.js';

// Issue 22: dpd-fileupload's HTTP API (multipart upload with its query parameters, listing,
// GET by id, DELETE with its message, the files served by name) with real multipart clients:
// node's fetch + FormData, and a multipart body written by hand.

let app: FileuploadApp;
const SCRIPTS = {
  'upload.js': `emit('upload', { url: url, filesize: filesize, filename: filename, originalFilename: originalFilename, uniqueFilename: uniqueFilename, subdir: subdir });
if (filename === 'refused.txt') cancel('no such files here', 403);`,
  'get.js': `emit('get', { url: url });`,
  'delete.js': `emit('delete', { url: url });`,
};

beforeAll(async () => {
  app = await startFileuploadApp({ scripts: SCRIPTS });
});
afterAll(async () => {
  await app?.close();
});

function form(files: Record<string, string>, fields: Record<string, string> = {}): FormData {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  for (const [name, content] of Object.entries(files)) data.append('file', new Blob([content], { type: 'text/plain' }), name);
  return data;
}

type Rec = Record<string, unknown> & { id: string; filename: string };

describe('Fileupload: dpd-fileupload HTTP API', () => {
  it('POST with FormData stores each file under the upload folder and a record per file, query params included', async () => {
    const res = await fetch(`${app.url}/fileupload?subdir=images&title=holiday&count=3`, { method: 'POST', body: form({ 'a.txt': 'hello', 'b.txt': 'world!' }, { album: 'summer' }) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Rec[];
    expect(body).toHaveLength(2);
    expect(body[0]).toMatchObject({ filename: 'a.txt', filesize: 5, subdir: 'images', title: 'holiday', count: 3, album: 'summer', type: 'text/plain; charset=utf-8' });
    expect(typeof body[0]?.creationDate).toBe('number');
    expect(body[0]?.id).toMatch(/^[0-9a-f]{16}$/);
    expect(body[0]).not.toHaveProperty('originalFilename');
    expect(await readFile(join(app.dir, 'upload', 'images', 'a.txt'), 'utf8')).toBe('hello');
    expect(app.realtime.messages.filter((m) => m.message === 'upload').map((m) => m.data)).toContainEqual({ url: '/', filesize: 5, filename: 'a.txt', originalFilename: 'a.txt', uniqueFilename: false, subdir: 'images' });
  });

  it('a raw multipart body (PUT) works; a taken name gets " (1)", nothing is replaced', async () => {
    const boundary = '----svc-raw-boundary';
    const body = multipartBody(boundary, [
      { name: 'note', value: '{"x":1}' },
      { name: 'upload', filename: 'a.txt', type: 'text/plain', content: 'second a' },
    ]);
    const res = await fetch(`${app.url}/fileupload?subdir=images`, { method: 'PUT', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
    expect(res.status).toBe(200);
    const [rec] = (await res.json()) as Rec[];
    expect(rec).toMatchObject({ filename: 'a (1).txt', note: { x: 1 }, filesize: 8 });
    expect(await readFile(join(app.dir, 'upload', 'images', 'a.txt'), 'utf8')).toBe('hello');
    expect(await readFile(join(app.dir, 'upload', 'images', 'a (1).txt'), 'utf8')).toBe('second a');
  });

  it('uniqueFilename stores under a random name and keeps originalFilename', async () => {
    const res = await fetch(`${app.url}/fileupload?uniqueFilename=true`, { method: 'POST', body: form({ 'photo.png': 'png bytes' }) });
    const [rec] = (await res.json()) as Rec[];
    expect(rec?.filename).toMatch(/^[0-9a-f]{32}\.png$/);
    expect(rec).toMatchObject({ originalFilename: 'photo.png', type: 'image/png' });
    expect(rec).not.toHaveProperty('uniqueFilename');
    const file = await fetch(`${app.url}/fileupload/${rec?.filename}`);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(await file.text()).toBe('png bytes');
  });

  it('GET lists the records (filtered by query), GET /<id> answers one, On Get runs', async () => {
    const all = (await (await fetch(`${app.url}/fileupload`)).json()) as Rec[];
    expect(all.map((r) => r.filename)).toEqual(expect.arrayContaining(['a.txt', 'b.txt', 'a (1).txt']));
    const images = (await (await fetch(`${app.url}/fileupload?subdir=images&count=3`)).json()) as Rec[];
    expect(images.map((r) => r.filename).sort()).toEqual(['a.txt', 'b.txt']);
    const sorted = (await (await fetch(`${app.url}/fileupload?${encodeURIComponent(JSON.stringify({ $sort: { filesize: -1 }, $limit: 1 }))}`)).json()) as Rec[];
    expect(sorted).toHaveLength(1);
    expect(sorted[0]?.filename).toMatch(/\.png$/);
    const one = await fetch(`${app.url}/fileupload/${images[0]?.id}`);
    expect(await one.json()).toEqual(images[0]);
    expect(app.realtime.messages.filter((m) => m.message === 'get').length).toBeGreaterThanOrEqual(3);
  });

  it('GET /<subdir>/<file> serves the file; a missing one is 404', async () => {
    const res = await fetch(`${app.url}/fileupload/images/a%20(1).txt`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toBe('second a');
    const head = await fetch(`${app.url}/fileupload/images/a.txt`, { method: 'HEAD' });
    expect(head.headers.get('content-length')).toBe('5');
    expect((await fetch(`${app.url}/fileupload/images/none.txt`)).status).toBe(404);
    expect((await fetch(`${app.url}/fileupload/nope/a.txt`)).status).toBe(404);
  });

  it('DELETE /<id> removes the record and the file with dpd-fileupload\'s answer; On Delete runs', async () => {
    const [rec] = (await (await fetch(`${app.url}/fileupload?filename=b.txt`)).json()) as Rec[];
    const res = await fetch(`${app.url}/fileupload/${rec?.id}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ statusCode: 200, message: 'File b.txt successfuly deleted' });
    expect(await readdir(join(app.dir, 'upload', 'images'))).not.toContain('b.txt');
    expect((await fetch(`${app.url}/fileupload/${rec?.id}`)).status).toBe(404);
    expect((await fetch(`${app.url}/fileupload/${rec?.id}`, { method: 'DELETE' })).status).toBe(404);
    expect(app.realtime.messages.filter((m) => m.message === 'delete').map((m) => m.data)).toContainEqual({ url: `/${rec?.id}` });
  });

  it("On Upload's cancel() refuses the whole upload: no file, no record", async () => {
    const before = ((await (await fetch(`${app.url}/fileupload`)).json()) as Rec[]).length;
    const res = await fetch(`${app.url}/fileupload`, { method: 'POST', body: form({ 'ok.txt': 'fine', 'refused.txt': 'nope' }) });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ message: 'no such files here' });
    expect(((await (await fetch(`${app.url}/fileupload`)).json()) as Rec[]).length).toBe(before);
    expect(await readdir(join(app.dir, 'upload'))).not.toContain('ok.txt');
  });

  it('a body that is not multipart is 415; a form without a file is 400', async () => {
    expect((await fetch(`${app.url}/fileupload`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(415);
    expect((await fetch(`${app.url}/fileupload`, { method: 'POST', body: form({}, { a: '1' }) })).status).toBe(400);
  });
});

describe('Fileupload: authorization', () => {
  let secured: FileuploadApp;
  beforeAll(async () => {
    secured = await startFileuploadApp({ config: { authorization: true }, resources: { users: { type: 'UserCollection', properties: {} } } });
  });
  afterAll(async () => {
    await secured?.close();
  });

  async function login(username: string): Promise<string> {
    const headers = { 'content-type': 'application/json' };
    await fetch(`${secured.url}/users`, { method: 'POST', headers, body: JSON.stringify({ username, password: 'pw' }) });
    const res = await fetch(`${secured.url}/users/login`, { method: 'POST', headers, body: JSON.stringify({ username, password: 'pw' }) });
    expect(res.status).toBe(200);
    return (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  }

  it('anonymous requests are refused; each user deletes only their own files', async () => {
    expect((await fetch(`${secured.url}/fileupload`)).status).toBe(403);
    expect((await fetch(`${secured.url}/fileupload`, { method: 'POST', body: form({ 'x.txt': 'x' }) })).status).toBe(403);
    const ada = await login('ada');
    const bob = await login('bob');
    const res = await fetch(`${secured.url}/fileupload`, { method: 'POST', headers: { cookie: ada }, body: form({ 'x.txt': 'x' }) });
    const [rec] = (await res.json()) as Rec[];
    expect(rec?.uploaderId).toMatch(/^[0-9a-f]{16}$/);
    expect((await fetch(`${secured.url}/fileupload/${rec?.id}`, { method: 'DELETE', headers: { cookie: bob } })).status).toBe(404);
    expect((await fetch(`${secured.url}/fileupload/${rec?.id}`, { method: 'DELETE', headers: { cookie: ada } })).status).toBe(200);
  });
});
