import { makePostgresHarness } from '../adapters/postgres-harness.js';
import { describeListSpecs } from './list-specs.js';

describeListSpecs('postgres (pg Pool)', makePostgresHarness('pg-pool'), 40);
describeListSpecs('postgres (postgres.js)', makePostgresHarness('postgresjs'), 20);
describeListSpecs('postgres (PGlite)', makePostgresHarness('pglite'), 20);
