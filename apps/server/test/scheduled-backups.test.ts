import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngineStore } from '@svc/core';
import type { Logger } from '@svc/core';
import { scheduleBackups } from '../src/scheduledBackups.js';
import { readExport } from '../src/storeTransfer.js';

// Issue 23 (6): scheduled backups (app.json backups.intervalMinutes, keep) of a running store.

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('scheduled backups', () => {
  it('take a backup every interval while the store is written, keep the newest, never touch other files', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-scheduled-'));
    const store = await createEngineStore({ dir: join(dir, 'data') });
    const backups = join(dir, 'backups');
    const lines: string[] = [];
    const logger: Logger = { info: (m) => lines.push(m), warn: (m) => lines.push(`warn ${m}`), error: (m) => lines.push(`error ${m}`) };
    let written = 0;
    const stop = scheduleBackups({ dir: backups, source: { kind: 'embedded', dir: join(dir, 'data') }, intervalMs: 1100, keep: 2, logger });
    try {
      await store.collection('todos').insert({ id: 'first', title: 'x' });
      written++;
      // A backup made by hand stays.
      await mkdir(backups, { recursive: true });
      await writeFile(join(backups, 'backup-by-hand.jsonl'), 'mine');
      // Backups are named to the second: four of them take a little over four seconds.
      for (let i = 0; i < 200 && lines.filter((l) => l.startsWith('backup: wrote')).length < 4; i++) {
        await store.collection('todos').insert({ id: `t${i}`, title: 'x' });
        written++;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await stop();
      await store.close();
    }
    expect(lines.filter((l) => l.startsWith('warn') || l.startsWith('error'))).toEqual([]);
    expect(lines.filter((l) => l.startsWith('backup: wrote')).length).toBeGreaterThanOrEqual(4);
    const files = (await readdir(backups)).sort();
    const scheduled = files.filter((f) => f.startsWith('scheduled-'));
    expect(scheduled).toHaveLength(2);
    expect(files).toContain('backup-by-hand.jsonl');
    // The newest is a complete export holding what was written before it.
    const newest = await readExport(join(backups, scheduled[1] as string), () => undefined);
    expect(newest.collections.todos).toBeGreaterThan(1);
    expect(newest.collections.todos).toBeLessThanOrEqual(written);
  });
});
