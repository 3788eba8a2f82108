import { BaseSequencer } from 'vitest/node';
import type { TestSpecification } from 'vitest/node';

/**
 * The test files of `pnpm test` that took longest in CI (2 cores), longest first. On a fresh clone
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
