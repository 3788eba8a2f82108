import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { SLOW_TESTS } from './vitest.slow.js';
import LongFirstSequencer from './tools/long-first-sequencer.js';

// `pnpm test:reliability`, run by .ci/run after `pnpm test`: in one run, the slow browser and
// fault suites of apps/ and packages/ that `pnpm test` leaves out (vitest.slow.ts, project "slow",
// 120 s per test) and the faults and abuse against real servers of reliability/ (project
// "reliability", 180 s per test), from one queue, the longest first. Many files spend much of their
// time waiting on the processes, chromium and databases they start, and each starts and kills only
// processes and services of its own (free ports, folders, databases), so several files may run
// side by side (the two halves took 755 s + 782 s in CI one file at a time).
/**
 * Files at a time, given to each project (the root's maxWorkers alone left every project at
 * vitest's default: one at a time on 2 cores). One unless VITEST_MAX_WORKERS says more; .ci/run
 * asks three. Two ran green in whole CI runs (907 s, then 799 s on an idle machine) but kept the 2
 * cores only ~70% busy: the whole run costs ~1,070-1,100 CPU seconds (user + system of vitest and
 * every process the files start, two runs of 2026-11-30), under 1,600 for two cores over 799 s.
 * Three side by side ran the same 56 files in 1,436 s against 1,777 s for two, at a load of 13-17
 * from other work (2026-11-30 03:24 and 02:54 UTC), failing 1 test against 3 (dashboard.test's 10 s
 * waits, busy-machine); a second run of three at load 15-23 took 1,663 s and failed 9 (cli 30 s
 * timeout, browser-client, deployd-suite-browser, dashboard, graceful-shutdown ECONNRESET, MongoDB
 * ECONNRESET in fast-paths-differential). On an idle machine (2026-11-30 04:40-04:51 UTC, a whole
 * .ci/run) three took 672 s and every one of those files passed. If CI flakes, ask two.
 * Scripts run at nice 19 (script-pool.ts): on a saturated machine they wait longest.
 */
const WORKERS = Number(process.env.VITEST_MAX_WORKERS) || 1;
/**
 * Files run after all the others, on their own. (An `exclude` replaces vitest's default one, so the
 * reliability project names node_modules again: reliability/ is a workspace package whose
 * node_modules link to the packages, whose tests would otherwise run a second time.)
 */
const ALONE = ['reliability/busy-machine.test.ts'];

export default defineConfig({
  resolve: base.resolve,
  test: {
    ...base.test,
    maxWorkers: WORKERS,
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      // 120 s a test: two of these files side by side on a loaded 2-core machine made four command-line
      // tests of cli.test.ts (4-5 s each alone on an idle machine) pass 30 s at load 27.
      { extends: false, resolve: base.resolve, test: { ...base.test, name: 'slow', include: SLOW_TESTS, testTimeout: 120_000, maxWorkers: WORKERS } },
      { extends: false, resolve: base.resolve, test: { ...base.test, name: 'reliability', include: ['reliability/**/*.test.ts'], exclude: [...configDefaults.exclude, ...ALONE], testTimeout: 180_000, maxWorkers: WORKERS } },
      // Last, with nothing beside it: it saturates the CPUs on purpose (four busy processes a core),
      // which would slow whatever file ran next to it past its own limits.
      { extends: false, resolve: base.resolve, test: { ...base.test, name: 'alone', include: ALONE, testTimeout: 180_000, sequence: { groupOrder: 1 } } },
    ],
  },
});
