/**
 * A holder process for the freeze test (postgres-freeze.test.ts): claims `key` with `ttlMs`, opens a fenced
 * write, inserts one row in it, prints `frozen-point <token>` and then waits forever inside the callback,
 * so that the parent can SIGSTOP it mid-transaction. Arguments: url table key ttlMs.
 */
import pg from 'pg';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';

const [url, table, key, ttl] = process.argv.slice(2) as [string, string, string, string];
const pool = new pg.Pool({ connectionString: url, max: 2 });
pool.on('error', () => undefined);
const store = createPostgresStore({ client: pool, table });
const leases = createLeases(store, { holder: `frozen-${process.pid}`, ttlMs: Number(ttl) });
const lease = await leases.claimOrThrow(key);
await leases.fencedWrite(lease, async (tx) => {
  await tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'frozen holder')`, [key]);
  process.stdout.write(`frozen-point ${lease.token} ${lease.expiresAt}\n`);
  await new Promise(() => undefined);
});
