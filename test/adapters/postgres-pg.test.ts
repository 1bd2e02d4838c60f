import { describeStoreSuites } from '../../src/testing/index.js';
import { vitestRunner } from '../conformance/vitest-runner.js';
import { makePostgresHarness } from './postgres-harness.js';
import { describePostgresConcurrencySpecs } from './postgres-concurrency.js';
import { describePostgresAdapterSpecs } from './postgres-specs.js';
import { describePostgresQueueSpecs } from './postgres-queue-specs.js';

const options = { modelRuns: 200, raceRuns: 300, workers: 4 };
describeStoreSuites(vitestRunner, 'postgres (pg Pool)', makePostgresHarness('pg-pool'), options);
describePostgresAdapterSpecs('pg-pool');
describePostgresConcurrencySpecs('pg-pool');
describeStoreSuites(vitestRunner, 'postgres (pg Client)', makePostgresHarness('pg-client'), options);
describePostgresAdapterSpecs('pg-client');
describePostgresQueueSpecs('pg-pool');
