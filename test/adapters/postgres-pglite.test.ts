import { describeStoreSuites } from '../conformance/index.js';
import { makePostgresHarness } from './postgres-harness.js';
import { describePostgresAdapterSpecs } from './postgres-specs.js';

const options = { modelRuns: 100, raceRuns: 100, workers: 4 };
describeStoreSuites('postgres (PGlite)', makePostgresHarness('pglite'), options);
describePostgresAdapterSpecs('pglite');
