import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '@svc/core';

// Issue 23 (6): an fsync-per-batch setting for the embedded store (app.json embeddedStore.fsync).

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** Counts FileHandle#datasync calls while `run` runs (the real call still happens). */
async function countingSyncs(dir: string, run: () => Promise<void>): Promise<number> {
  const probe = await open(join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as { datasync(): Promise<void> };
  await probe.close();
  const original = proto.datasync;
  let calls = 0;
  proto.datasync = function (this: unknown) {
    calls++;
    return original.call(this);
  };
  try {
    await run();
  } finally {
    proto.datasync = original;
  }
  return calls;
}

describe('embedded store fsync', () => {
  it('syncs once per group commit of inserts and once per update or removal; none without the setting', async () => {
    for (const fsync of [true, false]) {
      const dir = await mkdtemp(join(tmpdir(), 'svc-fsync-'));
      dirs.push(dir);
      const store = await createEmbeddedStore({ dir, fsync });
      const things = store.collection('things');
      await things.insert({ id: 'first' });
      const syncs = await countingSyncs(dir, async () => {
        // 100 inserts at once: one append for those that waited, not 100 syncs.
        await Promise.all(Array.from({ length: 100 }, (_, i) => things.insert({ id: `t${i}`, i })));
        await things.update({ id: 't1' }, { $set: { done: true } });
        await things.remove({ id: 't2' });
      });
      if (fsync) {
        expect(syncs).toBeGreaterThanOrEqual(3);
        expect(syncs).toBeLessThanOrEqual(10);
      } else {
        expect(syncs).toBe(0);
      }
      await store.close();
      const reopened = await createEmbeddedStore({ dir, fsync });
      expect(await reopened.collection('things').count({})).toBe(100);
      expect(await reopened.collection('things').findOne({ id: 't1' })).toMatchObject({ done: true });
      await reopened.close();
    }
  });
});
