/**
 * The Postgres token floor (issue 14.3): a grant's token is `GREATEST(last + 1, now in µs)`, minted in SQL
 * on every claim path (the claim statement, the claim function's insert and update), and equal to the
 * token the store reports (which the pure core mints from the same now).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresClient } from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { freshTable, openPostgresClient, sharedPostgresUrl, type OpenedClient } from '../adapters/postgres-harness.js';

/** The microsecond floor of a grant acquired at `acquiredAt` (store epoch ms). */
const floorAt = (acquiredAt: number | null): bigint => BigInt(acquiredAt ?? 0) * 1000n;

/** Claims `key`, and checks that the row holds the token the store reported. */
async function claimStored(leases: Leases, key: string) {
  const lease = await leases.claimOrThrow(key);
  expect((await leases.inspect(key)).grant?.token).toBe(lease.token);
  return lease;
}

describe('postgres token floor', () => {
  let pool: pg.Pool;
  let lite: OpenedClient;
  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 2 });
    pool.on('error', () => undefined);
    lite = await openPostgresClient('pglite', '');
  });
  afterAll(async () => {
    await pool?.end();
    await lite?.close();
  });

  const paths: Array<[string, () => { client: PostgresClient; prepare: boolean }]> = [
    ['pg, prepared (statement and function insert)', () => ({ client: pool, prepare: true })],
    ['pg, unprepared (claim function only)', () => ({ client: pool, prepare: false })],
    ['PGlite (claim function only)', () => ({ client: lite.client, prepare: true })],
  ];

  it.each(paths)('every claim path mints GREATEST(last + 1, now in µs) in SQL, the token the store reports (%s)', async (_, open) => {
    const { client, prepare } = open();
    const table = freshTable('lf_floor');
    const store = createPostgresStore({ client, table, prepare });
    await store.migrate();
    const leases = createLeases(store, { holder: 'w', ttlMs: 60_000 });
    const first = await claimStored(leases, 'k');
    expect(first.token).toBe(floorAt(first.acquiredAt));
    await leases.release(first);
    const second = await claimStored(leases, 'k');
    expect(second.token).toBe(floorAt(second.acquiredAt) > first.token + 1n ? floorAt(second.acquiredAt) : first.token + 1n);
    expect(second.token > first.token).toBe(true);
    await leases.release(second);
    // NOTE: a token above the clock (as a burst of grants within one millisecond leaves it): last + 1 wins.
    const high = 2n ** 62n;
    await client.query(`UPDATE "${table}" SET token = $1::bigint WHERE key = 'k'`, [high.toString()]);
    const third = await claimStored(leases, 'k');
    expect(third.token).toBe(high + 1n);
    await leases.revoke('k', { reason: 'burn one' });
    expect((await claimStored(leases, 'k')).token).toBe(high + 3n);
  });
});
