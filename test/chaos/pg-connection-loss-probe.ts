/**
 * Child process of pg-connection-loss.test.ts: a user's process with a pg Pool whose connection is
 * terminated by the server in the middle of a fenced write. It must get a typed error and live on.
 * Prints `outcome <error code>` and `survived`; a crash exits non-zero.
 */
import pg from 'pg';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';

const url = process.env['PROBE_PG_URL'] ?? '';
const name = `probe-${process.pid}`;
const pool = new pg.Pool({ connectionString: url, application_name: name, max: 2 });
pool.on('error', () => undefined);
const admin = new pg.Pool({ connectionString: url, max: 1 });
const store = createPostgresStore({ client: pool });
await store.migrate();
const leases = createLeases(store, { holder: name, ttlMs: 5000 });
const lease = await leases.claimOrThrow(`probe:${name}`);
try {
  await leases.fencedWrite(lease, async () => {
    // NOTE: the server ends this session while the transaction is open and the client is between queries.
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name]);
    await new Promise((resolve) => setTimeout(resolve, 300));
  });
  console.log('outcome ok');
} catch (error) {
  console.log(`outcome ${(error as { code?: string }).code ?? String(error)}`);
}
await new Promise((resolve) => setTimeout(resolve, 300));
console.log('survived');
await Promise.all([pool.end(), admin.end()]);
