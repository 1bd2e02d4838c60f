/**
 * One knob for how much work the tests do: `LEASEFENCE_TEST_SCALE`, a positive number multiplying every run
 * count and run length the test files would otherwise fix (property runs, fuzz cases, chaos scenario lengths,
 * trials, promotions, planted-bug repetitions). `FC_SEED` and the chaos/SQLite seeds replay a failure and are
 * not scaled.
 * - 1 (the default): the counts the suites were written for; `npm test` and CI.
 * - below 1: fewer (never fewer than one run); `npm run test:unit` uses 0.2, the inner loop.
 * - above 1: a measurement. Counts grow with it, each planted-bug test runs `round(scale)` times (vitest
 *   `repeats`), and the tests `npm test` leaves out run: the Redis failover measurement (`round(scale)` rounds)
 *   and the planted bug run through a Postgres promotion.
 *
 * ```sh
 * LEASEFENCE_TEST_SCALE=10 npx vitest run test/adapters/postgres-freeze.test.ts   # 30 trials instead of 3
 * LEASEFENCE_TEST_SCALE=50 npx vitest run test/chaos/in-process.test.ts           # each planted bug 50 times
 * ```
 */

/** The variable read by `testScale()`. */
export const SCALE_VARIABLE = 'LEASEFENCE_TEST_SCALE';

/** `LEASEFENCE_TEST_SCALE` as a number; 1 when unset or empty. Throws on anything but a positive number. */
export function testScale(): number {
  const given = process.env[SCALE_VARIABLE];
  if (given === undefined || given.trim() === '') return 1;
  const scale = Number(given);
  if (!Number.isFinite(scale) || scale <= 0)
    throw new Error(`${SCALE_VARIABLE} must be a positive number (1 = the full runs), got ${given}`);
  return scale;
}

/** `full` (the count or length at scale 1) times the scale, rounded, and at least 1. */
export function scaled(full: number): number {
  return Math.max(1, Math.round(full * testScale()));
}

/** True above scale 1: a measurement run, which also runs the tests `npm test` leaves out. */
export function measuring(): boolean {
  return testScale() > 1;
}
