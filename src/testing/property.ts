/**
 * Runs a fast-check property inside one test of the runner and, when it fails, throws an error that
 * starts with what the property states and goes on with fast-check's report: the seed and path to
 * replay it, the shrunk counterexample, and the error of the shrunk run (which names the broken invariant).
 */
import fc from 'fast-check';

/** Asserts `property` over `parameters.numRuns` runs; a failure reads `<statement>\n<fast-check's report>`. */
export async function assertProperty<Ts>(
  statement: string,
  property: fc.IAsyncPropertyWithHooks<Ts>,
  parameters: fc.Parameters<Ts>,
): Promise<void> {
  try {
    // NOTE: includeErrorInReport puts the shrunk run's error in the message; fast-check 4 otherwise
    // keeps it only as the `cause`, which some runners do not print.
    await fc.assert(property, { ...parameters, includeErrorInReport: true });
  } catch (error) {
    const report = error instanceof Error ? error.message : String(error);
    throw new Error(`property failed: ${statement}\n${report}`);
  }
}
