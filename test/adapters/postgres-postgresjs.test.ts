import { describeStoreSuites } from '../../src/testing/index.js';
import { vitestRunner } from '../conformance/vitest-runner.js';
import { makePostgresHarness } from './postgres-harness.js';
import { describePostgresConcurrencySpecs } from './postgres-concurrency.js';
import { describePostgresAdapterSpecs } from './postgres-specs.js';
import { describePostgresQueueSpecs } from './postgres-queue-specs.js';

const options = { modelRuns: 200, raceRuns: 300, workers: 4 };
describeStoreSuites(vitestRunner, 'postgres (postgres.js)', makePostgresHarness('postgresjs'), options);
describePostgresAdapterSpecs('postgresjs');
describePostgresConcurrencySpecs('postgresjs');
describePostgresQueueSpecs('postgresjs');
