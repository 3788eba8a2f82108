import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { killWhileWriting, tornWal } from './crashHelpers.js';

// The engine reading its database file through a memory map (app.json `embeddedStore.mmapMb`,
// EngineMemory): writes still go through write(), so a process killed while writing and a WAL torn
// anywhere must end as without the map. A slow test (vitest.slow.ts): a child process killed.
describe('embedded engine with a memory map (mmapMb 64)', () => {
  it('keeps every acknowledged write when the process is killed with SIGKILL', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-engine-mmap-'));
    try {
      await killWhileWriting(dir, 64);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a WAL cut anywhere opens with whole transactions only, in order', async () => {
    await tornWal(64);
  });
});
