/**
 * The Postgres adapter as a chaos backend. Workers use a pg Pool as the adapter's docs recommend (server
 * timeouts, an application_name per worker so the nemesis can pg_terminate_backend it); the ledger is a
 * row inserted inside the fenced transaction, the gated resource a row inserted inside the gate's write.
 */
import pg from 'pg';
import { createPostgresStore, createPostgresTokenGate, type PostgresWriteContext } from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';
import type { Lease } from '../../src/lease.js';
import type { Leases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { resourceOf, type StoreAdmin, type WorkerBackend } from './backend.js';
import type { FinalKeyState } from './history.js';
import { decodeEntry } from './history.js';

/** The lease table every chaos run uses (the adapter's default). */
export const LEASE_TABLE = 'leasefence_leases';

/** The chaos ledgers: one row per applied write, in commit order of `id` (see checker: ledger order). */
const LEDGER_DDL = [
  `CREATE TABLE IF NOT EXISTS chaos_ledger (id bigserial PRIMARY KEY, key text NOT NULL, entry text NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS chaos_gate_ledger (id bigserial PRIMARY KEY, resource text NOT NULL, entry text NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS chaos_ledger_key ON chaos_ledger (key, id)`,
  `CREATE INDEX IF NOT EXISTS chaos_gate_ledger_resource ON chaos_gate_ledger (resource, id)`,
];

/** A worker's pool: bounded waits everywhere, so a fault surfaces as an error instead of a hang. */
export function workerPool(url: string, applicationName: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    application_name: applicationName,
    max: 3,
    connectionTimeoutMillis: 2000,
    query_timeout: 4000,
    statement_timeout: 3000,
    lock_timeout: 2000,
    idle_in_transaction_session_timeout: 3000,
  });
  // NOTE: pg_terminate_backend and server restarts kill idle pooled connections; the pool drops them.
  pool.on('error', () => undefined);
  return pool;
}

type PostgresLeaseStore = ReturnType<typeof createPostgresStore>;

/** Builds the worker's backend; `wrap` swaps in a planted bug (mutants.ts). */
export function createPostgresBackend(url: string, proc: string, wrap: (store: PostgresLeaseStore, pool: pg.Pool) => Store<PostgresWriteContext> = (s) => s): WorkerBackend {
  const pool = workerPool(url, `chaos-${proc}`);
  const store = wrap(createPostgresStore({ client: pool }), pool);
  const gate = createPostgresTokenGate({ client: pool });
  return {
    store: store as Store,
    gate: gate as WorkerBackend['gate'],
    appendUnderFence: (leases: Leases, lease: Lease, entry: string) =>
      leases.fencedWrite(lease, async (tx) => {
        await (tx as PostgresWriteContext).query('INSERT INTO chaos_ledger (key, entry) VALUES ($1, $2)', [lease.key, entry]);
      }),
    appendThroughGate: (leases: Leases, lease: Lease, resource: string, entry: string) =>
      leases.gateWrite(gate, resource, lease, async (tx) => {
        await tx.query('INSERT INTO chaos_gate_ledger (resource, entry) VALUES ($1, $2)', [resource, entry]);
      }),
    close: () => pool.end(),
  };
}

/** The harness's admin pool: prepares the tables, forces expiries, terminates worker sessions, reads the end state. */
export async function createPostgresAdmin(url: string): Promise<StoreAdmin> {
  const pool = new pg.Pool({ connectionString: url, application_name: 'chaos-admin', max: 2, connectionTimeoutMillis: 5000 });
  pool.on('error', () => undefined);
  const store = createPostgresStore({ client: pool });
  await store.migrate();
  const gate = createPostgresTokenGate({ client: pool });
  await gate.migrate();
  for (const statement of LEDGER_DDL) await pool.query(statement);
  const operator = createLeases(store, { holder: 'chaos-operator' });
  return {
    forceExpire: async (key) => {
      await pool.query(`UPDATE ${LEASE_TABLE} SET expires_at = date_trunc('milliseconds', clock_timestamp()) WHERE key = $1 AND holder IS NOT NULL`, [key]);
    },
    killConnections: async () => {
      const { rows } = await pool.query(`SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name LIKE 'chaos-w%'`);
      return rows.length;
    },
    revoke: async (key) => (await operator.revoke(key, { reason: 'chaos: operator revoke', by: 'chaos-operator' })).ok,
    readFinal: (keys) =>
      Promise.all(
        keys.map(async (key): Promise<FinalKeyState> => {
          const inspection = await store.inspect(key);
          const ledger = await pool.query<{ entry: string }>('SELECT entry FROM chaos_ledger WHERE key = $1 ORDER BY id', [key]);
          const gated = await pool.query<{ entry: string }>('SELECT entry FROM chaos_gate_ledger WHERE resource = $1 ORDER BY id', [resourceOf(key)]);
          const checkpoint = inspection.checkpoint;
          return {
            key,
            token: inspection.token.toString(),
            ledger: ledger.rows.map((row) => decodeEntry(row.entry)),
            gateLedger: gated.rows.map((row) => decodeEntry(row.entry)),
            checkpoint: checkpoint === null ? null : { id: (JSON.parse(checkpoint.json) as { id: string }).id, token: checkpoint.token.toString() },
          };
        }),
      ),
    close: () => pool.end(),
  };
}
