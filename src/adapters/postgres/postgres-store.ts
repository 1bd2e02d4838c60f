/**
 * The Postgres lease store: each operation is one statement whose returned pre-image is decided by the pure
 * transitions of `fence/`; fenced writes run in a transaction that holds the lease row FOR SHARE.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { FencedWriteOutcome, StoreFencedWriteOptions } from '../../fence/operations.js';
import * as transitions from '../../fence/transitions.js';
import type { Transition } from '../../fence/transitions.js';
import type { Fence, LeaseRecord, StoreTime } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import type { Lease } from '../../lease.js';
import type { Store } from '../../store.js';
import type { PostgresClient, PostgresQueryable } from './client.js';
import { assertEncodable, assertEncodableAttributes } from './encodable.js';
import { classifyFailure } from './failures.js';
import { createStatementCache, runFencedStatement, type FencedStatementOptions, type FencedStatementOutcome } from './fenced-statement.js';
import { tableName, type TableName } from './identifier.js';
import { createPostgresList, listStatement } from './list.js';
import { decodePreImage, type PreImage } from './rows.js';
import { DEFAULT_LEASE_TABLE, MIGRATION_LOCK_SQL, schemaStatements } from './schema.js';
import { createSession, type Session } from './session.js';
import { fenceParams, leaseStatements } from './statements.js';

/** What a Postgres fenced write's callback receives: a client bound to the fenced transaction. */
export interface PostgresWriteContext {
  /** Runs a statement inside the fenced transaction (bind parameters `$1`, `$2`, ...). */
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: Row[] }>;
  /**
   * The transaction's connection as the driver gave it: a pg `PoolClient`, a PGlite `Transaction`, the pg
   * `Client` of `fromPgClient`, or for `fromPostgresJs` a wrapper whose `sql` is postgres.js's transaction.
   */
  readonly connection: PostgresQueryable;
  readonly key: string;
  /** The token of the grant the write runs under. */
  readonly token: bigint;
  /** The store's now when the fence was checked (the lease row stays locked until COMMIT). */
  readonly now: StoreTime;
}

export interface PostgresStoreOptions {
  /** Your pool or client: a pg `Pool`, a PGlite instance, `fromPostgresJs(sql)` or `fromPgClient(client)`. */
  readonly client: PostgresClient;
  /**
   * Send leasefence's statements as prepared statements, parsed and planned once per connection (pg:
   * named statements; postgres.js: `unsafe(..., { prepare: true })`, which also saves postgres.js's extra
   * round trip per unprepared parameterised query). Turn off behind a pooler that cannot keep prepared
   * statements (pgbouncer in transaction mode before 1.21). PGlite runs in-process and ignores it.
   * @default true
   */
  readonly prepare?: boolean;
  /**
   * The lease table, optionally schema-qualified (`app.leases`). Validated as an identifier and always
   * quoted. Its claim function is `<table>_try_claim` in the same schema.
   * @default 'leasefence_leases'
   */
  readonly table?: string;
}

/** The Postgres lease store. */
export interface PostgresStore extends Store<PostgresWriteContext> {
  /** The table as configured. */
  readonly table: string;
  /** Creates the table and its claim function if missing; safe to run from several processes at once. */
  migrate(): Promise<void>;
  /**
   * One fenced statement, one round trip: runs your INSERT / UPDATE / DELETE ... RETURNING, which must read
   * the relation `fence` (one row `key, token, now` when the lease holds, none otherwise), and tells a
   * fenced refusal (with the core's verdict) apart from a write that matched zero rows.
   *
   * ```ts
   * const outcome = await store.fencedStatement(lease, 'UPDATE jobs SET result = $1 FROM fence WHERE jobs.id = $2 RETURNING jobs.id', [result, id]);
   * if (!outcome.ok) console.warn(describeRefusal(outcome));
   * else if (outcome.rowCount === 0) console.warn('no such job');
   * ```
   */
  fencedStatement<Row = Record<string, unknown>>(
    lease: Lease,
    text: string,
    params?: unknown[],
    options?: FencedStatementOptions,
  ): Promise<FencedStatementOutcome<Row>>;
}

function checkFenceInput(fence: Fence): void {
  assertEncodable('key', fence.key);
  assertEncodable('holder', fence.holder);
  assertEncodable('runId', fence.runId);
  assertEncodableAttributes(fence.attributes);
}

/** The pre-image in the single row a lease statement returns. */
function preImageOf(rows: unknown[], operation: string): PreImage {
  const row = rows[0] as { r?: unknown } | undefined;
  if (rows.length !== 1 || typeof row !== 'object' || row === null) {
    throw new Error(`leasefence/postgres: ${operation} returned ${rows.length} rows, expected exactly 1`);
  }
  return decodePreImage(row.r);
}

/**
 * Creates a lease store on your Postgres pool or client. Each operation is one statement (one round trip)
 * that locks the lease row, applies the change under exactly the conditions of the pure core and returns
 * the row as it was; the outcome is then computed by the pure transition on that pre-image. Times come from
 * the server's `clock_timestamp()`. Run `await store.migrate()` once (or `postgresSchemaSql()` in your own
 * migrations) before use.
 *
 * ```ts
 * import pg from 'pg';
 * import { createLeases } from 'leasefence';
 * import { createPostgresStore } from 'leasefence/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, statement_timeout: 5_000, lock_timeout: 2_000 });
 * const store = createPostgresStore({ client: pool });
 * await store.migrate();
 * const leases = createLeases(store, { holder: 'exporter-1' });
 * ```
 */
export function createPostgresStore(options: PostgresStoreOptions): PostgresStore {
  const table: TableName = tableName(options.table ?? DEFAULT_LEASE_TABLE);
  const session: Session = createSession(options.client, options.prepare === undefined ? {} : { prepare: options.prepare });
  const sql = leaseStatements(table);
  // NOTE: unprepared, the claim statement would be planned at every call (more than it costs to run); the
  // claim function's plpgsql keeps its plans for the session (schema.ts).
  const claimText = session.prepared ? sql.claim : sql.claimCall;
  const id = `postgres:${table.name}`;
  const wrap = createStatementCache(table);

  /** Sends one statement and decides its outcome with the pure transition on the returned pre-image. */
  const apply = async <O>(
    operation: string,
    text: string,
    params: unknown[],
    decide: (record: LeaseRecord | null, now: StoreTime) => Transition<O>,
  ): Promise<O> => {
    const { now, applied, record } = preImageOf(await session.statement(text, params, operation), operation);
    const { changed, outcome } = decide(record, now);
    if (changed !== applied) {
      // NOTE: unreachable while the SQL mirrors the pure transitions; the conformance and model suites check it.
      throw new Error(`leasefence/postgres: ${operation} disagrees with the core (core changed=${changed}, SQL applied=${applied})`);
    }
    return outcome;
  };

  return {
    id,
    table: table.name,

    async migrate() {
      await session.transaction(async (tx) => {
        try {
          await tx.query(MIGRATION_LOCK_SQL, [`leasefence:${table.quoted}`]);
          for (const statement of schemaStatements(table)) await tx.query(statement);
        } catch (error) {
          throw classifyFailure(error, 'before-commit', 'migrate');
        }
      }, 'migrate');
    },

    claim(command) {
      assertEncodable('key', command.key);
      assertEncodable('holder', command.holder);
      assertEncodable('runId', command.runId);
      assertEncodableAttributes(command.attributes);
      const params = [command.key, command.holder, command.runId, command.secret, command.ttlMs, JSON.stringify(command.attributes), command.recovering];
      return apply('claim', claimText, params, (record, now) => transitions.claim(record, command, now));
    },

    renew(command) {
      checkFenceInput(command.fence);
      return apply('renew', sql.renew, [...fenceParams(command.fence), command.ttlMs], (record, now) => transitions.renew(record, command, now));
    },

    checkpoint(command) {
      checkFenceInput(command.fence);
      const params = [...fenceParams(command.fence), command.json];
      return apply('checkpoint', sql.checkpoint, params, (record, now) => transitions.checkpoint(record, command, now));
    },

    release(command) {
      checkFenceInput(command.fence);
      const json = command.checkpointJson;
      const mode = json === undefined ? 'keep' : json === null ? 'clear' : 'replace';
      const params = [...fenceParams(command.fence), mode, typeof json === 'string' ? json : null];
      return apply('release', sql.release, params, (record, now) => transitions.release(record, command, now));
    },

    revoke(command) {
      assertEncodable('key', command.key);
      assertEncodable('revoke reason', command.reason);
      assertEncodable('revoked by', command.by);
      const params = [command.key, command.reason, command.by, command.requireRecovery, command.expectedToken?.toString() ?? null];
      return apply('revoke', sql.revoke, params, (record, now) => transitions.revoke(record, command, now));
    },

    recover(command) {
      checkFenceInput(command.fence);
      const params = [...fenceParams(command.fence), command.action];
      return apply('recover', sql.recover, params, (record, now) => transitions.recover(record, command, now));
    },

    async inspect(key) {
      assertEncodable('key', key);
      const { now, record } = preImageOf(await session.statement(sql.inspect, [key], 'inspect'), 'inspect');
      return transitions.inspect(record, key, now);
    },

    async fencedWrite<T>(fence: Fence, write: (context: PostgresWriteContext) => T | Promise<T>, writeOptions: StoreFencedWriteOptions = {}): Promise<FencedWriteOutcome<T>> {
      checkFenceInput(fence);
      // TODO(issue 8): save writeOptions.checkpointJson in the same atomic step (being built on this adapter).
      if (writeOptions.checkpointJson !== undefined) throw new InvalidArgumentError('fencedWrite with a checkpoint is not supported by this store yet');
      return session.transaction(async (tx, control): Promise<FencedWriteOutcome<T>> => {
        let rows: unknown[];
        try {
          // NOTE: FOR SHARE holds off every takeover (claim, revoke: FOR NO KEY UPDATE) until this transaction ends,
          // so the write commits before any newer grant exists; without it a stale write could commit after one.
          rows = (await session.run(tx, sql.lockShared, [fence.key])).rows;
        } catch (error) {
          throw classifyFailure(error, 'before-commit', 'fencedWrite');
        }
        const { now, record } = preImageOf(rows, 'fencedWrite');
        const verdict = checkFence(record, fence, now);
        if (!verdict.ok) return control.rollbackWith(verdict);
        const context: PostgresWriteContext = {
          query: tx.query.bind(tx) as PostgresWriteContext['query'],
          connection: tx,
          key: fence.key,
          token: fence.token,
          now,
        };
        const value = await write(context);
        return { ok: true, value, token: fence.token, checkpoint: null, now };
      }, 'fencedWrite');
    },

    list: createPostgresList(session, listStatement(table)),

    fencedStatement(lease, text, params = [], statementOptions = {}) {
      return runFencedStatement({ session, storeId: id, lease, text, params, options: statementOptions, checkFenceInput, wrap });
    },
  };
}
