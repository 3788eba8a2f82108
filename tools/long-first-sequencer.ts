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
  // pnpm test (vitest.main.config.ts): seconds in CI at 2 workers, mean of the runs of 12:07 and 12:47 UTC on 2026-11-29.
  'apps/server/test/accounts.test.ts', // 25
  'apps/server/test/root-keys.test.ts', // 22
  'packages/type-event/test/schedule.test.ts', // 21
  'apps/server/test/script-outbound.test.ts', // 20
  'packages/type-webhook/test/webhook.test.ts', // 19
  'packages/type-bucket/test/hostileUploads.test.ts', // 18
  'packages/type-bucket/test/streaming.test.ts', // 17
  'apps/server/test/script-modules.test.ts', // 17
  'packages/core/test/migrations/apply.test.ts', // 16
  'packages/realtime/test/live-attack.test.ts', // 15
  'apps/server/test/script-budgets.test.ts', // 14
  'packages/core/test/users.http.test.ts', // 13
  'packages/core/test/store/engine/convert.test.ts', // 13
  'packages/script-runtime/test/limits.test.ts', // 11
  'packages/script-runtime/test/script-api.test.ts', // 10
  'packages/script-runtime/test/budgets.test.ts', // 10
  'apps/server/test/script-status.test.ts', // 10
  'apps/server/test/resourceTypes.test.ts', // 10
  'packages/script-runtime/test/node-builtins.test.ts', // 9
  'packages/script-runtime/test/modules.test.ts', // 9
  'apps/server/test/relations.test.ts', // 9
  'apps/server/test/create-from-checkout.test.ts', // 9
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
