/**
 * The fuzz property (issue 9) on real servers: Postgres (statements counted on the pg client) and Redis
 * (commands counted by the server, through MONITOR of the fuzzed connection). Runs 800
 * cases per store (times LEASEFENCE_TEST_SCALE), `fencedWrite` with a `checkpoint` included (about 30 s on a loaded 2-core machine; each case is a few round trips of set-up and snapshots).
 */
import { afterAll, describe, it } from 'vitest';
import { assertFuzzProperty } from './fuzz-property.js';
import { postgresFuzzTarget, redisFuzzTarget, type Closers } from './fuzz-targets.js';
import { scaled } from '../support/scale.js';

const RUNS = scaled(800);
const closers: Closers = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe('fuzz: every public method on real servers', () => {
  it(
    `Postgres (pg Pool): INVALID_ARGUMENT with no statement sent and leases unchanged, or a normal result (${RUNS} runs)`,
    async () => {
      await assertFuzzProperty(await postgresFuzzTarget(closers), RUNS);
    },
    60_000 + RUNS * 100,
  );

  it(
    `Redis (ioredis): INVALID_ARGUMENT with no command sent and leases unchanged, or a normal result (${RUNS} runs)`,
    async () => {
      await assertFuzzProperty(await redisFuzzTarget(closers), RUNS);
    },
    60_000 + RUNS * 100,
  );
});
