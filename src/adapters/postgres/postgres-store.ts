/**
 * The Postgres lease store: each operation is one statement whose returned pre-image is decided by the pure
 * transitions of `fence/`; fenced writes run in a transaction that holds the lease row FOR SHARE.
 */
import { InvalidArgumentError } from '../../errors.js';
import { describe, readRequiredOptions } from '../../validate.js';
import type { FencedWriteOutcome, StoreFencedWriteOptions } from '../../fence/operations.js';
import * as transitions from '../../fence/transitions.js';
import type { Transition } from '../../fence/transitions.js';
import type { Fence, LeaseRecord, StoreTime } from '../../fence/types.js';
import type { Lease } from '../../lease.js';
import type { Store } from '../../store.js';
import { claimQueueParams, dequeueStatement } from './claim-queue.js';
import { CLAIM_FUNCTION_SUFFIX, expectParams } from './claim-rule.js';
import { orderedValues, SET_KEY_STATE_SUFFIX } from './key-state.js';
import { REMOVE_SUFFIX } from './remove.js';
import { checkSubmissionInput, SUBMISSION_LOOKUP_SUFFIX, SUBMISSIONS_SUFFIX } from './submissions.js';
import { sharesOneConnection, type PostgresClient } from './client.js';
import { assertEncodable, assertEncodableAttributes, assertEncodableState } from './encodable.js';
import { ADD_ITEMS_SUFFIX, createPostgresItems, itemStatements, type PostgresItemsMethods } from './items.js';
import { ACQUIRE_PERMIT_SUFFIX, acquirePermitCall, createPostgresPermits, type PostgresPermitsMethods } from './permits.js';
import { ownStatementFailure } from './failures.js';
import { refuseInsideFencedWrite, runFencedTransaction, type PostgresWriteContext } from './fenced-transaction.js';
import { createStatementCache, runFencedStatement, type FencedStatementOptions, type FencedStatementOutcome } from './fenced-statement.js';
import { tableName, type TableName } from './identifier.js';
import { subscribeTimeoutOf } from '../freed-subscriptions.js';
import { freedChannelOf } from './freed-channel.js';
import { interestStatement } from './freed-interest.js';
import { createPostgresFreed, type PostgresListenerOption } from './freed-listener.js';
import { createPostgresList, listStatement } from './list.js';
import { decodePreImage, type PreImage } from './rows.js';
import { DEFAULT_LEASE_TABLE, MIGRATION_LOCK_SQL, schemaStatements } from './schema.js';
import { secretHash } from './secret-hash.js';
import { createSession, type Session } from './session.js';
import { commitOf, fenceParams, leaseStatements } from './statements.js';
import { leaseCommitOf, type LeaseCommit } from './lease-commit.js';
import { claimTokenFloor } from './token-floor.js';

/** The listener's check (freed-listener.ts): one notification on the table's channel, with a probe payload. */
const PROBE_SQL = 'SELECT pg_catalog.pg_notify($1, $2)';

/** SQLSTATE program_limit_exceeded: what a NOTIFY the server could not queue (its queue is full) fails with. */
const NOTIFY_QUEUE_FULL = '54000';

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
   * quoted. Its other tables and functions are named after it in the same schema (`<table>_try_claim`,
   * `<table>_submissions`, ...: docs/stores.md).
   * @default 'leasefence_leases'
   */
  readonly table?: string;
  /**
   * How long a fenced transaction may outlive its grant on the server, in ms: its first statement sets the
   * transaction's `statement_timeout` and `idle_in_transaction_session_timeout` to the grant's remaining
   * time plus this margin, so a holder frozen mid-transaction releases the lease row (its session ends)
   * soon after the grant expires. A lower timeout your pool already sets is kept.
   * @default 500
   */
  readonly fencedTransactionMarginMs?: number;
  /**
   * A dedicated LISTEN connection, for waiting claims woken at once by a release or revoke, and holders
   * told at once of a revoke (a release NOTIFYs the table's channel, `<table>:freed`, with the key, when a
   * waiter marked its interest on the lease row; a revoke always: freed-interest.ts): a function returning a new
   * connected pg `Client` (reopened after a loss, ended when nobody waits), your own pg `Client`, a
   * postgres.js `sql` or a PGlite instance (see `PostgresListenerOption`). It must reach Postgres directly
   * or through pgbouncer in session mode: LISTEN does not work through transaction mode. The first
   * subscription checks it (a probe NOTIFY through `client` must reach the listener): one that does not
   * hear it is refused with INVALID_ARGUMENT naming this option, and its waiters claim on their `pollMs`
   * schedule. Without it the store has no `watchFreed` and waiting claims retry on their schedule only
   * (see docs/waiting.md).
   */
  readonly listener?: PostgresListenerOption;
  /**
   * How long a wait waits for the listener connection to confirm its LISTEN before it gives up on the
   * wake-up (it then retries on its schedule only).
   * @default 2_000
   */
  readonly subscribeTimeoutMs?: number;
  /**
   * How the lease-only operations commit: claim, renew, a release that keeps the checkpoint, and dequeue.
   * `'durable'`: acknowledged after their commit is flushed to the WAL, like any statement. `'fast'`: each of
   * those statements sets `synchronous_commit` off for its own transaction, so it is acknowledged before the
   * flush (within `wal_writer_delay`, 200 ms by default, the WAL writer flushes it): no fsync wait per claim
   * or release. The trade: **a grant (or renew, or release) acknowledged just before a crash of the server
   * may be forgotten**, as Redis without AOF forgets its last writes. Fencing still holds: tokens are
   * clock-floored, so the next grant after a restart gets a token above the forgotten one, and the forgotten
   * grant's holder is refused by every fence check. Fenced writes, checkpoints (and a release that saves or
   * clears one), revoke, recover, key state, remove, claim-next and permits always commit durably, and any
   * durable commit flushes the lease commits before it: a grant its holder wrote under is never forgotten.
   * NOTE: the setting lasts until the end of the transaction the statement runs in: run lease operations
   * through a pool (or a connection not inside your own `BEGIN`), as usual, or that transaction commits
   * asynchronously too.
   * @default 'durable'
   */
  readonly leaseCommit?: LeaseCommit;
}

/** The Postgres lease store. */
export interface PostgresStore extends Store<PostgresWriteContext> {
  /** Claim-next (items.ts): the store offers all three. */
  addItems: PostgresItemsMethods['addItems'];
  removeItems: PostgresItemsMethods['removeItems'];
  claimNext: PostgresItemsMethods['claimNext'];
  /** Semaphores (permits.ts). */
  acquirePermit: PostgresPermitsMethods['acquirePermit'];
  /** The table as configured. */
  readonly table: string;
  /**
   * Creates the lease table, its submissions and token-floor tables and its functions if missing (replacing
   * the functions); safe to run from several processes at once.
   */
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

const DEFAULT_MARGIN_MS = 500;
const STORE_OPTION_NAMES = [
  'client',
  'prepare',
  'table',
  'fencedTransactionMarginMs',
  'listener',
  'subscribeTimeoutMs',
  'leaseCommit',
] as const;
const MAX_MARGIN_MS = 60_000;

/** The longest hold the store takes: 100 years (a `timestamptz` far beyond would be out of range). */
const MAX_HOLD_MS = 100 * 365.25 * 24 * 3_600_000;

/** A hold's length: a whole number of ms from 0 to `MAX_HOLD_MS`, checked before any I/O. */
function assertHoldMs(holdMs: number): void {
  if (typeof holdMs !== 'number' || !Number.isSafeInteger(holdMs) || holdMs < 0 || holdMs > MAX_HOLD_MS)
    throw new InvalidArgumentError(
      `holdMs must be a whole number of milliseconds from 0 to ${MAX_HOLD_MS} (100 years), got ${describe(holdMs)}`,
    );
}

function checkFenceInput(fence: Fence): void {
  assertEncodable('key', fence.key);
  assertEncodable('holder', fence.holder);
  assertEncodable('runId', fence.runId);
  assertEncodableAttributes(fence.attributes);
}

/** The pre-image in the single row a lease statement returns. */
function preImageOf(rows: unknown[], operation: string, presented: string | null): PreImage {
  const row = rows[0] as { r?: unknown } | undefined;
  if (rows.length !== 1 || typeof row !== 'object' || row === null) {
    throw new Error(`leasefence/postgres: ${operation} returned ${rows.length} rows, expected exactly 1`);
  }
  return decodePreImage(row.r, presented);
}

/**
 * Creates a lease store on your Postgres pool or client. Each operation is one statement (one round trip)
 * that locks the lease row, applies the change under exactly the conditions of the pure core and returns
 * the row as it was; the outcome is then computed by the pure transition on that pre-image. Times come from
 * the server's `clock_timestamp()`. Run `await store.migrate()` once (or `postgresLeaseSchemaSql()` in your own
 * migrations) before use.
 *
 * **Tokens** are `GREATEST(last token + 1, now in microseconds)` (token-floor.ts): a restored backup or a
 * promoted replica that missed commits still mints tokens above every token issued before, ASSUMING its
 * clock is not behind the old server's (see docs/topologies.md).
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
export function createPostgresStore(given: PostgresStoreOptions): PostgresStore {
  // NOTE: read once, and every option checked here, before the client is used.
  const options = readRequiredOptions('createPostgresStore options', given, STORE_OPTION_NAMES) as PostgresStoreOptions;
  if (options.prepare !== undefined && typeof options.prepare !== 'boolean')
    throw new InvalidArgumentError(`prepare must be a boolean, got ${describe(options.prepare)}`);
  if (options.subscribeTimeoutMs !== undefined) subscribeTimeoutOf(options.subscribeTimeoutMs);
  const commit = leaseCommitOf(options.leaseCommit);
  const table: TableName = tableName(options.table ?? DEFAULT_LEASE_TABLE);
  const derived = [
    CLAIM_FUNCTION_SUFFIX,
    SET_KEY_STATE_SUFFIX,
    REMOVE_SUFFIX,
    SUBMISSION_LOOKUP_SUFFIX,
    SUBMISSIONS_SUFFIX,
    'token_floor',
    ADD_ITEMS_SUFFIX,
    ACQUIRE_PERMIT_SUFFIX,
  ];
  const schema = { names: [table.bare, ...derived.map((suffix) => `${table.bare}_${suffix}`)], fix: 'await store.migrate()' };
  const session: Session = createSession(options.client, options.prepare === undefined ? { schema } : { prepare: options.prepare, schema });
  const sql = leaseStatements(table);
  // NOTE: the lease-only statements as `leaseCommit` commits them (lease-commit.ts); `sql`'s are durable.
  const leaseOnly = commit === 'durable' ? sql : commitOf(table, commit);
  // NOTE: unprepared, the claim statement would be planned at every call (more than it costs to run); the
  // claim function's plpgsql keeps its plans for the session (schema.ts).
  const claimText = session.prepared ? leaseOnly.claim : leaseOnly.claimCall;
  const dequeue = dequeueStatement(table, true, commit);
  const dequeueQuiet = dequeueStatement(table, false, commit);
  const id = `postgres:${table.name}`;
  const wrap = createStatementCache(table);
  const { client } = options;
  const exclusive = sharesOneConnection(client);
  const marginMs = options.fencedTransactionMarginMs ?? DEFAULT_MARGIN_MS;
  if (typeof marginMs !== 'number' || !Number.isInteger(marginMs) || marginMs < 0 || marginMs > MAX_MARGIN_MS) {
    throw new InvalidArgumentError(`fencedTransactionMarginMs must be an integer number of milliseconds from 0 to ${MAX_MARGIN_MS}`);
  }
  const guard = (key: string | null, operation: string): void => refuseInsideFencedWrite(client, table.quoted, key, operation);
  const subscribeTimeoutMs = subscribeTimeoutOf(options.subscribeTimeoutMs);
  const interest = interestStatement(table, subscribeTimeoutMs);
  const markInterest = async (key: string): Promise<void> => {
    guard(key, 'watchFreed');
    await ownStatement('watchFreed', interest, [key]);
  };
  const sendProbe = async (channel: string, payload: string): Promise<void> => {
    await ownStatement('watchFreed', PROBE_SQL, [channel, payload]);
  };
  const watches =
    options.listener === undefined
      ? undefined
      : createPostgresFreed(options.listener, freedChannelOf(table), subscribeTimeoutMs, markInterest, sendProbe);

  /** Sends one of leasefence's statements; an SQL error it raises never carries the driver's error. */
  const ownStatement = async (operation: string, text: string, params: unknown[]): Promise<unknown[]> => {
    try {
      return await session.statement(text, params, operation);
    } catch (error) {
      throw ownStatementFailure(error, operation);
    }
  };

  /** Sends one statement and decides its outcome with the pure transition on the returned pre-image. */
  const apply = async <O>(
    operation: string,
    text: string,
    params: unknown[],
    presented: string | null,
    decide: (record: LeaseRecord | null, now: StoreTime, removedFloor: bigint | null) => Transition<O>,
  ): Promise<O> => {
    const { now, applied, record, removedFloor } = preImageOf(await ownStatement(operation, text, params), operation, presented);
    const { changed, outcome } = decide(record, now, removedFloor);
    if (changed !== applied) {
      // NOTE: unreachable while the SQL mirrors the pure transitions; the conformance and model suites check it.
      throw new Error(`leasefence/postgres: ${operation} disagrees with the core (core changed=${changed}, SQL applied=${applied})`);
    }
    return outcome;
  };

  /**
   * `apply` for a statement that may `pg_notify` waiters (release, revoke). A full notification queue (any
   * role that LISTENs and then idles in a transaction can fill it) fails the statement's commit with
   * SQLSTATE 54000, and it is then rolled back: nothing applied. The grant must still end, so the same
   * statement runs again without its notification (`quiet`); waiters then wake on their schedule.
   */
  const applyNotifying = async <O>(
    operation: string,
    text: string,
    quiet: string,
    params: unknown[],
    presented: string | null,
    decide: (record: LeaseRecord | null, now: StoreTime) => Transition<O>,
  ): Promise<O> => {
    try {
      return await apply(operation, text, params, presented, decide);
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code !== NOTIFY_QUEUE_FULL) throw error;
      return apply(operation, quiet, params, presented, decide);
    }
  };

  return {
    id,
    table: table.name,

    async migrate() {
      guard(null, 'migrate');
      await session.transaction(async (tx) => {
        try {
          await tx.query(MIGRATION_LOCK_SQL, [`leasefence:${table.quoted}`]);
          for (const statement of schemaStatements(table)) await tx.query(statement);
        } catch (error) {
          throw ownStatementFailure(session.classifyFailure(error, 'before-commit', 'migrate'), 'migrate');
        }
      }, 'migrate');
    },

    claim(command) {
      assertEncodable('key', command.key);
      assertEncodable('holder', command.holder);
      assertEncodable('runId', command.runId);
      assertEncodableAttributes(command.attributes);
      if (command.expect !== undefined) assertEncodableState('expect', command.expect);
      if (command.queue !== undefined) for (const waiterId of command.queue.waiterIds) assertEncodable('waiterId', waiterId);
      const params = [
        command.key,
        command.holder,
        command.runId,
        secretHash(command.secret),
        command.ttlMs,
        JSON.stringify(command.attributes),
        command.recovering,
        ...expectParams(command.expect),
        ...claimQueueParams(command),
      ];
      guard(command.key, 'claim');
      return apply('claim', claimText, params, command.secret, (record, now, removed) =>
        transitions.claim(record, command, now, claimTokenFloor(now, record?.token ?? 0n, removed)),
      );
    },

    renew(command) {
      checkFenceInput(command.fence);
      guard(command.fence.key, 'renew');
      return apply('renew', leaseOnly.renew, [...fenceParams(command.fence), command.ttlMs], command.fence.secret, (record, now) =>
        transitions.renew(record, command, now),
      );
    },

    checkpoint(command) {
      checkFenceInput(command.fence);
      const params = [...fenceParams(command.fence), command.json];
      guard(command.fence.key, 'checkpoint');
      return apply('checkpoint', sql.checkpoint, params, command.fence.secret, (record, now) =>
        transitions.checkpoint(record, command, now),
      );
    },

    release(command) {
      checkFenceInput(command.fence);
      const json = command.checkpointJson;
      const mode = json === undefined ? 'keep' : json === null ? 'clear' : 'replace';
      if (command.holdMs !== undefined) assertHoldMs(command.holdMs);
      const params = [...fenceParams(command.fence), mode, typeof json === 'string' ? json : null];
      const held = command.holdMs !== undefined;
      if (held) params.push(command.holdMs);
      guard(command.fence.key, 'release');
      // NOTE: a release that replaces or clears the checkpoint saves the holder's progress: always durable.
      const statements = mode === 'keep' ? leaseOnly : sql;
      const [text, quiet] = held ? [statements.releaseHold, statements.releaseHoldQuiet] : [statements.release, statements.releaseQuiet];
      return applyNotifying('release', text, quiet, params, command.fence.secret, (record, now) =>
        transitions.release(record, command, now),
      );
    },

    revoke(command) {
      assertEncodable('key', command.key);
      assertEncodable('revoke reason', command.reason);
      assertEncodable('revoked by', command.by);
      const params = [command.key, command.reason, command.by, command.requireRecovery, command.expectedToken?.toString() ?? null];
      guard(command.key, 'revoke');
      return applyNotifying('revoke', sql.revoke, sql.revokeQuiet, params, null, (record, now) => transitions.revoke(record, command, now));
    },

    recover(command) {
      checkFenceInput(command.fence);
      const params = [...fenceParams(command.fence), command.action];
      guard(command.fence.key, 'recover');
      return apply('recover', sql.recover, params, command.fence.secret, (record, now) => transitions.recover(record, command, now));
    },

    setKeyState(command) {
      assertEncodable('key', command.key);
      assertEncodable('state set by', command.by);
      assertEncodableState('values', command.values);
      if (command.holdMs !== undefined && command.holdMs !== null) assertHoldMs(command.holdMs);
      const hold = command.holdMs === undefined ? 'keep' : command.holdMs === null ? 'clear' : 'set';
      const params = [command.key, orderedValues(command.values), command.by, hold, command.holdMs ?? null];
      guard(command.key, 'setKeyState');
      return applyNotifying('setKeyState', sql.setKeyState, sql.setKeyStateQuiet, params, null, (record, now) =>
        transitions.setKeyState(record, command, now),
      );
    },

    remove(command) {
      assertEncodable('key', command.key);
      const params = [command.key, command.force === true, command.expectedToken?.toString() ?? null];
      guard(command.key, 'remove');
      return applyNotifying('remove', sql.remove, sql.removeQuiet, params, null, (record, now) => transitions.remove(record, command, now));
    },

    dequeue(command) {
      assertEncodable('key', command.key);
      for (const waiterId of command.waiterIds) assertEncodable('waiterId', waiterId);
      const params = [command.key, JSON.stringify(command.waiterIds)];
      guard(command.key, 'dequeue');
      return applyNotifying('dequeue', dequeue, dequeueQuiet, params, null, (record, now) => transitions.dequeue(record, command, now));
    },

    async inspect(key) {
      assertEncodable('key', key);
      guard(null, 'inspect');
      const { now, record } = preImageOf(await ownStatement('inspect', sql.inspect, [key]), 'inspect', null);
      return transitions.inspect(record, key, now);
    },

    fencedWrite<T>(
      fence: Fence,
      write: (context: PostgresWriteContext) => T | Promise<T>,
      writeOptions: StoreFencedWriteOptions = {},
    ): Promise<FencedWriteOutcome<T>> {
      checkFenceInput(fence);
      if (writeOptions.submission !== undefined) checkSubmissionInput(writeOptions.submission);
      guard(fence.key, 'fencedWrite');
      return runFencedTransaction({
        session,
        client,
        exclusive,
        table: table.quoted,
        statements: sql,
        marginMs,
        fence,
        write,
        options: writeOptions,
      });
    },

    list: createPostgresList(session, listStatement(table)),

    ...createPostgresItems({ statements: itemStatements(table), statement: ownStatement, guard: (operation) => guard(null, operation) }),

    ...createPostgresPermits({ call: acquirePermitCall(table), statement: ownStatement, guard: (operation) => guard(null, operation) }),

    ...(watches === undefined ? {} : { watchFreed: watches.watchFreed, watchRevoked: watches.watchRevoked }),

    fencedStatement(lease, text, params = [], statementOptions = {}) {
      return runFencedStatement({
        session,
        storeId: id,
        lease,
        text,
        params,
        options: statementOptions,
        checkFenceInput,
        wrap,
        guard: (key) => guard(key, 'fencedStatement'),
      });
    },
  };
}
