/**
 * The fuzz property (issue 9) on SQLite (better-sqlite3), the store `fuzz-servers.test.ts` leaves out: I/O
 * is counted on the fuzzed connection (every statement run and every `exec`). Runs 1,000
 * cases (times LEASEFENCE_TEST_SCALE; about a second).
 */
import { afterAll, describe, it } from 'vitest';
import { assertFuzzProperty } from './fuzz-property.js';
import { sqliteFuzzTarget, type Closers } from './fuzz-targets.js';
import { scaled } from '../support/scale.js';

const RUNS = scaled(1_000);
const closers: Closers = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe('fuzz: every public method on SQLite', () => {
  it(
    `better-sqlite3: INVALID_ARGUMENT with no statement run and leases unchanged, or a normal result (${RUNS} runs)`,
    async () => {
      await assertFuzzProperty(await sqliteFuzzTarget(closers), RUNS);
    },
    60_000 + RUNS * 100,
  );
});
