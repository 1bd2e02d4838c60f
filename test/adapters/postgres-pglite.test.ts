import { describeStoreSuites } from '../../src/testing/index.js';
import { vitestRunner } from '../conformance/vitest-runner.js';
import { makePostgresHarness } from './postgres-harness.js';
import { describePostgresAdapterSpecs } from './postgres-specs.js';
import { describePostgresQueueSpecs } from './postgres-queue-specs.js';

const options = { modelRuns: 100, raceRuns: 100, workers: 4 };
describeStoreSuites(vitestRunner, 'postgres (PGlite)', makePostgresHarness('pglite'), options);
describePostgresAdapterSpecs('pglite');
describePostgresQueueSpecs('pglite');
