import { BaseSequencer } from 'vitest/node';
import type { TestSpecification } from 'vitest/node';

/**
 * The test files that took longest in CI (2 cores), longest first: those of `pnpm test`, then
 * those of `pnpm test:reliability` (vitest.slow.ts and reliability/); each run only ranks the
 * files it has, so one list serves both configs. On a fresh clone
 * vitest has no durations and starts the biggest files first, so a short file that runs long (a
 * differential table from a helper) could start last and run alone while the other worker idles.
 * Only the order changes; a file missing from the list runs after these, as vitest orders it.
 */
export const LONG_TESTS = [
  'apps/server/test/script-outbound.test.ts',
  'apps/server/test/script-modules.test.ts',
  'apps/server/test/script-budgets.test.ts',
  'packages/script-runtime/test/modules.test.ts',
  'packages/type-event/test/schedule.test.ts',
  'apps/server/test/root-keys.test.ts',
  'packages/core/test/users.http.test.ts',
  'apps/server/test/relations.test.ts',
  'packages/script-runtime/test/node-builtins.test.ts',
  'packages/script-runtime/test/limits.test.ts',
  'apps/server/test/live-rules.test.ts',
  'apps/server/test/scripts.test.ts',
  'apps/server/test/accounts.test.ts',
  // vitest.reliability.config.ts (vitest.slow.ts and reliability/, one queue): seconds in CI at 1 worker.
  'reliability/published-install.test.ts', // 185
  'packages/type-importer/test/cli.test.ts', // 160
  'reliability/dashboard-rename-crash.test.ts', // 112
  'apps/server/test/fast-paths-differential.test.ts', // 112
  'reliability/migrations-crash.test.ts', // 111
  'packages/type-importer/test/importer.test.ts', // 73
  'apps/server/test/deployd-migration.test.ts', // 58
  'apps/server/test/cli.test.ts', // 58
  'reliability/deploy-files.test.ts', // 51
  'reliability/migrations-slow-db.test.ts', // 47
  'apps/server/test/deployd-suite-browser.test.ts', // 44
  'apps/server/test/pack-install.test.ts', // 43
  'reliability/relations-crash.test.ts', // 32
  'reliability/busy-machine.test.ts', // 28
  'apps/server/test/browser-offline.test.ts', // 26
  'reliability/backup.test.ts', // 25
  'reliability/fuzz.test.ts', // 22
];

/** Runs the files of LONG_TESTS first, in its order, when vitest has no durations of its own. */
export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const cache = this.ctx.cache;
    if (sorted.every((spec) => cache.getTestSpecificationResult(spec) !== undefined)) return sorted;
    const rank = (spec: TestSpecification): number => {
      const i = LONG_TESTS.findIndex((name) => spec.moduleId.endsWith(`/${name}`));
      return i === -1 ? LONG_TESTS.length : i;
    };
    return sorted.map((spec, i) => ({ spec, i, r: rank(spec) })).sort((a, b) => a.r - b.r || a.i - b.i).map(({ spec }) => spec);
  }
}
