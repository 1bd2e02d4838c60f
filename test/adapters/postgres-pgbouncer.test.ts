/**
 * The shared store suites (conformance, model, races) on the Postgres store reached through a real
 * PgBouncer 1.18 in transaction pooling mode, with pg and postgres.js, both with `prepare: false`: every
 * operation is one statement or one transaction, so each runs on whatever server connection the pooler
 * hands it. The pooler specs (prepared statements, the token gate, `list`, waiting) are in
 * postgres-pgbouncer-specs.test.ts.
 */
import { afterAll } from 'vitest';
import { describeStoreSuites } from '../../src/testing/index.js';
import { vitestRunner } from '../conformance/vitest-runner.js';
import { makeBouncedHarness, stopBouncer } from './postgres-pgbouncer-harness.js';

afterAll(() => stopBouncer());

const options = { modelRuns: 100, raceRuns: 150, workers: 4 };
describeStoreSuites(
  vitestRunner,
  'postgres through PgBouncer, transaction mode (pg Pool, prepare: false)',
  makeBouncedHarness('pg-pool'),
  options,
);
describeStoreSuites(
  vitestRunner,
  'postgres through PgBouncer, transaction mode (postgres.js, prepare: false)',
  makeBouncedHarness('postgresjs'),
  options,
);
