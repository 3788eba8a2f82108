// The test files that `pnpm test:reliability` runs instead of `pnpm test`, so that the README's
// test command aims at under 10 minutes on an idle 2-core machine: each drives chromium (a page, the
// dashboard), injects faults into processes it starts (kill -9, links, FIFOs, signals) or packs
// and installs the packages, and takes tens of seconds to minutes. CI runs both commands, so
// nothing is dropped. A new test file that is mostly chromium belongs here
// (accounts-verification-required.test.ts, one chromium test among server tests, stays in pnpm test).
export const SLOW_TESTS = [
  'apps/server/test/browser-accounts.test.ts',
  'apps/server/test/browser-client.test.ts',
  'apps/server/test/browser-dpd.test.ts',
  // Deployd's own mocha suite in chromium (over a minute).
  'apps/server/test/deployd-suite-browser.test.ts',
  'apps/server/test/browser-example.test.ts',
  'apps/server/test/browser-live.test.ts',
  'apps/server/test/browser-oidc.test.ts',
  // The offline replica of /svc.js with the network cut: conflicts, rules, restarts, reloads, quota, clock (issue 42).
  'apps/server/test/browser-offline.test.ts',
  // Each of the 15 sign-in presets against its stand-in in chromium (issue 43).
  'apps/server/test/browser-presets.test.ts',
  'apps/server/test/dashboard.test.ts',
  'apps/server/test/dashboard-accounts-browser.test.ts',
  'apps/server/test/dashboard-answers.test.ts',
  'apps/server/test/dashboard-files-browser.test.ts',
  'apps/server/test/dashboard-file-settings-browser.test.ts',
  'apps/server/test/dashboard-logs-browser.test.ts',
  'apps/server/test/dashboard-presets-browser.test.ts',
  'apps/server/test/dashboard-relations-browser.test.ts',
  'apps/server/test/dashboard-reset-mfa-browser.test.ts',
  'apps/server/test/dashboard-rules-browser.test.ts',
  'apps/server/test/dashboard-deliveries-browser.test.ts',
  // The migrated app in chromium, and links, FIFOs, sockets and SIGINT during a migration.
  'apps/server/test/deployd-migration.test.ts',
  // pnpm pack of every package, npm install of the tarballs, publint and attw.
  'apps/server/test/pack-install.test.ts',
  // svc processes started and stopped per test: restarts, kill -9, a second process on one
  // folder, every flag's error (create from a checkout: create-from-checkout.test.ts stays).
  'apps/server/test/cli.test.ts',
  // The engine with a memory map: a writer killed with kill -9, a torn WAL (issue 41).
  'packages/core/test/store/engine/mmap-crash.test.ts',
  // One svc start (and a node process) to list the packages a start loads (issue 41).
  'apps/server/test/start-modules.test.ts',
  // svc killed with kill -9 during file uploads, replacements and deletes, restarted, swept.
  'apps/server/test/files-crash.test.ts',
  // The same with the files in a Bucket (s3rver): killed at each step of an upload, a replacement and a delete.
  'packages/type-bucket/test/filesCrash.test.ts',
  // Attacks on the script sandbox (endless loops, memory bombs, V8's fatal OOM) killing and
  // replacing script processes, in the runtime and against a production server.
  'packages/script-runtime/test/containment.test.ts',
  'apps/server/test/script-containment.test.ts',
  // Documents seeded into MongoDB (FerretDB) and imported: 100,000 through svc import (cli) and
  // 10,000 twice (importer): 376 s and 166 s of CI's pnpm test (over half of it) at a load of 6-14
  // when both read 100,000 and cli wrote them into FerretDB.
  'packages/type-importer/test/cli.test.ts',
  'packages/type-importer/test/importer.test.ts',
  // A differential property test: generated scripts through a runtime with and without plans.
  'packages/script-runtime/test/static-plan-differential.test.ts',
  // The fast paths' differential suite: thousands of requests to two servers (shortcuts on and
  // off) for each of three stores, CPU-bound: 476-625 s of pnpm test at a load of 15-30, the
  // longest file by far (issue 39; tools/read-mutants.mjs runs it on its own).
  'apps/server/test/fast-paths-differential.test.ts',
  // Script processes that hang (one spins a CPU for seconds) until the pool replaces them.
  'packages/script-runtime/test/hung-processes.test.ts',
];
