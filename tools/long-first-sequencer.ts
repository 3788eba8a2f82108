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
  // pnpm test (vitest.main.config.ts): seconds in a whole .ci/run at 2 workers (2 cores), 2026-11-29 21:59 UTC.
  'packages/core/test/migrations/apply.test.ts', // 24
  'apps/server/test/accounts.test.ts', // 24 (its two stores side by side since: 0.7-0.85x alone here, not measured idle)
  'apps/server/test/script-outbound.test.ts', // 24
  'apps/server/test/script-modules.test.ts', // 22
  'packages/core/test/store/engine/convert.test.ts', // 22
  'packages/core/test/users.http.test.ts', // 20
  'packages/script-runtime/test/limits.test.ts', // 20
  'apps/server/test/script-budgets.test.ts', // 18
  'packages/type-event/test/schedule.test.ts', // 27 then; ~18 (its cases that wait for seconds run at once: 0.68x here)
  'apps/server/test/root-keys.test.ts', // 17
  'packages/type-bucket/test/streaming.test.ts', // 17
  'packages/type-webhook/test/webhook.test.ts', // 26 then; ~16 (its three stores side by side: 35 -> 19-22 s here at load 11-22)
  'packages/realtime/test/live-attack.test.ts', // 16
  'packages/script-runtime/test/script-api.test.ts', // 15
  'packages/script-runtime/test/budgets.test.ts', // 11
  'apps/server/test/dashboard-api.test.ts', // 11
  'apps/server/test/live-rules.test.ts', // 10
  'apps/server/test/accounts-oidc.test.ts', // 10
  'apps/server/test/live-queries.test.ts', // 10
  'packages/script-runtime/test/modules.test.ts', // 9
  'apps/server/test/scripts.test.ts', // 9
  'packages/type-email/test/email.http.test.ts', // 9
  'apps/server/test/migrations.test.ts', // 9
  'apps/server/test/behind-proxy.test.ts', // 9
  'packages/script-runtime/test/node-builtins.test.ts', // 8
  'packages/core/test/store/embedded.test.ts', // 8
  // vitest.reliability.config.ts (vitest.slow.ts and reliability/, one queue): seconds in a
  // run at 2 workers; the files whose work shrank since are placed by their estimate.
  'reliability/published-install.test.ts', // 241 (2026-11-30 01:42 run); then 211 -> 203 in a pair at load 5-8 (Dockerfile case 28 -> 13 s)
  'packages/type-importer/test/cli.test.ts', // 199 then; ~90 (100,000 seeded and imported into the embedded store)
  'reliability/migrations-crash.test.ts', // 124 then; ~90 (600 objects on MongoDB, not 1,000)
  'reliability/dashboard-rename-crash.test.ts', // 92 then; ~82 (14 svc starts fewer: -11% here)
  'apps/server/test/fast-paths-differential.test.ts', // 130 then; ~55 (MongoDB: 1,031 of 4,005 rows, its part 5x shorter here)
  'reliability/migrations-slow-db.test.ts', // 53
  'reliability/deploy-files.test.ts', // 50
  'apps/server/test/deployd-migration.test.ts', // 52 then; ~46 (migrate-deployd loads no server since ci-time-11: 45.4 -> 37.5 CPU s here)
  'apps/server/test/pack-install.test.ts', // 48 then; ~44 (publint reads the packed tarballs since ci-time-11: 43 -> 39.5 s here, its case 13.3 -> 3-4 s)
  'apps/server/test/dashboard.test.ts', // 44
  'reliability/relations-crash.test.ts', // 44
  'apps/server/test/cli.test.ts', // 52 then; ~39 (help, create, keygen, showkey load no server since ci-time-11: 33.8 -> 21.7 CPU s here)
  'apps/server/test/browser-offline.test.ts', // 30
  'packages/script-runtime/test/containment.test.ts', // 30
  'apps/server/test/deployd-suite-browser.test.ts', // 28
  'reliability/busy-machine.test.ts', // 27 (runs last, alone, whatever its rank)
  'reliability/backup.test.ts', // 26
  'apps/server/test/browser-client.test.ts', // 26
  'apps/server/test/browser-presets.test.ts', // 22
  'packages/type-bucket/test/filesCrash.test.ts', // 21
  'reliability/scheduled-jobs.test.ts', // 20
  'packages/type-importer/test/importer.test.ts', // 109 then; ~20 (10,000 documents, not 100,000)
  'reliability/fuzz.test.ts', // 18
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
