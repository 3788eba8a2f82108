import { execFileSync } from 'node:child_process';
import { mkdtemp, open, readFile, readdir, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { isSvcError } from '../../src/errors.js';
import { createEngineStore } from '../../src/store/embedded/index.js';
import { tornWal } from './engine/crashHelpers.js';
import { createEmbeddedStore } from '../../src/store/embeddedStore.js';
import { DiskState, diskError, diskErrorLog } from '../../src/store/internal/diskError.js';
import type { Store, StoreCollection } from '../../src/store/Store.js';

// Both embedded stores on a full disk (issue 21 item 5: the files store; issue 41: the engine),
// one table of what differs between them. A small tmpfs is mounted for each data folder (root
// only: skipped with the reason otherwise). Every write the disk refuses must fail with 507
// STORAGE_FULL and leave nothing visible (by id, in lists, in index lookups, in the kept JSON
// text), the store must open on the full disk with everything acknowledged, and once there is
// room again writes work without a restart and nothing acknowledged is lost. Then what only one
// of them has: the files store's torn append, the engine's torn WAL.

const root = await mkdtemp(join(tmpdir(), 'svc-diskfull-'));

/** A tmpfs of `size` at `<root>/<name>`; the reason when it cannot be mounted (not root). */
function mount(name: string, size: string): { mnt: string; mountError: string | undefined } {
  const mnt = join(root, name);
  try {
    execFileSync('mkdir', ['-p', mnt]);
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mnt], { stdio: 'pipe' });
    return { mnt, mountError: undefined };
  } catch (err) {
    const mountError = String((err as { stderr?: Buffer }).stderr ?? err).trim() || String(err);
    process.stderr.write(`diskFull.test.ts: the ${name} full-disk cases are skipped: cannot mount a tmpfs (${mountError}); it needs root\n`);
    return { mnt, mountError };
  }
}

const FILLER = 'filler';

/** What differs between the two stores on a full disk. */
interface Engine {
  name: string;
  open(dir: string, warn: (message: string) => void): Promise<Store>;
  /** The tmpfs: the engine's WAL needs more room to start in. */
  size: string;
  /** Inserts one at a time until refused (at most `tries`, `text` long), then `batch` at once. */
  fill: { tries: number; text: number; batch: number; batchText: number };
  /** An update too big for what is left. */
  bigUpdate: number;
  /** findOneJsonNow answers null for an object that is not stored (the files store keeps every text). */
  textsNow: boolean;
  /**
   * A remove of many objects on the full disk, then the store closed there: answers the ids still
   * acknowledged. The files store refuses it whole and keeps its old file at the compaction on
   * close; the engine writes all of it or none.
   */
  removeManyAndClose(s: Scenario): Promise<string[]>;
  /** Whether the store logs that writes succeed again. */
  saysRecovered: boolean;
  /** The index case: users stored before the disk fills (`pad` long), then tries per size at filling the rest. */
  index: { users: number; pad: number; tries: number };
}

/** What the scenario shares with an engine's removeManyAndClose. */
interface Scenario {
  things: StoreCollection;
  ackedIds: string[];
  check(): Promise<void>;
  close(): Promise<void>;
  warnings: string[];
  mnt: string;
  dir: string;
}

const ENGINES: Engine[] = [
  {
    name: 'files store (nedb)',
    open: (dir, warn) => createEmbeddedStore({ dir, warn }),
    size: '1m',
    fill: { tries: 1000, text: 300, batch: 20, batchText: 400 },
    bigUpdate: 20_000,
    textsNow: true,
    async removeManyAndClose({ things, ackedIds, check, close, warnings, mnt, dir }) {
      // Its line does not fit either: every one of them stays.
      await expect(things.remove({ group: { $in: ['early', 'late'] } })).rejects.toSatisfy(isStorageFull);
      await check();
      expect((await things.find({ group: 'early' })).length).toBe(50);
      expect(things.findOneJsonNow?.('a2')).toBe('{"id":"a2","group":"early","n":2}');
      // A compaction that cannot write keeps the old file, says so, and does not throw.
      await close();
      expect(warnings.filter((w) => /is full/.test(w))).toHaveLength(1);
      expect(warnings.join('\n')).toContain(mnt);
      expect((await readdir(dir)).filter((f) => f.endsWith('~'))).toEqual([]);
      return ackedIds;
    },
    saysRecovered: true,
    index: { users: 1, pad: 0, tries: 100 },
  },
  {
    name: 'engine',
    open: (dir, warn) => createEngineStore({ dir, warn }),
    size: '2m',
    fill: { tries: 5000, text: 1000, batch: 40, batchText: 4000 },
    bigUpdate: 200_000,
    textsNow: false,
    async removeManyAndClose({ things, ackedIds, close, warnings }) {
      // Either all of it or none (its pages may not fit in the WAL).
      const removed = await things.remove({ group: 'early' }).then(
        (n) => n,
        (err: unknown) => (isStorageFull(err) ? -1 : Promise.reject(err)),
      );
      const early = await things.count({ group: 'early' });
      expect(removed === -1 ? early === 50 : early === 0 && removed === 50).toBe(true);
      await close();
      expect(warnings.filter((w) => /is full/.test(w)).length).toBeLessThanOrEqual(1);
      return removed === -1 ? ackedIds : ackedIds.filter((id) => !id.startsWith('a'));
    },
    saysRecovered: false,
    // Within the 2 MB: the WAL holds every page written since the last checkpoint (up to 4 MB).
    index: { users: 60, pad: 2000, tries: 200 },
  },
];
// The engine reading its database file through a memory map (EngineMemory.mmapMb): SQLite grows
// the file before it maps it, so a checkpoint on a full disk must fail as a write, not as SIGBUS.
ENGINES.push({ ...(ENGINES[1] as Engine), name: 'engine-mmap (memory-mapped reads)', open: (dir, warn) => createEngineStore({ dir, warn, mmapMb: 64 }) });

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
async function insertUntilFull(things: StoreCollection, prefix: string, fill: Engine['fill']): Promise<{ acked: string[]; refused: string; error: unknown }> {
  const acked: string[] = [];
  for (let i = 0; i < fill.tries; i++) {
    const id = `${prefix}${i}`;
    try {
      await things.insert({ id, group: 'late', text: 'y'.repeat(fill.text) });
      acked.push(id);
    } catch (error) {
      return { acked, refused: id, error };
    }
  }
  throw new Error('no insert was refused');
}

/** A store of `engine` in `<mnt>/data`, emptied before each test, with the warnings it logged. */
function storeOn(engine: Engine, mnt: string) {
  const on = {
    dir: join(mnt, 'data'),
    store: undefined as Store | undefined,
    warnings: [] as string[],
    open: async () => (on.store = await engine.open(on.dir, (m) => on.warnings.push(m))),
    close: async () => {
      const current = on.store;
      on.store = undefined;
      await current?.close();
    },
  };
  beforeEach(async () => {
    await on.close().catch(() => undefined);
    on.warnings.length = 0;
    for (const name of await readdir(mnt)) await rm(join(mnt, name), { recursive: true, force: true });
  });
  afterAll(async () => {
    await on.store?.close().catch(() => undefined);
  });
  return on;
}

const mounts = new Map(ENGINES.map((engine) => [engine, mount(engine.name.split(' ')[0] as string, engine.size)]));

afterAll(async () => {
  // Lazily when a failed test left a file open there: the mount goes away once it is closed.
  for (const { mnt, mountError } of mounts.values()) if (mountError === undefined) execFileSync('umount', ['-l', mnt]);
  await rm(root, { recursive: true, force: true });
});

describe.each(ENGINES)('$name on a full disk', (engine) => {
  const { mnt, mountError } = mounts.get(engine) as { mnt: string; mountError: string | undefined };
  const on = storeOn(engine, mnt);

  it.skipIf(mountError !== undefined)('a refused insert, update or remove leaves nothing visible; the store opens on the full disk; after space is freed, writes work and nothing acknowledged is lost', async () => {
    let things = (await on.open()).collection('things');
    await things.ensureIndex({ field: 'group' });
    for (let i = 0; i < 50; i++) await things.insert({ id: `a${i}`, group: 'early', n: i });
    expect(things.findOneJsonNow?.('a1')).toBe('{"id":"a1","group":"early","n":1}');
    await fillDisk(mnt);

    // Inserts: one at a time until refused, then a group commit of many at once.
    const { acked, refused, error } = await insertUntilFull(things, 'b', engine.fill);
    const batch = await Promise.allSettled(Array.from({ length: engine.fill.batch }, (_, i) => things.insert({ id: `c${i}`, group: 'late', text: 'z'.repeat(engine.fill.batchText) })));
    const batchAcked = batch.flatMap((r, i) => (r.status === 'fulfilled' ? [`c${i}`] : []));
    const refusedIds = [refused, ...batch.flatMap((r, i) => (r.status === 'rejected' ? [`c${i}`] : []))];
    expect(refusedIds.length).toBeGreaterThan(1);
    const ackedIds = [...Array.from({ length: 50 }, (_, i) => `a${i}`), ...acked, ...batchAcked];
    const check = async () => {
      for (const id of refusedIds) {
        expect(await things.findOne({ id })).toBeNull();
        if (engine.textsNow) expect(things.findOneJsonNow?.(id)).toBeNull();
        expect(await things.findOneJson?.(id)).toBeNull();
      }
      expect((await things.find({})).map((d) => d.id)).toEqual(ackedIds);
      expect((JSON.parse((await things.findJson?.({})) ?? '[]') as { id: string }[]).map((d) => d.id)).toEqual(ackedIds);
      expect((await things.find({ group: 'late' })).map((d) => d.id)).toEqual([...acked, ...batchAcked]);
      expect(await things.count({})).toBe(ackedIds.length);
    };
    await check();
    expect(isStorageFull(error)).toBe(true);
    for (const r of batch) if (r.status === 'rejected') expect(isStorageFull(r.reason)).toBe(true);

    // An update too big for what is left: the old object stays, in the index and the kept text.
    await expect(things.update({ id: 'a1' }, { $set: { group: 'moved', big: 'x'.repeat(engine.bigUpdate) } })).rejects.toSatisfy(isStorageFull);
    expect(await things.findOne({ id: 'a1' })).toEqual({ id: 'a1', group: 'early', n: 1 });
    expect(things.findOneJsonNow?.('a1')).toBe('{"id":"a1","group":"early","n":1}');
    expect(await things.find({ group: 'moved' })).toEqual([]);
    expect((await things.find({ group: 'early' })).length).toBe(50);

    // A remove of many, then the store closed on the full disk.
    const ackedNow = await engine.removeManyAndClose({ things, ackedIds, check, close: on.close, warnings: on.warnings, mnt, dir: on.dir });
    expect(on.warnings.join('\n')).not.toMatch(/corrupt/);

    // A start on the full disk loads everything acknowledged, nothing refused.
    things = (await on.open()).collection('things');
    expect((await things.find({})).map((d) => d.id)).toEqual(ackedNow);
    for (const id of refusedIds) expect(await things.findOne({ id })).toBeNull();
    expect(on.warnings.join('\n')).not.toMatch(/corrupt/);

    // Room again: writes work without a restart, and they and every acknowledged one survive one.
    await unlink(join(mnt, FILLER));
    await things.insert({ id: 'd1', group: 'after' });
    const last = ackedNow[ackedNow.length - 1] as string;
    const gone = ackedNow[0] as string;
    await things.update({ id: last }, { $set: { group: 'moved' } });
    await things.remove({ id: gone });
    if (engine.saysRecovered) expect(on.warnings.some((w) => /succeed again/.test(w))).toBe(true);
    await on.close();
    things = (await on.open()).collection('things');
    expect((await things.find({})).map((d) => d.id)).toEqual([...ackedNow.filter((id) => id !== gone), 'd1']);
    expect(await things.findOne({ id: last })).toMatchObject({ group: 'moved' });
    for (const id of refusedIds) expect(await things.findOne({ id })).toBeNull();
  });

  it.skipIf(mountError !== undefined)('an index the disk has no room for is not made (memory and data agree), and can be made once there is room', async () => {
    const users = (await on.open()).collection('users');
    for (let i = 0; i < engine.index.users; i++) await users.insert({ id: `u${i}`, email: `${i}@x`, pad: 'p'.repeat(engine.index.pad) });
    await fillDisk(mnt);
    // Fill what is left (the last page of the data file too) with ever smaller objects, so that nothing fits.
    for (const size of [2000, 500, 120, 30, 1]) {
      for (let i = 0; i < engine.index.tries; i++) if (await users.insert({ id: `f${size}-${i}`, t: 'f'.repeat(size) }).then(() => false, () => true)) break;
    }
    await expect(users.ensureIndex({ field: 'email', unique: true })).rejects.toSatisfy(isStorageFull);
    await unlink(join(mnt, FILLER));
    // No unique index was left behind in memory: a second '0@x' is taken, as the data says.
    await users.insert({ id: 'v1', email: '0@x' });
    await users.remove({ id: 'v1' });
    await users.ensureIndex({ field: 'email', unique: true });
    await expect(users.insert({ id: 'v2', email: '0@x' })).rejects.toMatchObject({ field: 'email' });
    await on.close();
    const reopened = (await on.open()).collection('users');
    await expect(reopened.insert({ id: 'v3', email: '0@x' })).rejects.toMatchObject({ field: 'email' });
    expect(await reopened.findOne({ id: 'u0' })).toMatchObject({ id: 'u0', email: '0@x' });
  });
});

describe('files store (nedb) on a full disk: its data file', () => {
  const files = ENGINES[0] as Engine;
  const { mnt, mountError } = mounts.get(files) as { mnt: string; mountError: string | undefined };
  const on = storeOn(files, mnt);

  it.skipIf(mountError !== undefined)('a torn append (part of a line written, then ENOSPC) is cut off, so a later append does not corrupt the file', async () => {
    const things = (await on.open()).collection('things');
    await things.insert({ id: 'first', text: 'x' });
    await fillDisk(mnt);
    // Bigger than a page: part of it fits in the file's last page, the rest does not.
    const refused: unknown = await things.insert({ id: 'big', text: 'y'.repeat(10_000) }).then(() => 'stored', (err: unknown) => err);
    await unlink(join(mnt, FILLER));
    await things.insert({ id: 'second', text: 'z' });
    const lines = (await readFile(join(on.dir, 'things.db'), 'utf8')).split('\n').filter((l) => l !== '');
    for (const line of lines) expect(() => JSON.parse(line) as unknown, line.slice(0, 80)).not.toThrow();
    expect(isStorageFull(refused)).toBe(true);
    await on.close();
    const reopened = (await on.open()).collection('things');
    expect((await reopened.find({})).map((d) => d.id)).toEqual(['first', 'second']);
  });

  it.skipIf(mountError !== undefined)('a store opened on a full disk with a new collection (sessions) loads, and refuses writes with 507', async () => {
    await on.open();
    await on.store?.collection('_sessions').insert({ id: 's0', lastSeen: 1 });
    await on.close();
    await fillDisk(mnt);
    const sessions = (await on.open()).collection('_sessions');
    expect(await sessions.findOne({ id: 's0' })).toEqual({ id: 's0', lastSeen: 1 });
    const fresh = on.store?.collection('fresh');
    expect(await fresh?.find({})).toEqual([]);
    const refused = await sessions.insert({ id: 's1', uid: 'u', text: 'q'.repeat(10_000) }).catch((err: unknown) => err);
    expect(isStorageFull(refused)).toBe(true);
    expect(await sessions.findOne({ id: 's1' })).toBeNull();
    expect(on.warnings.join('\n')).not.toMatch(/corrupt/);
  });
});

describe('embedded engine after a torn write', () => {
  // A crash (kill -9, a power cut) while the WAL is being appended leaves its last frames torn:
  // SQLite checks every frame's checksum, so the database opens with the transactions before the
  // tear, whole, and never half of one. Here the files of a running store are copied (what a
  // crash leaves) and its WAL cut at many places.
  it('a WAL cut anywhere opens with whole transactions only, in order', async () => {
    await tornWal(0);
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
