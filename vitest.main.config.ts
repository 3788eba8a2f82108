import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { SLOW_TESTS } from './vitest.slow.js';
import LongFirstSequencer from './tools/long-first-sequencer.js';

// `pnpm test`: every test file of vitest.config.ts but the slow ones of vitest.slow.ts, which
// `pnpm test:reliability` runs. (`pnpm vitest run <file>` uses vitest.config.ts: any file runs.)
export default defineConfig({
  resolve: base.resolve,
  test: {
    ...base.test,
    exclude: [...configDefaults.exclude, ...SLOW_TESTS],
    // Two files at a time even on 2 cores, where vitest's default is one: most of a file's time
    // is spent waiting on the servers, script processes and databases it starts, not on a CPU
    // (CI's 2 cores ran the files one by one in 1,040 s). VITEST_MAX_WORKERS still decides.
    maxWorkers: Number(process.env.VITEST_MAX_WORKERS) || Math.max(2, availableParallelism() - 1),
    // The files known to take longest start first, so that none runs alone at the end (fresh clones).
    sequence: { sequencer: LongFirstSequencer },
  },
});
