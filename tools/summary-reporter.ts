import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends the run with one plain line, `Tests: N passed, N failed, N skipped`, that CI reads as the
 * run's verdict whatever reporter printed before it.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    let failedFiles = 0;
    for (const mod of testModules) {
      let failedHere = 0;
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failedHere++;
        else skipped++;
      }
      failed += failedHere;
      // A file that failed outside its tests (an import, a beforeAll) leaves its tests skipped:
      // it counts as one failure, so the verdict never reads "0 failed" for a failed run.
      if (mod.state() === 'failed' && failedHere === 0) failedFiles++;
    }
    const files = failedFiles > 0 ? ` (${failedFiles} of them a test file that failed outside its tests)` : '';
    process.stdout.write(`\nTests: ${passed} passed, ${failed + failedFiles} failed${files}, ${skipped} skipped\n`);
  }
}
