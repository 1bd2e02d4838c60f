/**
 * Time bounds of tests whose duration scales with the machine's speed, not with what they prove.
 */

/**
 * Bound on a whole property suite against a real server (hundreds of runs, each dozens of round trips).
 * It only ends a hung suite: on a loaded 2-core machine the model and race suites took over 60 s (the
 * vitest default here) while every run passed. A deadlocked run is caught sooner by the per-run timeout.
 * @default 600_000
 */
export const PROPERTY_SUITE_TIMEOUT_MS = 600_000;
