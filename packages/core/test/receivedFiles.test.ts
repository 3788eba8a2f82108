import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileSettingsOf } from '../src/files/fileSettings.js';
import { sweepTemp } from '../src/files/orphanSweep.js';
import { ReceivedFiles } from '../src/files/receiveFile.js';

/**
 * The files a server is receiving (issue 43): held by their server's ReceivedFiles (no module
 * state, issue 39), each hold ending with its file's publication, removal or failure, and the
 * temporary folder's sweep leaving only what its own server holds.
 */
describe('ReceivedFiles', () => {
  let dir: string;
  const settings = fileSettingsOf('posts', 'doc', { type: 'file', maxSize: 100 });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-received-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('holds a file from its receive to its release or discard, and none after a failed receive', async () => {
    const received = new ReceivedFiles();
    const tempDir = join(dir, 'a', '.tmp');
    const one = await received.receive(Readable.from([Buffer.from('hello')]), settings, tempDir, 'a.txt');
    const two = await received.receive(Readable.from([Buffer.from('world')]), settings, tempDir, 'b.txt');
    expect([received.heldCount, received.isHeld(one.path), received.isHeld(two.path)]).toEqual([2, true, true]);
    received.release(one.path);
    await received.discard(two.path);
    expect(received.heldCount).toBe(0);
    // Past maxSize: refused, the partial file removed, nothing held.
    await expect(received.receive(Readable.from([Buffer.alloc(101, 'x')]), settings, tempDir, 'big.txt')).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(received.heldCount).toBe(0);
    expect((await readdir(tempDir)).sort()).toEqual([one.path.slice(tempDir.length + 1)]);
  });

  it("is each server's own: a sweep leaves the files its server holds, not another's", async () => {
    const tempDir = join(dir, 'b', '.tmp');
    const mine = new ReceivedFiles();
    const other = new ReceivedFiles();
    const held = await mine.receive(Readable.from([Buffer.from('held')]), settings, tempDir, 'h.txt');
    const others = await other.receive(Readable.from([Buffer.from('other')]), settings, tempDir, 'o.txt');
    await writeFile(join(tempDir, 'left-by-a-kill.part'), 'half');
    expect(await sweepTemp(tempDir, mine, 0)).toBe(2);
    expect(await readdir(tempDir)).toEqual([held.path.slice(tempDir.length + 1)]);
    expect(other.isHeld(others.path)).toBe(true);
  });

  it('receives into more folders than it remembers as made (a forgotten folder is made again)', async () => {
    const received = new ReceivedFiles();
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 20; i++) {
        const tempDir = join(dir, 'many', String(i));
        if (round === 1) await rm(tempDir, { recursive: true, force: true });
        const file = await received.receive(Readable.from([Buffer.from('x')]), settings, tempDir, 'x.txt');
        await received.discard(file.path);
      }
    }
    expect(received.heldCount).toBe(0);
  });

  it('with no grace, the sweep removes a part written within the same millisecond (its mtime has a fraction Date.now() lacks)', async () => {
    const temp = await mkdtemp(join(dir, 'same-ms-'));
    await writeFile(join(temp, 'left.part'), 'half');
    const { mtimeMs } = await stat(join(temp, 'left.part'));
    expect(await sweepTemp(temp, new ReceivedFiles(), 0, mtimeMs - 0.5)).toBe(1);
    expect(await readdir(temp)).toEqual([]);
  });
});
