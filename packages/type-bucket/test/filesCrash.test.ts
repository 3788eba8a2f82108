import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startS3 } from './s3Server.js';
import type { TestS3 } from './s3Server.js';
import { installBucketType, runSvc } from './svcProcess.js';

/**
 * File properties kept in a Bucket resource's bucket (s3rver) survive kill -9 (issue 43): a svc
 * process killed at each step of an upload, a replacement and a delete (SVC_TEST_CRASH_AT, so the
 * step is exact, not a guessed delay) leaves orphans (a received part on the local disk, a file in
 * the bucket no object holds); the orphan sweep of the next start removes them and nothing else.
 */
type FileInfo = { id: string; url: string };
type Post = { id: string; photo?: FileInfo | null; docs?: FileInfo[] };

// Over SINGLE_PUT_MAX (256 KB): stored in the bucket with a multipart upload.
const BIG = 600 * 1024;
// A bucket name of this file's own: the local folders of received parts (one per app) start with it.
const bucketName = `crash-${randomBytes(4).toString('hex')}`;
const tempDirs = async (): Promise<string[]> =>
  (await readdir(tmpdir())).filter((name) => name.startsWith(`svc-files-${bucketName}-`)).map((name) => join(tmpdir(), name));

let s3: TestS3;
let app: string;
const running: ChildProcess[] = [];
/** What the process started last wrote, for a failure's message. */
let lastOutput = (): string => '';

beforeAll(async () => {
  s3 = await startS3(bucketName);
});
afterAll(async () => {
  await s3?.close();
  for (const dir of await tempDirs()) await rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const child of running.splice(0)) await killed(child);
  await rm(app, { recursive: true, force: true });
});

/** Writes the app: posts with a one-file `photo` and a `docs` list, kept in the bucket of /media. */
async function writeApp(sweep: boolean): Promise<void> {
  await writeFile(join(app, 'app.json'), JSON.stringify({ files: { bucket: 'media', orphanGraceMinutes: 0, ...(sweep ? {} : { sweepMinutes: 0 }) } }));
}

async function start(sweep: boolean, crashAt?: string): Promise<string> {
  await writeApp(sweep);
  const { child, url, output } = await runSvc(app, crashAt ? { SVC_TEST_CRASH_AT: crashAt } : {});
  running.push(child);
  lastOutput = output;
  return url;
}

function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGKILL');
  return exited;
}

/** Waits for the process started last to have died of its crash point. */
async function crashed(): Promise<void> {
  const child = running.pop() as ChildProcess;
  if (child.exitCode === null && child.signalCode === null) await new Promise((done) => child.once('exit', done));
  expect(child.signalCode).toBe('SIGKILL');
}

async function stop(): Promise<void> {
  const child = running.pop() as ChildProcess;
  await killed(child);
}

/** The posts of the case under way (the bucket is shared by the cases). */
const ids: string[] = [];

/** The keys of these posts' files in the bucket (s3rver keeps each object as files named after its key). */
async function bucketKeys(): Promise<string[]> {
  const entries = await readdir(join(s3.directory, s3.bucket), { recursive: true }).catch(() => [] as string[]);
  const suffix = '._S3rver_object';
  const keys = [...new Set(entries.filter((e) => e.endsWith(suffix)).map((e) => e.slice(0, -suffix.length)))];
  return keys.filter((k) => ids.some((id) => k.startsWith(`svc-files/posts/${id}/`))).sort();
}

/** Received parts left on the local disk. */
async function parts(): Promise<string[]> {
  const names: string[] = [];
  for (const dir of await tempDirs()) names.push(...(await readdir(dir).catch(() => [] as string[])));
  return names.sort();
}

/** The bucket keys the posts hold, as the server answers them. */
async function heldKeys(url: string): Promise<string[]> {
  const posts = (await (await fetch(`${url}/posts`)).json()) as Post[];
  const keys: string[] = [];
  for (const p of posts) for (const f of [...(p.photo ? [p.photo] : []), ...(p.docs ?? [])]) keys.push(`svc-files${f.url}`);
  return keys.sort();
}

const send = (url: string, path: string, method: string, body?: Buffer): Promise<Response> => fetch(url + path, { method, ...(body ? { body } : {}) });

async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 200));
  }
}

// Each case: the request that the crash point stops, and what it leaves.
const cases = [
  { step: 'files:received', what: 'an upload killed once its bytes are received, before they reach the bucket', method: 'POST', path: 'docs?name=new.bin', leaves: 'part' },
  { step: 'files:stored', what: 'an upload killed once stored in the bucket, before its object is written', method: 'POST', path: 'docs?name=new.bin', leaves: 'key' },
  { step: 'files:written', what: 'a replacement killed once its object is written, before the old file is removed', method: 'PUT', path: 'photo?name=b.bin', leaves: 'key' },
  { step: 'files:deleted', what: 'a delete killed once its object is deleted, before its files are removed', method: 'DELETE', path: '', leaves: 'key' },
] as const;

describe('file properties in a bucket and kill -9 (s3rver)', () => {
  it.each(cases)('$step: $what; the next start sweeps it', async ({ step, method, path, leaves }) => {
    app = await mkdtemp(join(tmpdir(), 'svc-files-bucket-crash-'));
    await installBucketType(app);
    await mkdir(join(app, 'resources', 'media'), { recursive: true });
    await mkdir(join(app, 'resources', 'posts'), { recursive: true });
    await writeFile(join(app, 'resources', 'media', 'config.json'), JSON.stringify({ type: 'Bucket', bucket: s3.bucket, key: s3.key, secret: s3.secret, endpoint: s3.endpoint }));
    await writeFile(join(app, 'resources', 'posts', 'config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, photo: { type: 'file' }, docs: { type: 'file', many: true } } }));

    // Two posts, each with a photo and a doc in the bucket (multipart uploads).
    let url = await start(false);
    ids.length = 0;
    for (const title of ['kept', 'hit']) {
      const post = (await (await fetch(`${url}/posts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title }) })).json()) as Post;
      for (const [path, method] of [['photo?name=a.bin', 'PUT'], ['docs?name=d.bin', 'POST']] as const) {
        const res = await send(url, `/posts/${post.id}/${path}`, method, randomBytes(BIG));
        expect(res.status, await res.text()).toBe(200);
      }
      ids.push(post.id);
    }
    const before = await heldKeys(url);
    expect(before).toHaveLength(4);
    expect(await bucketKeys()).toEqual(before);
    await stop();

    // The crash, at the exact step.
    url = await start(false, step);
    const hit = ids[1] as string;
    await send(url, `/posts/${hit}${path ? `/${path}` : ''}`, method, method === 'DELETE' ? undefined : randomBytes(BIG)).catch(() => undefined);
    await crashed();

    // Started without the sweep: the crash left what it is said to (the test would prove nothing otherwise).
    url = await start(false);
    const held = await heldKeys(url);
    if (leaves === 'part') {
      expect((await parts()).length).toBeGreaterThan(0);
      expect(await bucketKeys()).toEqual(held);
    } else {
      expect(await bucketKeys()).not.toEqual(held);
      for (const key of held) expect(await bucketKeys()).toContain(key);
    }
    if (step === 'files:deleted') expect(held).toHaveLength(2);
    await stop();

    // Started with the sweep: the bucket holds exactly the files objects hold, no part is left, each served.
    url = await start(true);
    await until(async () => JSON.stringify(await bucketKeys()) === JSON.stringify(held) && (await parts()).length === 0, 30_000).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}: the bucket holds ${(await bucketKeys()).join(', ')}; the server wrote:\n${lastOutput()}`);
    });
    expect(await heldKeys(url)).toEqual(held);
    for (const key of held) expect((await fetch(`${url}/${key.slice('svc-files/'.length)}`)).status).toBe(200);
  }, 180_000);
});
