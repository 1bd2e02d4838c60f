/**
 * A vitest reporter that ends the run with one plain line, `Tests: <n> passed, <n> failed, <n> skipped`,
 * for CI, which reads that line (vitest's own summary uses another shape). It runs after the default
 * reporter (see vitest.config.ts), so the line is the last thing `npm test` prints.
 */
import type { Reporter, SerializedError, TestModule, TestRunEndReason } from 'vitest/node';

/** Counts tests by outcome; a file that failed outside any test (import error, failing hook) counts as failed. */
export function countOutcomes(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const module of modules) {
    let failedInModule = 0;
    for (const test of module.children.allTests()) {
      const state = test.result().state;
      if (state === 'passed') passed += 1;
      else if (state === 'failed') failedInModule += 1;
      else skipped += 1;
    }
    // NOTE: a module whose collection or hooks failed may report no failed test; it still must not read as green.
    failed += failedInModule === 0 && module.state() === 'failed' ? 1 : failedInModule;
  }
  return { passed, failed: failed + unhandledErrors.length, skipped };
}

/** Prints the closing `Tests: N passed, N failed, N skipped` line. */
export default class ClosingLineReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>, reason: TestRunEndReason): void {
    const { passed, failed, skipped } = countOutcomes(modules, unhandledErrors);
    // NOTE: an interrupted or failed run with nothing counted as failed (e.g. globalSetup threw) still says so.
    const failures = reason !== 'passed' && failed === 0 ? 1 : failed;
    process.stdout.write(`\nTests: ${passed} passed, ${failures} failed, ${skipped} skipped\n`);
  }
}
