import fc from 'fast-check';
import { scaled, testScale } from './scale.js';

/** fast-check's own default number of runs per property. */
const FAST_CHECK_RUNS = 100;

// NOTE: LEASEFENCE_TEST_SCALE (scale.ts) scales every property that does not set its own numRuns; FC_SEED replays
// a failure. Both are set from constants, not from the current global config: the unit tier's files share one
// fast-check per worker (isolate: false), and this runs before each of them.
const seed = process.env['FC_SEED'];
fc.configureGlobal({
  ...fc.readConfigureGlobal(),
  ...(testScale() === 1 ? {} : { numRuns: scaled(FAST_CHECK_RUNS) }),
  ...(seed === undefined ? {} : { seed: Number(seed) }),
});
