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
 * Inside a fenced write's callback, an operation on the same lease (checkpoint, renew, release, claim, a
 * nested fenced write) is refused with INVALID_ARGUMENT before any I/O: it would wait for the row lock the
 * fenced write holds until it commits. Save progress with the write instead:
 * `leases.fencedWrite(lease, write, { checkpoint })`. A background renewal simply waits its turn.
 *
 * Secrets: the table keeps `secret_hash` (SHA-256), never the secret, and the secret is hashed before it is
 * sent. Until `await store.migrate()` has created the table and its claim function, operations fail with
 * STORE_UNAVAILABLE naming `store.migrate()`.
 *
 * What the table keeps, per key: one row (deleted only by `remove`; its token is the floor of every later
 * grant, and `<table>_token_floor` keeps the highest token `remove` deleted), with the current grant (holder,
 * run, secret hash, times, at most 64 attributes), how the last grant ended, the checkpoint (up to
 * `maxCheckpointBytes` of JSON text), the key state and a hold; and in `<table>_submissions` the key's newest
 * 32 submissions. Nothing else per request. A claim
 * refused because the key is held does not return the checkpoint; a checkpoint that is not valid JSON
 * reads as `{ "leasefence:unreadable-checkpoint": true, ... }` until a holder replaces or clears it.
 *
 * Search path: every operator and function leasefence's SQL uses resolves to `pg_catalog`, and the table's
 * functions pin `search_path = pg_catalog, pg_temp`. The table (and the claim function next to it) is found
 * through your search_path unless you name its schema: when other roles can create objects in a schema on
 * your search_path, configure `table: 'app.leasefence_leases'`.
 */
export {
  createPostgresStore,
  type PostgresStore,
  type PostgresStoreOptions,
} from './postgres-store.js';
export type { PostgresWriteContext } from './fenced-transaction.js';
export type { FencedStatementOptions, FencedStatementOutcome } from './fenced-statement.js';
export type { LeaseCommit } from './lease-commit.js';
export {
  fromPgClient,
  fromPostgresJs,
  type PostgresClient,
  type PostgresJsRoot,
  type PostgresJsSql,
  type PostgresPooledConnection,
  type PostgresQueryable,
} from './client.js';
export { DEFAULT_LEASE_TABLE, postgresLeaseSchemaSql } from './schema.js';
export type { PgListenClient, PGliteListen, PostgresJsListen, PostgresListenerOption } from './freed-listener.js';
export {
  createPostgresTokenGate,
  DEFAULT_GATE_TABLE,
  postgresGateSchemaSql,
  type PostgresGateContext,
  type PostgresTokenGate,
  type PostgresTokenGateOptions,
} from './token-gate.js';
export { gatedUpsert, type GatedUpsert, type GatedUpsertOutcome } from './gated-upsert.js';
