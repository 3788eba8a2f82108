import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readlink, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, ReceivedFiles, UserCollection, createDiskFileStorage } from '@svc/core';
import type { CollectionEventRunner, FileStorage, PropertyDef, StoredFile } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

/** A 1x1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const HTML = Buffer.from('<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>');
const SVG = Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>');

const properties: Record<string, PropertyDef> = {
  title: { type: 'string' },
  owner: { type: 'string' },
  hidden: { type: 'boolean' },
  photo: { type: 'file', maxSize: 64 * 1024, types: ['image/*'] },
  attachments: { type: 'file', many: true, maxFiles: 3, maxSize: 64 * 1024 },
  secret: { type: 'file', private: true },
  ownerOnly: { type: 'file', read: { owner: '@me.id' }, write: { owner: '@me.id' } },
};

type Obj = Record<string, unknown> & { id: string };

/** Files under a folder, at any depth (what the disk storage holds). */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) await walk(join(d, e.name), rel ? `${rel}/${e.name}` : e.name);
      else out.push(rel ? `${rel}/${e.name}` : e.name);
    }
  };
  await walk(dir, '');
  return out.sort();
}

describe.each(storeKinds())('file properties ($name store, disk files)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let dir: string;
  let storage: FileStorage;
  let posts: Collection;
  const root = { 'svc-ssh-key': 'any' };
  const gate = (() => {
    let reach = (): void => {};
    let open = (): void => {};
    return { reached: new Promise<void>((r) => (reach = r)), reach: () => reach(), opened: new Promise<void>((r) => (open = r)), open: () => open() };
  })();

  beforeAll(async () => {
    store = await kind.make();
    dir = await mkdtemp(join(tmpdir(), 'svc-files-test-'));
    storage = createDiskFileStorage(dir);
    const files = { storage, received: new ReceivedFiles(), sweep: { intervalMs: 0, graceMs: 0 } };
    posts = new Collection({
      path: '/posts',
      properties,
      store: store.store.collection('posts'),
      rules: {
        read: { $or: [{ hidden: { $ne: true } }, { owner: '@me.id' }] },
        update: { $or: [{ owner: { $exists: false } }, { owner: '@me.id' }] },
        delete: { $or: [{ owner: { $exists: false } }, { owner: '@me.id' }] },
      },
      files,
    });
    // On Put of an object titled 'slow' waits for the test (gate.open()): a request held between its read and its write.
    const gated = new Collection({
      path: '/gated',
      properties: { title: { type: 'string' }, attachments: { type: 'file', many: true } },
      store: store.store.collection('gated'),
      files,
      events: {
        has: (name: string) => name === 'put',
        run: async (_name: string, args: { object: Record<string, unknown>; hidden: readonly string[]; protectedProps: readonly string[] }) => {
          if (args.object.title === 'slow') {
            gate.reach();
            await gate.opened;
          }
          return { object: args.object, hidden: args.hidden, protectedProps: args.protectedProps };
        },
      } as unknown as CollectionEventRunner,
    });
    const users = new UserCollection({ path: '/users', properties: { username: { type: 'string' }, idCard: { type: 'file', private: true } }, store: store.store.collection('users'), files });
    t = await startTestServer(store.store, [posts, users, gated]);
  });
  afterAll(async () => {
    await t.close();
    await store.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  async function form(method: string, path: string, parts: Record<string, string | [Buffer, string, string?][]>, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
    const data = new FormData();
    for (const [name, value] of Object.entries(parts)) {
      if (typeof value === 'string') data.append(name, value);
      else for (const [bytes, fileName, type] of value) data.append(name, new Blob([bytes], { type: type ?? 'application/octet-stream' }), fileName);
    }
    const res = await fetch(t.url + path, { method, body: data, headers });
    const text = await res.text();
    return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), headers: res.headers };
  }

  async function download(path: string, headers: Record<string, string> = {}): Promise<{ status: number; bytes: Buffer; headers: Headers }> {
    const res = await fetch(t.url + path, { headers });
    return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()), headers: res.headers };
  }

  it('a create with a form stores its files: the answer holds {id, name, size, type, url} per file, sniffed types', async () => {
    const res = await form('POST', '/posts', { title: 'first', photo: [[PNG, 'cat.png', 'image/png']], attachments: [[Buffer.from('hello'), 'a.txt'], [HTML, 'b.png', 'image/png']] });
    expect(res.status).toBe(200);
    const post = res.body as Obj;
    const photo = post.photo as StoredFile;
    expect(photo).toEqual({ id: expect.stringMatching(/^[0-9a-f]{24}$/), name: 'cat.png', size: PNG.length, type: 'image/png', url: `/posts/${post.id}/photo/${photo.id}` });
    const attachments = post.attachments as StoredFile[];
    expect(attachments.map((a) => [a.name, a.type, a.size])).toEqual([
      ['a.txt', 'text/plain', 5],
      ['b.png', 'text/html', HTML.length],
    ]);
    // The same object on a GET (the stored value, answered as stored).
    expect((await t.request('GET', `/posts/${post.id}`)).body).toEqual(post);
    const got = await download(photo.url);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(PNG)).toBe(true);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.headers.get('content-security-policy')).toBe('sandbox');
    // Single file: also at the property's own path.
    expect((await download(`/posts/${post.id}/photo`)).bytes.equals(PNG)).toBe(true);
  });

  it('HTML sent as image/png is served as an attachment of application/octet-stream, sandboxed; SVG likewise (keeping its type)', async () => {
    const post = (await form('POST', '/posts', { attachments: [[HTML, 'evil.png', 'image/png'], [SVG, 'x.jpg', 'image/jpeg']] })).body as Obj;
    const [html, svg] = post.attachments as StoredFile[];
    const a = await download((html as StoredFile).url);
    expect(a.headers.get('content-type')).toBe('application/octet-stream');
    expect(a.headers.get('content-disposition')).toMatch(/^attachment; filename="evil.png"/);
    expect(a.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(a.headers.get('x-content-type-options')).toBe('nosniff');
    const b = await download((svg as StoredFile).url);
    expect(b.headers.get('content-type')).toBe('image/svg+xml');
    expect(b.headers.get('content-disposition')).toMatch(/^attachment/);
  });

  it('types: a property allowing images refuses HTML whatever it is called or declared (415), and keeps nothing', async () => {
    const before = await filesUnder(dir);
    const res = await form('POST', '/posts', { title: 'x', photo: [[HTML, 'cat.png', 'image/png']] });
    expect(res.status).toBe(415);
    expect(res.body.errors).toEqual({ photo: 'must be of type image/*' });
    expect(await filesUnder(dir)).toEqual(before);
  });

  it('maxSize: a larger file is cut off with 413 and nothing of it remains (form and raw body)', async () => {
    const big = Buffer.alloc(64 * 1024 + 1, 0x61);
    const before = await filesUnder(dir);
    const res = await form('POST', '/posts', { attachments: [[big, 'big.txt']] });
    expect(res.status).toBe(413);
    const post = (await t.request('POST', '/posts', { body: { title: 'raw' } })).body as Obj;
    const raw = await fetch(`${t.url}/posts/${post.id}/attachments`, { method: 'POST', body: big });
    expect(raw.status).toBe(413);
    expect(await filesUnder(dir)).toEqual(before);
    expect(((await t.request('GET', `/posts/${post.id}`)).body as Obj).attachments).toBeUndefined();
  });

  it('maxFiles: a fourth file is refused, by form and at the property path', async () => {
    const res = await form('POST', '/posts', { attachments: [[Buffer.from('1'), '1.txt'], [Buffer.from('2'), '2.txt'], [Buffer.from('3'), '3.txt'], [Buffer.from('4'), '4.txt']] });
    expect(res.status).toBe(413);
    const post = (await form('POST', '/posts', { attachments: [[Buffer.from('1'), '1.txt'], [Buffer.from('2'), '2.txt'], [Buffer.from('3'), '3.txt']] })).body as Obj;
    const before = await filesUnder(dir);
    const more = await fetch(`${t.url}/posts/${post.id}/attachments`, { method: 'POST', body: 'four' });
    expect(more.status).toBe(400);
    expect(await more.json()).toMatchObject({ errors: { attachments: 'holds at most 3 files' } });
    expect(await filesUnder(dir)).toEqual(before);
  });

  it('PUT at the property path replaces the file; the old one is removed after the object is written', async () => {
    const post = (await form('POST', '/posts', { photo: [[PNG, 'a.png']] })).body as Obj;
    const old = post.photo as StoredFile;
    const res = await fetch(`${t.url}/posts/${post.id}/photo?name=b.png`, { method: 'PUT', body: PNG });
    expect(res.status).toBe(200);
    const updated = (await res.json()) as Obj;
    const photo = updated.photo as StoredFile;
    expect(photo.id).not.toBe(old.id);
    expect(photo.name).toBe('b.png');
    expect((await download(old.url)).status).toBe(404);
    expect((await download(photo.url)).status).toBe(200);
    const held = (await filesUnder(dir)).filter((f) => f.startsWith(`posts/${post.id}/`));
    expect(held).toEqual([`posts/${post.id}/photo/${photo.id}`]);
  });

  it('POST appends to a list, DELETE /<id>/<prop>/<file> removes one, DELETE /<id>/<prop> all', async () => {
    const post = (await t.request('POST', '/posts', { body: { title: 'list' } })).body as Obj;
    for (const text of ['one', 'two', 'three']) expect((await fetch(`${t.url}/posts/${post.id}/attachments?name=${text}.txt`, { method: 'POST', body: text })).status).toBe(200);
    let got = (await t.request('GET', `/posts/${post.id}`)).body as Obj;
    const list = got.attachments as StoredFile[];
    expect(list.map((f) => f.name)).toEqual(['one.txt', 'two.txt', 'three.txt']);
    expect((await fetch(`${t.url}${list[1]?.url}`, { method: 'DELETE' })).status).toBe(200);
    got = (await t.request('GET', `/posts/${post.id}`)).body as Obj;
    expect((got.attachments as StoredFile[]).map((f) => f.name)).toEqual(['one.txt', 'three.txt']);
    expect((await download(list[1]?.url as string)).status).toBe(404);
    expect((await fetch(`${t.url}/posts/${post.id}/attachments`, { method: 'DELETE' })).status).toBe(200);
    got = (await t.request('GET', `/posts/${post.id}`)).body as Obj;
    expect(got.attachments).toEqual([]);
    expect((await filesUnder(dir)).filter((f) => f.startsWith(`posts/${post.id}/`))).toEqual([]);
  });

  it('a JSON body leaves a file property alone, may send it back as answered, reorder or drop files, or set null', async () => {
    const post = (await form('POST', '/posts', { photo: [[PNG, 'a.png']], attachments: [[Buffer.from('1'), '1.txt'], [Buffer.from('2'), '2.txt']] })).body as Obj;
    let res = await t.request('PUT', `/posts/${post.id}`, { body: { title: 'renamed' } });
    expect((res.body as Obj).photo).toEqual(post.photo);
    res = await t.request('PUT', `/posts/${post.id}`, { body: { ...post, title: 'again' } });
    expect(res.status).toBe(200);
    expect((res.body as Obj).photo).toEqual(post.photo);
    const [one, two] = post.attachments as StoredFile[];
    res = await t.request('PUT', `/posts/${post.id}`, { body: { attachments: [(two as StoredFile).id, one] } });
    expect(((res.body as Obj).attachments as StoredFile[]).map((f) => f.name)).toEqual(['2.txt', '1.txt']);
    res = await t.request('PUT', `/posts/${post.id}`, { body: { photo: null, attachments: [one] } });
    expect((res.body as Obj).photo).toBeNull();
    expect((await download((post.photo as StoredFile).url)).status).toBe(404);
    expect((await download((two as StoredFile).url)).status).toBe(404);
    expect((await filesUnder(dir)).filter((f) => f.startsWith(`posts/${post.id}/`))).toEqual([`posts/${post.id}/attachments/${(one as StoredFile).id}`]);
  });

  it("a JSON body cannot name another object's file (a file is never shared, so never removed with another object)", async () => {
    const theirs = (await form('POST', '/posts', { photo: [[PNG, 'theirs.png']] })).body as Obj;
    const mine = (await t.request('POST', '/posts', { body: { title: 'mine' } })).body as Obj;
    const photo = theirs.photo as StoredFile;
    for (const value of [photo, photo.id, { ...photo, url: `/posts/${mine.id}/photo/${photo.id}` }]) {
      const put = await t.request('PUT', `/posts/${mine.id}`, { body: { photo: value } });
      expect(put.status).toBe(400);
      const post = await t.request('POST', '/posts', { body: { photo: value } });
      expect(post.status).toBe(400);
    }
    expect((await download(`/posts/${mine.id}/photo/${photo.id}`)).status).toBe(404);
  });

  it('a file is served under the object read rule: hidden objects and deleted ones answer 404', async () => {
    const alice = t.client();
    await alice.request('POST', '/users', { body: { username: 'alice', password: 'pw' } });
    await alice.request('POST', '/users/login', { body: { username: 'alice', password: 'pw' } });
    const me = (await alice.request('GET', '/users/me')).body as Obj;
    const post = (await form('POST', '/posts', { $json: JSON.stringify({ owner: me.id, hidden: true }), photo: [[PNG, 'p.png']] }, { cookie: `sid=${alice.sid as string}` })).body as Obj;
    const url = (post.photo as StoredFile).url;
    expect((await download(url, { cookie: `sid=${alice.sid as string}` })).status).toBe(200);
    // Anyone else: the object is hidden, so is its file.
    expect((await download(url)).status).toBe(404);
    expect((await download(url, { 'svc-ssh-key': 'any' })).status).toBe(200);
    // Nor may they replace or delete it.
    expect((await fetch(t.url + `/posts/${post.id}/photo`, { method: 'PUT', body: PNG })).status).toBe(400);
    expect((await fetch(t.url + url, { method: 'DELETE' })).status).toBe(400);
    expect((await download(url, { 'svc-ssh-key': 'any' })).status).toBe(200);
    expect((await alice.request('DELETE', `/posts/${post.id}`)).status).toBe(204);
    expect((await download(url, { 'svc-ssh-key': 'any' })).status).toBe(404);
    expect((await filesUnder(dir)).filter((f) => f.startsWith(`posts/${post.id}/`))).toEqual([]);
  });

  it("a property's own read and write rules, and private: not served, not written by whom they refuse", async () => {
    const bob = t.client();
    await bob.request('POST', '/users', { body: { username: 'bob', password: 'pw' } });
    await bob.request('POST', '/users/login', { body: { username: 'bob', password: 'pw' } });
    const me = (await bob.request('GET', '/users/me')).body as Obj;
    const cookie = { cookie: `sid=${bob.sid as string}` };
    const post = (await form('POST', '/posts', { $json: JSON.stringify({ owner: me.id }), ownerOnly: [[PNG, 'o.png']], secret: [[Buffer.from('s3cr3t'), 's.txt']] }, cookie)).body as Obj;
    expect(post.secret).toBeUndefined();
    const ownerOnly = post.ownerOnly as StoredFile;
    expect((await download(ownerOnly.url, cookie)).status).toBe(200);
    expect((await download(ownerOnly.url)).status).toBe(404);
    const stored = (await t.request('GET', `/posts/${post.id}`, { headers: root })).body as Obj;
    const secret = stored.secret as StoredFile;
    expect((await download(secret.url, cookie)).status).toBe(404);
    expect((await download(secret.url, root)).bytes.toString()).toBe('s3cr3t');
    // Anonymous may not update bob's post (its update rule: 403, the post is readable), nor write
    // ownerOnly on a post without an owner (the property's write rule).
    expect((await fetch(t.url + `/posts/${post.id}/ownerOnly`, { method: 'PUT', body: PNG })).status).toBe(403);
    const open = (await t.request('POST', '/posts', { body: { title: 'no owner' } })).body as Obj;
    const refused = await fetch(t.url + `/posts/${open.id}/ownerOnly`, { method: 'PUT', body: PNG });
    expect(refused.status).toBe(403);
    const before = await filesUnder(dir);
    expect(before.filter((f) => f.startsWith(`posts/${open.id}/`))).toEqual([]);
  });

  it("a user's own private file: shown at /users/me and served to that user only", async () => {
    const carol = t.client();
    await carol.request('POST', '/users', { body: { username: 'carol', password: 'pw' } });
    await carol.request('POST', '/users/login', { body: { username: 'carol', password: 'pw' } });
    const cookie = { cookie: `sid=${carol.sid as string}` };
    const me = (await carol.request('GET', '/users/me')).body as Obj;
    const put = await fetch(`${t.url}/users/${me.id}/idCard?name=id.txt`, { method: 'PUT', body: 'card', headers: cookie });
    expect(put.status).toBe(200);
    expect(((await put.json()) as Obj).idCard).toBeUndefined();
    const card = ((await carol.request('GET', '/users/me')).body as Obj).idCard as StoredFile;
    expect((await download(card.url, cookie)).bytes.toString()).toBe('card');
    expect((await download(card.url)).status).toBe(404);
    const dave = t.client();
    await dave.request('POST', '/users', { body: { username: 'dave', password: 'pw' } });
    await dave.request('POST', '/users/login', { body: { username: 'dave', password: 'pw' } });
    expect((await download(card.url, { cookie: `sid=${dave.sid as string}` })).status).toBe(404);
    expect(JSON.stringify((await dave.request('GET', `/users/${me.id}`)).body)).not.toContain(card.id);
  });

  it('path traversal in names is harmless: names keep their last segment only, keys are ids', async () => {
    const post = (await form('POST', '/posts', { attachments: [[Buffer.from('x'), '../../../etc/passwd'], [Buffer.from('y'), '..\\..\\win.ini'], [Buffer.from('z'), '\u202egnp.exe']] })).body as Obj;
    expect((post.attachments as StoredFile[]).map((f) => f.name)).toEqual(['passwd', 'win.ini', 'gnp.exe']);
    for (const path of [`/posts/${post.id}/attachments/..%2F..%2Fx`, `/posts/..%2F..%2F/attachments`, `/posts/${post.id}/attachments/../../../etc/passwd`]) {
      expect([400, 404]).toContain((await download(path)).status);
    }
    const all = await filesUnder(dir);
    expect(all.every((f) => /^(posts|users)\/[0-9a-f]{16}\/[A-Za-z]+\/[0-9a-f]{24}$/.test(f) || f.startsWith('.tmp/'))).toBe(true);
  });

  it('thousands of parts and a huge preamble are refused without reading on for ever', async () => {
    const boundary = 'x'.repeat(20);
    const parts = Array.from({ length: 3000 }, (_, i) => `--${boundary}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv\r\n`).join('');
    const many = await fetch(`${t.url}/posts`, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: `${parts}--${boundary}--\r\n` });
    expect(many.status).toBe(413);
    const preamble = Buffer.alloc(8 * 1024 * 1024, 0x61);
    const big = await fetch(`${t.url}/posts`, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: Buffer.concat([preamble, Buffer.from(`\r\n--${boundary}--\r\n`)]) });
    expect(big.status).toBe(413);
  });

  it('parallel replacements of one property leave exactly one file, served, and no other', async () => {
    const post = (await t.request('POST', '/posts', { body: { title: 'race' } })).body as Obj;
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => fetch(`${t.url}/posts/${post.id}/photo?name=${i}.png`, { method: 'PUT', body: PNG })));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    const final = ((await t.request('GET', `/posts/${post.id}`)).body as Obj).photo as StoredFile;
    expect((await download(final.url)).status).toBe(200);
    expect((await filesUnder(dir)).filter((f) => f.startsWith(`posts/${post.id}/`))).toEqual([`posts/${post.id}/photo/${final.id}`]);
  });

  it('a JSON update made from a file list another request changed meanwhile never holds a removed file: 409 once its On Put ran, and sent again it is refused', async () => {
    const post = (await form('POST', '/gated', { attachments: [[Buffer.from('1'), '1.txt'], [Buffer.from('2'), '2.txt']] })).body as Obj;
    const [one, two] = post.attachments as StoredFile[];
    // A client saves the object as it read it; its On Put waits while file 1 is removed.
    const saving = t.request('PUT', `/gated/${post.id}`, { body: { title: 'slow', attachments: [one, two] } });
    await gate.reached;
    const removed = await fetch(`${t.url}/gated/${post.id}/attachments/${(one as StoredFile).id}`, { method: 'DELETE' });
    expect(removed.status).toBe(200);
    gate.open();
    // Its On Put ran, so the lost compare-and-set is not made again (scripts run at most once per
    // request: their side effects would repeat): 409, nothing written. Sent again, it is refused.
    const saved = await saving;
    expect(saved.status).toBe(409);
    const again = await t.request('PUT', `/gated/${post.id}`, { body: { title: 'slow', attachments: [one, two] } });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ errors: { attachments: 'names a file this object does not hold' } });
    const held = ((await t.request('GET', `/gated/${post.id}`)).body as Obj).attachments as StoredFile[];
    expect(held.map((f) => f.id)).toEqual([(two as StoredFile).id]);
    expect((await filesUnder(dir)).filter((f) => f.startsWith(`gated/${post.id}/`))).toEqual([`gated/${post.id}/attachments/${(two as StoredFile).id}`]);
  });

  it('a Range request answers 206 with the bytes asked; a bad range 416; If-None-Match 304', async () => {
    const post = (await form('POST', '/posts', { attachments: [[Buffer.from('0123456789'), 'digits.txt']] })).body as Obj;
    const url = (post.attachments as StoredFile[])[0]?.url as string;
    const part = await download(url, { range: 'bytes=2-5' });
    expect(part.status).toBe(206);
    expect(part.bytes.toString()).toBe('2345');
    expect(part.headers.get('content-range')).toBe('bytes 2-5/10');
    expect((await download(url, { range: 'bytes=-3' })).bytes.toString()).toBe('789');
    expect((await download(url, { range: 'bytes=20-30' })).status).toBe(416);
    const etag = (await download(url)).headers.get('etag') as string;
    expect((await download(url, { 'if-none-match': etag })).status).toBe(304);
  });

  it('a small file is answered from one read, a larger one streamed: the same bytes and headers, ranges and HEAD; no descriptor left open, also when a client goes away', async () => {
    const small = Buffer.from('small file');
    const large = randomBytes(200_000);
    const post = (await form('POST', '/gated', { attachments: [[small, 'small.bin'], [large, 'large.bin']] })).body as Obj;
    const [smallUrl, largeUrl] = (post.attachments as StoredFile[]).map((f) => f.url) as [string, string];
    for (const [url, bytes] of [[smallUrl, small], [largeUrl, large]] as const) {
      const got = await download(url);
      expect([got.status, got.bytes.equals(bytes), got.headers.get('content-length'), got.headers.get('x-content-type-options'), got.headers.get('content-disposition')]).toEqual([200, true, String(bytes.length), 'nosniff', expect.stringMatching(/\.bin/)]);
      const head = await fetch(t.url + url, { method: 'HEAD' });
      expect([head.status, head.headers.get('content-length'), (await head.arrayBuffer()).byteLength]).toEqual([200, String(bytes.length), 0]);
      const part = await download(url, { range: 'bytes=1-3' });
      expect([part.status, part.bytes.equals(bytes.subarray(1, 4)), part.headers.get('content-range')]).toEqual([206, true, `bytes 1-3/${bytes.length}`]);
    }
    // Clients that go away after the headers: their files are closed too.
    for (let i = 0; i < 10; i++) {
      const abort = new AbortController();
      const res = await fetch(t.url + (i % 2 === 0 ? largeUrl : smallUrl), { signal: abort.signal });
      expect(res.status).toBe(200);
      abort.abort();
    }
    await Promise.all(Array.from({ length: 20 }, (_, i) => download(i % 2 === 0 ? smallUrl : largeUrl)));
    const openStored = async (): Promise<number> => {
      let count = 0;
      for (const fd of await readdir('/proc/self/fd')) if ((await readlink(`/proc/self/fd/${fd}`).catch(() => '')).startsWith(dir)) count++;
      return count;
    };
    for (let i = 0; i < 100 && (await openStored()) > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await openStored()).toBe(0);
  });

  it('a stored file that is not a regular file (a FIFO put there by hand) answers 404 without waiting for a writer', async () => {
    const post = (await form('POST', '/gated', { attachments: [[Buffer.from('was a file'), 'f.txt']] })).body as Obj;
    const file = (post.attachments as StoredFile[])[0] as StoredFile;
    const path = join(dir, 'gated', post.id, 'attachments', file.id);
    await unlink(path);
    execFileSync('mkfifo', [path]);
    const res = await fetch(t.url + file.url, { signal: AbortSignal.timeout(5000) });
    expect(res.status).toBe(404);
    await unlink(path);
  });

  it('the orphan sweep removes files no object holds (a crash between steps), and only those', async () => {
    const post = (await form('POST', '/posts', { photo: [[PNG, 'keep.png']] })).body as Obj;
    const photo = post.photo as StoredFile;
    // What a kill -9 leaves: a stored file its object never got, an object deleted before its files went.
    const { writeFile, mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'posts', post.id, 'photo'), { recursive: true });
    await writeFile(join(dir, 'posts', post.id, 'photo', 'a'.repeat(24)), 'orphan');
    await mkdir(join(dir, 'posts', 'deadbeefdeadbeef', 'photo'), { recursive: true });
    await writeFile(join(dir, 'posts', 'deadbeefdeadbeef', 'photo', 'b'.repeat(24)), 'orphan');
    await mkdir(join(dir, '.tmp'), { recursive: true });
    await writeFile(join(dir, '.tmp', 'cut.part'), 'half');
    const removed = await posts.sweepOrphanFiles();
    expect([...removed].sort()).toEqual([`posts/${post.id}/photo/${'a'.repeat(24)}`, `posts/deadbeefdeadbeef/photo/${'b'.repeat(24)}`].sort());
    expect(await filesUnder(join(dir, '.tmp'))).toEqual([]);
    expect((await download(photo.url)).status).toBe(200);
  });

  it('a DELETE with a condition removes the files of every object it deletes', async () => {
    const a = (await form('POST', '/posts', { title: 'bulk', photo: [[PNG, 'a.png']] })).body as Obj;
    const b = (await form('POST', '/posts', { title: 'bulk', photo: [[PNG, 'b.png']] })).body as Obj;
    const res = await t.request('DELETE', `/posts?id=${encodeURIComponent(JSON.stringify({ $in: [a.id, b.id] }))}`, { headers: root });
    expect(res.status).toBe(204);
    expect((await filesUnder(dir)).filter((f) => f.startsWith(`posts/${a.id}/`) || f.startsWith(`posts/${b.id}/`))).toEqual([]);
  });

  it('a form create at an id the client chose (If-None-Match: *) gets that id, its files under it; a second is refused and keeps nothing', async () => {
    const id = `offline-${Date.now().toString(36)}-abcdef`;
    const res = await form('POST', `/posts/${id}`, { title: 'chosen', photo: [[PNG, 'c.png']] }, { 'if-none-match': '*' });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(id);
    expect((res.body.photo as StoredFile).url).toMatch(new RegExp(`^/posts/${id}/photo/`));
    expect((await download((res.body.photo as StoredFile).url)).status).toBe(200);
    const again = await form('POST', `/posts/${id}`, { title: 'again', photo: [[PNG, 'd.png']] }, { 'if-none-match': '*' });
    expect(again.status).toBe(412);
    expect((await filesUnder(dir)).filter((f) => f.startsWith(`posts/${id}/`))).toEqual([`posts/${id}/photo/${(res.body.photo as StoredFile).id}`]);
  });

  it('hostile fields and names: a file part named __proto__ or after a non-file property is refused; quotes and CRLF in names stay out of headers; HEAD is checked as GET', async () => {
    const before = await filesUnder(dir);
    for (const field of ['__proto__', 'constructor', 'title']) {
      const res = await form('POST', '/posts', { [field]: [[PNG, 'x.png']] });
      expect(res.status).toBe(400);
    }
    const polluted = await form('POST', '/posts', { $json: '{"__proto__": {"photo": "x", "isRoot": true}, "title": "p"}' });
    expect(polluted.status).toBe(200);
    expect(({} as Record<string, unknown>).isRoot).toBeUndefined();
    expect(polluted.body.photo).toBeUndefined();
    expect((await filesUnder(dir)).filter((f) => !before.includes(f) && !f.startsWith('.tmp/'))).toEqual([]);
    const post = (await t.request('POST', '/posts', { body: { title: 'names', hidden: true, owner: 'nobody' } })).body as Obj;
    const res = await fetch(`${t.url}/posts/${post.id}/attachments`, { method: 'POST', body: 'hi', headers: { ...root, 'content-disposition': 'attachment; filename="a\\"; x=\\".txt"' } });
    const name = 'evil"\r\nSet-Cookie: sid=x; .txt';
    const added = await fetch(`${t.url}/posts/${post.id}/attachments?name=${encodeURIComponent(name)}`, { method: 'POST', body: 'hi', headers: root });
    expect([res.status, added.status]).toEqual([200, 200]);
    const files = ((await added.json()) as Obj).attachments as StoredFile[];
    const last = files[files.length - 1] as StoredFile;
    expect(last.name).toBe('evil"Set-Cookie: sid=x; .txt');
    const served = await download(last.url, root);
    expect(served.headers.get('set-cookie') ?? '').not.toContain('sid=x');
    expect(served.headers.get('content-disposition')).toMatch(/^inline; filename="evil_Set-Cookie: sid=x; .txt"; filename\*=UTF-8''/);
    // The object is hidden from anonymous callers: HEAD answers as GET does.
    expect((await fetch(t.url + last.url, { method: 'HEAD' })).status).toBe(404);
    const head = await fetch(t.url + last.url, { method: 'HEAD', headers: root });
    expect([head.status, head.headers.get('content-length'), (await head.arrayBuffer()).byteLength]).toEqual([200, '2', 0]);
  });

  it('a thumbnail size not declared is refused (no unbounded resize requests)', async () => {
    const post = (await form('POST', '/posts', { photo: [[PNG, 'a.png']] })).body as Obj;
    expect((await download(`${(post.photo as StoredFile).url}?thumb=100x100`)).status).toBe(400);
  });
});
