/**
 * How often a planted-bug test repeats itself in one run: `LEASEFENCE_MUTANT_REPEATS=49 npx vitest run
 * test/chaos/in-process.test.ts` runs each of them 50 times (vitest's `repeats`: every repetition must pass).
 * Used to measure that a planted bug is caught every time, not by luck.
 */

/** Extra repetitions of each planted-bug test (vitest `repeats`). @default 0 */
export function mutantRepeats(): number {
  const value = Number(process.env['LEASEFENCE_MUTANT_REPEATS'] ?? 0);
  if (!Number.isInteger(value) || value < 0) throw new Error(`LEASEFENCE_MUTANT_REPEATS must be a whole number, got ${process.env['LEASEFENCE_MUTANT_REPEATS']}`);
  return value;
}
