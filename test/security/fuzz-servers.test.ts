/**
 * The fuzz property (issue 9) on real servers: Postgres (statements counted on the pg client) and Redis
 * (commands counted by the server, through MONITOR of the fuzzed connection). Runs `FUZZ_SERVER_RUNS`
 * cases per store (default 800, about 30 s on a loaded 2-core machine; each case is a few round trips of set-up and snapshots).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, createPostgresTokenGate } from '../../src/adapters/postgres/index.js';
import { createRedisStore, createRedisTokenGate } from '../../src/adapters/redis/index.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { countingClient } from '../adapters/postgres-counting.js';
import { freshTable, openPostgresClient, sharedPostgresUrl } from '../adapters/postgres-harness.js';
import { freshPrefix, openClient, sharedRedisUrl } from '../adapters/redis-harness.js';
import { watchCommands } from '../adapters/redis-monitor.js';
import { calls, runCall, type FuzzTarget } from './fuzz-property.js';

const RUNS = Number(process.env['FUZZ_SERVER_RUNS'] ?? 800);
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

async function fuzz(target: FuzzTarget): Promise<void> {
  const endings = { invalid: 0, result: 0, typed: 0 };
  await fc.assert(
    fc.asyncProperty(calls(target.checkpointWithWrite), async (recipe) => {
      endings[await runCall(target, recipe)] += 1;
    }),
    { numRuns: RUNS },
  );
  expect(endings.invalid).toBeGreaterThan(RUNS / 10);
  expect(endings.result).toBeGreaterThan(RUNS / 10);
}

const foreignLease = () => createLeases(createMemoryStore(), { holder: 'elsewhere' }).claimOrThrow('job:foreign');

describe('fuzz: every public method on real servers', () => {
  it(`Postgres (pg Pool): INVALID_ARGUMENT with no statement sent and leases unchanged, or a normal result (${RUNS} runs)`, async () => {
    const url = await sharedPostgresUrl();
    const opened = await openPostgresClient('pg-pool', url);
    closers.push(() => opened.close());
    const counting = countingClient(opened.client);
    const table = freshTable('lf_fuzz');
    const setupStore = createPostgresStore({ client: opened.client, table });
    await setupStore.migrate();
    const gate = createPostgresTokenGate({ client: counting.client, table: `${table}_gate`, leaseTable: table });
    await gate.migrate();
    let keys = 0;
    await fuzz({
      leases: createLeases(createPostgresStore({ client: counting.client, table }) as Store, { holder: 'fuzz' }),
      setup: createLeases(setupStore as Store, { holder: 'setup' }),
      foreign: await foreignLease(),
      gate: gate as never,
      ioDuring: async (run) => (await counting.statementsDuring(run)).length,
      freshKey: () => `fuzz:${++keys}`,
      checkpointWithWrite: false,
    });
  }, 60_000 + RUNS * 100);

  it(`Redis (ioredis): INVALID_ARGUMENT with no command sent and leases unchanged, or a normal result (${RUNS} runs)`, async () => {
    const url = await sharedRedisUrl();
    const fuzzed = await openClient('ioredis', url);
    const other = await openClient('ioredis', url);
    closers.push(fuzzed.close, other.close);
    const watch = await watchCommands(url, fuzzed.client);
    closers.push(() => watch.close());
    const prefix = freshPrefix('lf-fuzz');
    let keys = 0;
    await fuzz({
      leases: createLeases(createRedisStore({ client: fuzzed.client, prefix }) as Store, { holder: 'fuzz' }),
      setup: createLeases(createRedisStore({ client: other.client, prefix }) as Store, { holder: 'setup' }),
      foreign: await foreignLease(),
      gate: createRedisTokenGate({ client: fuzzed.client, prefix: `${prefix}gate:` }) as never,
      ioDuring: async (run) => (await watch.commandsDuring(run)).length,
      freshKey: () => `fuzz:{${++keys}}`,
      checkpointWithWrite: false,
    });
  }, 60_000 + RUNS * 100);
});
