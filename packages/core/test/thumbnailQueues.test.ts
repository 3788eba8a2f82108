import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDiskFileStorage } from '../src/files/diskFileStorage.js';
import type { FileStorage } from '../src/files/FileStorage.js';
import { ThumbnailQueues } from '../src/files/thumbnails.js';
import type { Thumbnailer } from '../src/files/thumbnails.js';

/**
 * The thumbnails a server is making (issue 43) are held by its ThumbnailQueues, made once per
 * server and shared by its collections (no module state, issue 39): at most two made at a time
 * per server whatever the collection, one size of one image made once however many ask together,
 * and another server's queue (another app in the same process) not held up by this one's.
 */
describe('ThumbnailQueues', () => {
  let dir: string;
  let storage: FileStorage;

  /** A thumbnailer whose makes wait until released, counting how many run at once. */
  function gatedThumbnailer(): Thumbnailer & { running: number; most: number; made: number; release(): void } {
    let open: () => void = () => undefined;
    let gate = new Promise<void>((resolve) => (open = resolve));
    const t = {
      running: 0,
      most: 0,
      made: 0,
      release() {
        open();
        gate = new Promise<void>((resolve) => (open = resolve));
      },
      async make(image: Buffer): Promise<Buffer> {
        t.running++;
        t.most = Math.max(t.most, t.running);
        await gate;
        t.running--;
        t.made++;
        return Buffer.concat([Buffer.from('thumb:'), image]);
      },
    };
    return t;
  }

  /** Waits until `check` holds (each turn of the event loop, at most 5 s). */
  async function until(check: () => boolean): Promise<void> {
    for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(check()).toBe(true);
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-thumbqueues-'));
    storage = createDiskFileStorage(join(dir, 'files'));
    for (let i = 0; i < 6; i++) {
      const temp = join(dir, `image-${i}`);
      await writeFile(temp, `image ${i}`);
      await storage.put(`img/${i}`, temp, 'image/png');
    }
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('one Thumbnails per thumbnailer and limit; a new limit replaces it; each server its own', () => {
    const t = gatedThumbnailer();
    const queues = new ThumbnailQueues();
    const first = queues.of(t, 1000);
    expect(queues.of(t, 1000)).toBe(first);
    const wider = queues.of(t, 2000);
    expect(wider).not.toBe(first);
    expect(wider.maxPixels).toBe(2000);
    expect(queues.of(t, 2000)).toBe(wider);
    expect(new ThumbnailQueues().of(t, 2000)).not.toBe(wider);
  });

  it("what one server's collections ask shares its queue (two at a time in all); another server's queue is its own", async () => {
    const t = gatedThumbnailer();
    const serverA = new ThumbnailQueues();
    // Each collection of a server asks the server's queues when it is built (collectionFilesOf).
    const posts = serverA.of(t, 1000);
    const notes = serverA.of(t, 1000);
    const size = { width: 8, height: 8 };
    const asked = [0, 1, 2, 3].map((i) => (i % 2 === 0 ? posts : notes).open(storage, `img/${i}`, `img/${i}.8x8`, size, 'image/png'));
    await until(() => t.running === 2);
    // Another app in the same process, with the same thumbnailer: not queued behind server A's four.
    const elsewhere = new ThumbnailQueues().of(t, 1000).open(storage, 'img/4', 'img/4.8x8', size, 'image/png');
    await until(() => t.running === 3);
    for (let i = 0; i < 500 && t.made < 5; i++) {
      t.release();
      await new Promise((r) => setTimeout(r, 10));
    }
    const answers = await Promise.all([...asked, elsewhere]);
    expect(t.made).toBe(5);
    expect(answers.every((a) => a !== undefined)).toBe(true);
    expect(t.most).toBe(3);
  });

  it('one size of one image asked for together is made once', async () => {
    const t = gatedThumbnailer();
    const thumbnails = new ThumbnailQueues().of(t, 1000);
    const size = { width: 8, height: 8 };
    const asked = Array.from({ length: 5 }, () => thumbnails.open(storage, 'img/5', 'img/5.8x8', size, 'image/png'));
    await until(() => t.running === 1);
    t.release();
    await Promise.all(asked);
    expect(t.made).toBe(1);
  });
});
