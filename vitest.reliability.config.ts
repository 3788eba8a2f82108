import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// `pnpm test:reliability`: faults and abuse against real servers (reliability/). Run by .ci/run
// after `pnpm test`; bounded to a few minutes in all. Same aliases and runner options as the
// main suite, other files.
export default defineConfig({
  resolve: base.resolve,
  test: {
    ...base.test,
    include: ['reliability/**/*.test.ts'],
    testTimeout: 180_000,
    // The fault tests start and kill processes and services of their own: one file at a time.
    fileParallelism: false,
  },
});
