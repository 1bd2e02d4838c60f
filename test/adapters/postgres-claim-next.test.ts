/**
 * Claim-next on PostgreSQL (issue 24, capability 1): the conformance specs (src/testing/specs-claim-next.ts) on
 * every client: pg Pool and Client, postgres.js, PGlite, and pg and postgres.js behind PgBouncer in transaction
 * mode (`prepare: false`).
 */
import { afterAll } from 'vitest';
import { describeClaimNextConformance } from '../../src/testing/specs-claim-next.js';
import { vitestRunner } from '../conformance/vitest-runner.js';
import { makePostgresHarness } from './postgres-harness.js';
import { makeBouncedHarness, stopBouncer } from './postgres-pgbouncer-harness.js';

afterAll(stopBouncer);

describeClaimNextConformance(vitestRunner, 'postgres (pg Pool)', makePostgresHarness('pg-pool'));
describeClaimNextConformance(vitestRunner, 'postgres (pg Client)', makePostgresHarness('pg-client'));
describeClaimNextConformance(vitestRunner, 'postgres (postgres.js)', makePostgresHarness('postgresjs'));
describeClaimNextConformance(vitestRunner, 'postgres (PGlite)', makePostgresHarness('pglite'));
describeClaimNextConformance(vitestRunner, 'postgres (pg Pool, PgBouncer, prepare: false)', makeBouncedHarness('pg-pool'));
describeClaimNextConformance(vitestRunner, 'postgres (postgres.js, PgBouncer, prepare: false)', makeBouncedHarness('postgresjs'));
