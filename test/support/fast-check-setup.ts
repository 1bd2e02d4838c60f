import fc from 'fast-check';

// NOTE: FC_NUM_RUNS scales every property that does not set its own numRuns; FC_SEED replays a failure.
const numRuns = process.env['FC_NUM_RUNS'];
const seed = process.env['FC_SEED'];
fc.configureGlobal({
  ...fc.readConfigureGlobal(),
  ...(numRuns === undefined ? {} : { numRuns: Number(numRuns) }),
  ...(seed === undefined ? {} : { seed: Number(seed) }),
});
