import fc from 'fast-check';
import { scaled, testScale } from './scale.js';

// NOTE: LEASEFENCE_TEST_SCALE (scale.ts) scales every property that does not set its own numRuns (fast-check's
// default is 100); FC_SEED replays a failure.
const seed = process.env['FC_SEED'];
const current = fc.readConfigureGlobal();
fc.configureGlobal({
  ...current,
  ...(testScale() === 1 ? {} : { numRuns: scaled(current.numRuns ?? 100) }),
  ...(seed === undefined ? {} : { seed: Number(seed) }),
});
