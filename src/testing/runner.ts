/**
 * The four functions of a test runner the suites register their tests with, so the same suites run under
 * vitest, jest and `node:test`:
 *
 * ```ts
 * import { afterAll, beforeAll, describe, it } from 'vitest'; // or from '@jest/globals'
 * const runner = { describe, it, beforeAll, afterAll };
 * // node:test
 * import { after, before, describe, it } from 'node:test';
 * const runner = { describe, it, beforeAll: before, afterAll: after };
 * ```
 */

/**
 * A test's body. It declares no parameter (jest would take one for a `done` callback) and reads the
 * runner's test context, when there is one, from its arguments: a spec that does not apply to a store
 * calls that context's `skip()` (vitest, `node:test`).
 */
export type TestBody = (...runnerArguments: unknown[]) => Promise<void>;

/** The parts of vitest's, jest's or `node:test`'s API the suites use. */
export interface TestRunner {
  /** Groups tests under a name (`describe` in all three). */
  describe(name: string, body: () => void): unknown;
  /**
   * Registers one test. The suites pass a timeout as the third argument for the property suites (vitest
   * and jest read it; `node:test` ignores it and has no default timeout).
   */
  it(name: string, body: TestBody, timeoutMs?: number): unknown;
  /** Runs once before the enclosing group's tests (`beforeAll`; `node:test`: `before`). */
  beforeAll(hook: () => Promise<void>): unknown;
  /** Runs once after the enclosing group's tests, also when one failed (`afterAll`; `node:test`: `after`). */
  afterAll(hook: () => Promise<void>): unknown;
}

/**
 * Skips the running test, if the runner gave it a context that can (vitest's `context.skip()` throws to
 * stop the test; `node:test`'s `t.skip()` marks it and the caller returns). Returns whether it could.
 */
export function skipTest(runnerArguments: readonly unknown[], reason: string): boolean {
  const context = runnerArguments[0] as { skip?: (note?: string) => void } | undefined;
  if (typeof context?.skip !== 'function') return false;
  context.skip(reason);
  return true;
}
