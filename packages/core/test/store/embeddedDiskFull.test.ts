import { execFileSync } from 'node:child_process';
import { mkdtemp, open, readFile, readdir, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { isSvcError } from '../../src/errors.js';
import { createEmbeddedStore } from '../../src/store/embeddedStore.js';
import { DiskState, diskError, diskErrorLog } from '../../src/store/internal/diskError.js';
import type { Store, StoreCollection } from '../../src/store/Store.js';

// Issue 21 item 5: the embedded store on a full disk. A small tmpfs is mounted for the data folder
// (root only: skipped with the reason otherwise). Every write the disk refuses must fail with 507
// STORAGE_FULL and leave nothing visible (by id, in lists, in index lookups, in the kept JSON
// text), the data file must stay loadable (also when the store opens on the full disk), and once
// there is room again writes work without a restart and nothing acknowledged is lost.

const root = await mkdtemp(join(tmpdir(), 'svc-diskfull-'));
const mnt = join(root, 'mnt');
let mountError: string | undefined;
try {
  execFileSync('mkdir', ['-p', mnt]);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt], { stdio: 'pipe' });
} catch (err) {
  mountError = String((err as { stderr?: Buffer }).stderr ?? err).trim() || String(err);
  process.stderr.write(`embeddedDiskFull.test.ts skipped: cannot mount a tmpfs (${mountError}); it needs root\n`);
}

afterAll(async () => {
  // Lazily when a failed test left a file open there: the mount goes away once it is closed.
  if (mountError === undefined) execFileSync('umount', ['-l', mnt]);
  await rm(root, { recursive: true, force: true });
});

const FILLER = 'filler';

/** Fills the file system with a filler file, 4 KB at a time, until it is full. */
async function fillDisk(dir: string): Promise<void> {
  const handle = await open(join(dir, FILLER), 'a');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (let i = 0; i < 10_000; i++) await handle.write(chunk);
    throw new Error('the disk did not fill up');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    await handle.close();
  }
}

function isStorageFull(err: unknown): boolean {
  return isSvcError(err) && err.code === 'STORAGE_FULL' && err.status === 507 && err.message === "the data folder's disk is full";
}

/** Inserts until the disk refuses one: answers the ids acknowledged, the id refused and why. */
async function insertUntilFull(things: StoreCollection, prefix: string): Promise<{ acked: string[]; refused: string; error: unknown }> {
  const acked: string[] = [];
  for (let i = 0; i < 1000; i++) {
    const id = `${prefix}${i}`;
    try {
      await things.insert({ id, group: 'late', text: 'y'.repeat(300) });
      acked.push(id);
    } catch (error) {
      return { acked, refused: id, error };
    }
  }
  throw new Error('no insert was refused');
}

describe.skipIf(mountError !== undefined)('embedded store on a full disk', () => {
  let dir: string;
  let store: Store | undefined;
  const warnings: string[] = [];
  const openStore = async () => (store = await createEmbeddedStore({ dir, warn: (m) => warnings.push(m) }));
  const closeStore = async () => {
    const current = store;
    store = undefined;
    await current?.close();
  };

  beforeEach(async () => {
    await closeStore().catch(() => undefined);
    warnings.length = 0;
    for (const name of await readdir(mnt)) await rm(join(mnt, name), { recursive: true, force: true });
    dir = join(mnt, 'data');
  });

  afterAll(async () => {
    await store?.close().catch(() => undefined);
  });

  it('a refused insert, update or remove leaves nothing visible; after space is freed, writes work and nothing acknowledged is lost', async () => {
    let things = (await openStore()).collection('things');
    await things.ensureIndex({ field: 'group' });
    for (let i = 0; i < 50; i++) await things.insert({ id: `a${i}`, group: 'early', n: i });
    expect(things.findOneJsonNow?.('a1')).toBe('{"id":"a1","group":"early","n":1}');
    await fillDisk(mnt);

    // Inserts: one at a time until refused, then a group commit of many at once.
    const { acked, refused, error } = await insertUntilFull(things, 'b');
    const batch = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => things.insert({ id: `c${i}`, group: 'late', text: 'z'.repeat(400) })));
    const batchAcked = batch.flatMap((r, i) => (r.status === 'fulfilled' ? [`c${i}`] : []));
    const refusedIds = [refused, ...batch.flatMap((r, i) => (r.status === 'rejected' ? [`c${i}`] : []))];
    expect(refusedIds.length).toBeGreaterThan(1);
    const ackedIds = [...Array.from({ length: 50 }, (_, i) => `a${i}`), ...acked, ...batchAcked];
    const check = async () => {
      for (const id of refusedIds) {
        expect(await things.findOne({ id })).toBeNull();
        expect(things.findOneJsonNow?.(id)).toBeNull();
        expect(await things.findOneJson?.(id)).toBeNull();
      }
      const listed = (await things.find({})).map((d) => d.id);
      expect(listed).toEqual(ackedIds);
      expect((JSON.parse((await things.findJson?.({})) ?? '[]') as { id: string }[]).map((d) => d.id)).toEqual(ackedIds);
      expect((await things.find({ group: 'late' })).map((d) => d.id)).toEqual([...acked, ...batchAcked]);
      expect(await things.count({})).toBe(ackedIds.length);
    };
    await check();
    expect(isStorageFull(error)).toBe(true);
    for (const r of batch) if (r.status === 'rejected') expect(isStorageFull(r.reason)).toBe(true);

    // An update too big for what is left: the old object stays, in the index and the kept text.
    await expect(things.update({ id: 'a1' }, { $set: { group: 'moved', big: 'x'.repeat(20_000) } })).rejects.toSatisfy(isStorageFull);
    expect(await things.findOne({ id: 'a1' })).toEqual({ id: 'a1', group: 'early', n: 1 });
    expect(things.findOneJsonNow?.('a1')).toBe('{"id":"a1","group":"early","n":1}');
    expect(await things.find({ group: 'moved' })).toEqual([]);
    expect((await things.find({ group: 'early' })).length).toBe(50);

    // A remove of many objects (its line does not fit either): every one of them stays.
    await expect(things.remove({ group: { $in: ['early', 'late'] } })).rejects.toSatisfy(isStorageFull);
    await check();
    expect((await things.find({ group: 'early' })).length).toBe(50);
    expect(things.findOneJsonNow?.('a2')).toBe('{"id":"a2","group":"early","n":2}');

    // A compaction that cannot write keeps the old file, says so, and does not throw.
    await closeStore();
    expect(warnings.filter((w) => /is full/.test(w))).toHaveLength(1);
    expect(warnings.join('\n')).toContain(mnt);
    expect(warnings.join('\n')).not.toMatch(/corrupt/);
    expect((await readdir(dir)).filter((f) => f.endsWith('~'))).toEqual([]);

    // A start on the full disk loads everything acknowledged.
    things = (await openStore()).collection('things');
    await check();
    expect(warnings.join('\n')).not.toMatch(/corrupt/);

    // Room again: writes work without a restart, and they and every acknowledged one survive one.
    await unlink(join(mnt, FILLER));
    await things.insert({ id: 'd1', group: 'after' });
    await things.update({ id: 'a1' }, { $set: { group: 'moved' } });
    await things.remove({ id: 'a3' });
    expect(warnings.some((w) => /succeed again/.test(w))).toBe(true);
    await closeStore();
    things = (await openStore()).collection('things');
    const expected = [...ackedIds.filter((id) => id !== 'a3'), 'd1'];
    expect((await things.find({})).map((d) => d.id)).toEqual(expected);
    expect(await things.findOne({ id: 'a1' })).toEqual({ id: 'a1', group: 'moved', n: 1 });
    for (const id of refusedIds) expect(await things.findOne({ id })).toBeNull();
  });

  it('a torn append (part of a line written, then ENOSPC) is cut off, so a later append does not corrupt the file', async () => {
    const things = (await openStore()).collection('things');
    await things.insert({ id: 'first', text: 'x' });
    await fillDisk(mnt);
    // Bigger than a page: part of it fits in the file's last page, the rest does not.
    const refused: unknown = await things.insert({ id: 'big', text: 'y'.repeat(10_000) }).then(() => 'stored', (err: unknown) => err);
    await unlink(join(mnt, FILLER));
    await things.insert({ id: 'second', text: 'z' });
    const lines = (await readFile(join(dir, 'things.db'), 'utf8')).split('\n').filter((l) => l !== '');
    for (const line of lines) expect(() => JSON.parse(line) as unknown, line.slice(0, 80)).not.toThrow();
    expect(isStorageFull(refused)).toBe(true);
    await closeStore();
    const reopened = (await openStore()).collection('things');
    expect((await reopened.find({})).map((d) => d.id)).toEqual(['first', 'second']);
  });

  it('an index the disk has no room for is not made (memory and file agree), and can be made once there is room', async () => {
    const users = (await openStore()).collection('users');
    await users.insert({ id: 'u0', email: 'a@x' });
    await fillDisk(mnt);
    // Fill the last page of the data file too, with ever smaller objects, so that no line fits.
    for (const size of [2000, 500, 120, 30, 1]) {
      for (let i = 0; i < 100; i++) if (await users.insert({ id: `f${size}-${i}`, t: 'f'.repeat(size) }).then(() => false, () => true)) break;
    }
    await expect(users.ensureIndex({ field: 'email', unique: true })).rejects.toSatisfy(isStorageFull);
    await unlink(join(mnt, FILLER));
    // No unique index was left behind in memory: a second 'a@x' is taken, as the file says.
    await users.insert({ id: 'u1', email: 'a@x' });
    await users.remove({ id: 'u1' });
    await users.ensureIndex({ field: 'email', unique: true });
    await expect(users.insert({ id: 'u2', email: 'a@x' })).rejects.toThrow();
    await closeStore();
    const reopened = (await openStore()).collection('users');
    await expect(reopened.insert({ id: 'u3', email: 'a@x' })).rejects.toThrow();
    expect(await reopened.findOne({ id: 'u0' })).toEqual({ id: 'u0', email: 'a@x' });
  });

  it('a store opened on a full disk with a new collection (sessions) loads, and refuses writes with 507', async () => {
    await openStore();
    await store?.collection('_sessions').insert({ id: 's0', lastSeen: 1 });
    await closeStore();
    await fillDisk(mnt);
    const sessions = (await openStore()).collection('_sessions');
    expect(await sessions.findOne({ id: 's0' })).toEqual({ id: 's0', lastSeen: 1 });
    const fresh = store?.collection('fresh');
    expect(await fresh?.find({})).toEqual([]);
    const refused = await sessions.insert({ id: 's1', uid: 'u', text: 'q'.repeat(10_000) }).catch((err: unknown) => err);
    expect(isStorageFull(refused)).toBe(true);
    expect(await sessions.findOne({ id: 's1' })).toBeNull();
    expect(warnings.join('\n')).not.toMatch(/corrupt/);
  });
});

describe('disk errors as clients and the log see them', () => {
  const errno = (code: string) => Object.assign(new Error(`${code}: from the file system`), { code });

  it('a full disk or quota is 507 STORAGE_FULL; a failing or read-only disk 503 STORAGE_FAILED; never "corrupt"', () => {
    for (const code of ['ENOSPC', 'EDQUOT']) expect(diskError(errno(code))).toMatchObject({ code: 'STORAGE_FULL', status: 507, message: "the data folder's disk is full" });
    expect(diskError(errno('EIO'))).toMatchObject({ code: 'STORAGE_FAILED', status: 503, message: "the data folder's disk is failing (input/output error)" });
    expect(diskError(errno('EROFS'))).toMatchObject({ code: 'STORAGE_FAILED', status: 503, message: "the data folder's disk is read-only" });
    for (const code of ['ENOSPC', 'EDQUOT', 'EIO', 'EROFS']) expect(diskErrorLog(errno(code), '/srv/app/data', '/srv/app/data/todos.db')).not.toMatch(/corrupt/);
  });

  it('DiskState logs the first refusal with the folder, not the next ones, and the recovery', () => {
    const lines: string[] = [];
    const state = new DiskState('/srv/app/data', (m) => lines.push(m));
    const other = new TypeError('not a disk error');
    expect(state.refused(other, 'x')).toBe(other);
    for (let i = 0; i < 5; i++) expect(state.refused(errno('ENOSPC'), '/srv/app/data/todos.db')).toMatchObject({ code: 'STORAGE_FULL' });
    state.wrote();
    state.wrote();
    expect(lines).toEqual([
      expect.stringContaining('the disk of the data folder /srv/app/data is full (ENOSPC writing /srv/app/data/todos.db)'),
      'embedded store: writes to the data folder /srv/app/data succeed again',
    ]);
    // Refused again within the minute (a disk at the edge): not logged again.
    state.refused(errno('ENOSPC'), '/srv/app/data/todos.db');
    state.wrote();
    expect(lines).toHaveLength(2);
  });
});
