/**
 * `leasefence/postgres`: leases stored in your PostgreSQL database, through your own client (pg Pool or
 * Client, postgres.js, PGlite). One statement per operation; fenced writes inside your transaction or as
 * one statement; token gates for your own tables.
 *
 * Timeouts: set them on your pool, so a stuck lock or a paused process cannot hold a lease row forever:
 * `statement_timeout` (e.g. 5 s), `lock_timeout` (e.g. 2 s; a claim that waits on a fenced write gives up
 * with `StoreUnavailableError`) and `idle_in_transaction_session_timeout` (e.g. 10 s; a fenced transaction
 * whose process froze releases the lease row). With pg: `new Pool({ statement_timeout: 5000,
 * lock_timeout: 2000, idle_in_transaction_session_timeout: 10000 })`; with postgres.js:
 * `postgres(url, { connection: { statement_timeout: 5000, lock_timeout: 2000 } })`.
 *
 * Inside a fenced write's callback, do not await another operation on the same lease (a renew waits for
 * the row lock the fenced write holds until it commits); a background renewal simply waits its turn.
 */
export {
  createPostgresStore,
  type PostgresStore,
  type PostgresStoreOptions,
} from './postgres-store.js';
export type { PostgresWriteContext } from './fenced-transaction.js';
export type { FencedStatementOptions, FencedStatementOutcome } from './fenced-statement.js';
export {
  fromPgClient,
  fromPostgresJs,
  type PostgresClient,
  type PostgresJsRoot,
  type PostgresJsSql,
  type PostgresPooledConnection,
  type PostgresQueryable,
} from './client.js';
export { DEFAULT_LEASE_TABLE, postgresSchemaSql } from './schema.js';
export {
  createPostgresTokenGate,
  DEFAULT_GATE_TABLE,
  gateTableSql,
  type PostgresGateContext,
  type PostgresTokenGate,
} from './token-gate.js';
export { gatedUpsert, type GatedUpsert, type GatedUpsertOutcome } from './gated-upsert.js';
