/**
 * How often a planted-bug test repeats itself in one run, from the one scale knob (scale.ts):
 * `LEASEFENCE_TEST_SCALE=50 npx vitest run test/chaos/in-process.test.ts` runs each of them 50 times (vitest's
 * `repeats`: every repetition must pass). Used to measure that a planted bug is caught every time, not by luck.
 */
import { measuring, testScale } from './scale.js';

/** Extra repetitions of each planted-bug test (vitest `repeats`): `round(scale) - 1` above scale 1, else 0. */
export function mutantRepeats(): number {
  return measuring() ? Math.round(testScale()) - 1 : 0;
}
