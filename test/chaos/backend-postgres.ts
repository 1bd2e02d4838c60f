/**
 * The Postgres adapter as a chaos backend. Workers use a pg Pool as the adapter's docs recommend (server
 * timeouts, an application_name per worker so the nemesis can pg_terminate_backend it); the ledger is a
 * row inserted inside the fenced transaction, the gated resource a row inserted inside the gate's write.
 */
import pg from 'pg';
import postgres from 'postgres';
import {
  createPostgresStore,
  createPostgresTokenGate,
  fromPostgresJs,
  type PostgresClient,
  type PostgresWriteContext,
} from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';
import type { Lease } from '../../src/lease.js';
import type { Leases } from '../../src/leases-types.js';
import type { Store } from '../../src/store.js';
import { finalKeyState, resourceOf, type ClientKind, type StoreAdmin, type WorkerBackend } from './backend.js';

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

/**
 * A worker's postgres.js instance, set up like `workerPool` (the same server timeouts and application_name;
 * postgres.js has no client-side query timeout, so a frozen server holds its queries until it resumes).
 */
export function workerPostgresJs(url: string, applicationName: string): postgres.Sql {
  return postgres(url, {
    max: 3,
    connect_timeout: 2,
    onnotice: () => undefined,
    connection: {
      application_name: applicationName,
      statement_timeout: 3000,
      lock_timeout: 2000,
      idle_in_transaction_session_timeout: 3000,
    },
  });
}

type PostgresLeaseStore = ReturnType<typeof createPostgresStore>;

/**
 * A worker's client through a transaction-mode pooler: the server timeouts are the role's (PgBouncer refuses
 * them as startup parameters; `openServer` sets them), the client-side bounds as in `workerPool`, and
 * postgres.js with `prepare: false`.
 */
function pooledWorkerClient(
  client: ClientKind,
  url: string,
  applicationName: string,
): { client: PostgresClient; pool: pg.Pool | null; end(): Promise<void> } {
  if (client === 'postgres-js') {
    const sql = postgres(url, {
      max: 3,
      connect_timeout: 2,
      prepare: false,
      onnotice: () => undefined,
      connection: { application_name: applicationName },
    });
    return { client: fromPostgresJs(sql), pool: null, end: () => sql.end({ timeout: 1 }) };
  }
  const pool = new pg.Pool({
    connectionString: url,
    application_name: applicationName,
    max: 3,
    connectionTimeoutMillis: 2000,
    query_timeout: 4000,
  });
  pool.on('error', () => undefined);
  return { client: pool, pool, end: () => pool.end() };
}

/** The server timeouts of `workerPool`, for the role (a pooler passes no startup parameters on). */
export const ROLE_TIMEOUTS = ["statement_timeout = '3s'", "lock_timeout = '2s'", "idle_in_transaction_session_timeout = '3s'"];

/** A worker's connection: a pg Pool, or postgres.js through `fromPostgresJs`. */
function workerClient(
  client: ClientKind,
  url: string,
  applicationName: string,
): { client: PostgresClient; pool: pg.Pool | null; end(): Promise<void> } {
  if (client === 'postgres-js') {
    const sql = workerPostgresJs(url, applicationName);
    return { client: fromPostgresJs(sql), pool: null, end: () => sql.end({ timeout: 1 }) };
  }
  const pool = workerPool(url, applicationName);
  return { client: pool, pool, end: () => pool.end() };
}

/**
 * Builds the worker's backend on `client`; `wrap` swaps in a planted bug (mutants.ts; pg only). `behindPooler`:
 * `url` is a transaction-mode pooler's, and the store and gate run with `prepare: false`.
 */
export function createPostgresBackend(
  url: string,
  proc: string,
  client: ClientKind = 'pg',
  wrap?: (store: PostgresLeaseStore, pool: pg.Pool) => Store<PostgresWriteContext>,
  behindPooler = false,
): WorkerBackend {
  const connection = (behindPooler ? pooledWorkerClient : workerClient)(client, url, `chaos-${proc}`);
  const prepare = !behindPooler;
  const real = createPostgresStore({ client: connection.client, prepare });
  if (wrap !== undefined && connection.pool === null) throw new Error('planted bugs run on a pg Pool');
  const store = wrap === undefined || connection.pool === null ? real : wrap(real, connection.pool);
  const gate = createPostgresTokenGate({ client: connection.client, prepare });
  let onDying: ((entry: string) => void) | null = null;
  return {
    store: store as Store,
    gate: gate as WorkerBackend['gate'],
    appendUnderFence: (leases: Leases, lease: Lease, entry: string) =>
      leases.fencedWrite(lease, async (tx) => {
        await (tx as PostgresWriteContext).query('INSERT INTO chaos_ledger (key, entry) VALUES ($1, $2)', [lease.key, entry]);
        // NOTE: inside the fenced transaction, which holds the lease row's share lock: the process dies uncommitted.
        if (onDying !== null) {
          onDying(entry);
          process.kill(process.pid, 'SIGKILL');
        }
      }),
    appendThroughGate: (leases: Leases, lease: Lease, resource: string, entry: string) =>
      leases.gateWrite(gate, resource, lease, async (tx) => {
        await tx.query('INSERT INTO chaos_gate_ledger (resource, entry) VALUES ($1, $2)', [resource, entry]);
      }),
    dieInNextWrite: (callback) => {
      onDying = callback;
    },
    close: () => connection.end(),
  };
}

/** The harness's admin pool: prepares the tables, forces expiries, terminates worker sessions, reads the end state. */
export async function createPostgresAdmin(url: string): Promise<StoreAdmin> {
  const pool = new pg.Pool({ connectionString: url, application_name: 'chaos-admin', max: 2, connectionTimeoutMillis: 5000 });
  pool.on('error', () => undefined);
  return postgresAdmin(pool, () => pool.end());
}

/** The admin over any client the store takes (a pg Pool, PGlite for the in-process fleet); `end` closes it. */
export async function postgresAdmin(client: PostgresClient, end: () => Promise<void>): Promise<StoreAdmin> {
  const store = createPostgresStore({ client });
  await store.migrate();
  const gate = createPostgresTokenGate({ client });
  await gate.migrate();
  for (const statement of LEDGER_DDL) await client.query(statement);
  const operator = createLeases(store, { holder: 'chaos-operator' });
  const entries = async (sql: string, param: string): Promise<string[]> =>
    ((await client.query(sql, [param])).rows as Array<{ entry: string }>).map((row) => row.entry);
  return {
    forceExpire: async (key) => {
      await client.query(
        `UPDATE ${LEASE_TABLE} SET expires_at = date_trunc('milliseconds', clock_timestamp()) WHERE key = $1 AND holder IS NOT NULL`,
        [key],
      );
    },
    killConnections: async () => {
      const { rows } = await client.query(
        `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name LIKE 'chaos-w%'`,
      );
      return rows.length;
    },
    revoke: async (key) => (await operator.revoke(key, { reason: 'chaos: operator revoke', by: 'chaos-operator' })).ok,
    readFinal: (keys) =>
      Promise.all(
        keys.map(async (key) =>
          finalKeyState(
            key,
            await store.inspect(key),
            await entries('SELECT entry FROM chaos_ledger WHERE key = $1 ORDER BY id', key),
            await entries('SELECT entry FROM chaos_gate_ledger WHERE resource = $1 ORDER BY id', resourceOf(key)),
          ),
        ),
      ),
    close: end,
  };
}

/** A backend for an in-process worker sharing `client` (PGlite: one backend, no pool). */
export function sharedPostgresBackend(client: PostgresClient, wrap: (store: Store) => Store = (s) => s): WorkerBackend {
  const store = wrap(createPostgresStore({ client }) as Store);
  const gate = createPostgresTokenGate({ client });
  return {
    store,
    gate: gate as WorkerBackend['gate'],
    appendUnderFence: (leases: Leases, lease: Lease, entry: string) =>
      leases.fencedWrite(lease, async (tx) => {
        await (tx as PostgresWriteContext).query('INSERT INTO chaos_ledger (key, entry) VALUES ($1, $2)', [lease.key, entry]);
      }),
    appendThroughGate: (leases: Leases, lease: Lease, resource: string, entry: string) =>
      leases.gateWrite(gate, resource, lease, async (tx) => {
        await tx.query('INSERT INTO chaos_gate_ledger (resource, entry) VALUES ($1, $2)', [resource, entry]);
      }),
    close: async () => undefined,
  };
}
