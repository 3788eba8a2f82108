import { request } from 'node:http';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';
import { until } from './helpers/wait.js';

/**
 * File properties survive kill -9 (issue 43): a svc process killed during uploads, replacements
 * and deletes leaves, once restarted and swept, exactly the files its objects hold, each served.
 */
let dir: string;
let app: string;
const running: SvcProcess[] = [];

type FileInfo = { id: string; url: string };
type Post = { id: string; photo?: FileInfo | null; docs?: FileInfo[] };

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-files-crash-'));
  app = join(dir, 'app');
  await mkdir(join(app, 'resources', 'posts'), { recursive: true });
  await writeFile(join(app, 'resources', 'posts', 'config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, photo: { type: 'file' }, docs: { type: 'file', many: true } } }));
  // Grace 0: the sweep at start removes any file no object holds, however young.
  await writeFile(join(app, 'app.json'), JSON.stringify({ files: { orphanGraceMinutes: 0 } }));
});
afterEach(async () => {
  for (const p of running.splice(0)) await p.stop('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

async function start(): Promise<SvcProcess> {
  const p = await startSvc([app], {}, 30_000);
  running.push(p);
  return p;
}

async function filesOnDisk(): Promise<string[]> {
  const root = join(app, 'data', 'files');
  try {
    return ((await readdir(root, { recursive: true, withFileTypes: true })) as { name: string; parentPath: string; isFile(): boolean }[])
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name).slice(root.length + 1))
      .sort();
  } catch {
    return [];
  }
}

/** The keys the objects hold, as the server answers them. */
async function heldKeys(url: string): Promise<string[]> {
  const posts = (await (await fetch(`${url}/posts`)).json()) as Post[];
  const keys: string[] = [];
  for (const p of posts) for (const f of [...(p.photo ? [p.photo] : []), ...(p.docs ?? [])]) keys.push(f.url.slice(1));
  return keys.sort();
}

const put = (url: string, path: string, body: Buffer, method = 'PUT'): Promise<number> =>
  fetch(url + path, { method, body }).then(
    (r) => r.status,
    () => 0,
  );

describe('file properties and kill -9', () => {
  it('killed during uploads, replacements and deletes: after a restart the disk holds exactly the files objects hold', async () => {
    let p = await start();
    const posts: Post[] = [];
    for (let i = 0; i < 30; i++) posts.push((await (await fetch(`${p.url}/posts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: `p${i}` }) })).json()) as Post);
    for (const post of posts) expect(await put(p.url, `/posts/${post.id}/photo?name=a.txt`, Buffer.from(`first ${post.id}`))).toBe(200);
    // One upload left half sent, many replacements, additions and deletes in flight: then kill -9.
    const half = request(`${p.url}/posts/${(posts[0] as Post).id}/docs`, { method: 'POST', headers: { 'content-length': String(4 * 1024 * 1024) } });
    half.on('error', () => undefined);
    half.write(Buffer.alloc(1024 * 1024, 0x61));
    const work: Promise<unknown>[] = [];
    for (const [i, post] of posts.entries()) {
      work.push(put(p.url, `/posts/${post.id}/photo?name=b.txt`, Buffer.alloc(200_000, 0x62)));
      work.push(put(p.url, `/posts/${post.id}/docs?name=c.txt`, Buffer.alloc(100_000, 0x63), 'POST'));
      if (i % 3 === 0) work.push(fetch(`${p.url}/posts/${post.id}`, { method: 'DELETE' }).catch(() => undefined));
    }
    await until(async () => (await filesOnDisk()).some((f) => f.startsWith('.tmp/')));
    await new Promise((r) => setTimeout(r, 30));
    await p.stop('SIGKILL');
    await Promise.allSettled(work);
    p = await start();
    // The sweep at start: what no object holds goes (received parts, stored files of writes that
    // never happened, files of replaced or deleted objects); what objects hold stays.
    await until(async () => {
      const disk = await filesOnDisk();
      return JSON.stringify(disk) === JSON.stringify(await heldKeys(p.url));
    }, 20_000);
    const held = await heldKeys(p.url);
    expect(held.length).toBeGreaterThan(0);
    for (const key of held) expect((await fetch(`${p.url}/${key}`)).status).toBe(200);
  }, 90_000);
});
