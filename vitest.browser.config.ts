import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { SLOW_TESTS } from './vitest.slow.js';

// The first half of `pnpm test:reliability`: the slow browser and fault suites of apps/ and
// packages/ that `pnpm test` leaves out (vitest.slow.ts), with the main suite's options and its
// parallel files. The fault tests of reliability/ follow, one file at a time.
export default defineConfig({
  resolve: base.resolve,
  test: {
    ...base.test,
    include: SLOW_TESTS,
    exclude: [],
  },
});
