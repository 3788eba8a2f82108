import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { SLOW_TESTS } from './vitest.slow.js';

// `pnpm test`: every test file of vitest.config.ts but the slow ones of vitest.slow.ts, which
// `pnpm test:reliability` runs. (`pnpm vitest run <file>` uses vitest.config.ts: any file runs.)
export default defineConfig({
  resolve: base.resolve,
  test: {
    ...base.test,
    exclude: [...configDefaults.exclude, ...SLOW_TESTS],
  },
});
