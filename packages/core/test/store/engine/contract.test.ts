import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngineStore } from '../../../src/store/embedded/index.js';
import { runStoreContract } from '../contract.js';
import { OPTIONAL_READS } from '../contractTextReads.js';

runStoreContract(
  'embedded engine (SQLite)',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-engine-'));
    return {
      open: () => createEngineStore({ dir }),
      destroy: () => rm(dir, { recursive: true, force: true }),
    };
  },
  { optionalReads: OPTIONAL_READS, skips: { 'updateMany applies $set, $unset and $rename to each matching object and answers how many matched': 'optional; the engine has none (in the process, one update at a time costs no round trip; they commit together)' } },
);
