/**
 * Token gates in Postgres, Kleppmann's storage-side check: a resource remembers the lease key and the
 * highest token that wrote it, and a write carrying an older token (or another key's token) is refused.
 * - `createPostgresTokenGate`: the `TokenGate` contract over a small gate table; the gate check and your
 *   callback's statements commit in one transaction. By default it also checks the writer's full fence
 *   against the lease table in the same database, in the same statement as the gate check.
 * - `gatedUpsert` (gated-upsert.ts): one statement on a table you own, whose rows carry the writer's lease
 *   key and token.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { GateOutcome, GateRecord, GateResetOptions, GateResetOutcome } from '../../fence/operations.js';
import type { Fence, FenceRefusal } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import { gateResetOutcome, readGateResetOptions } from '../../gate.js';
import { assertName, describe, readRequiredOptions } from '../../validate.js';
import type { PostgresClient, PostgresQueryable } from './client.js';
import { assertEncodable } from './encodable.js';
import { ownStatementFailure } from './failures.js';
import { tableName, type TableName } from './identifier.js';
import { decodePreImage, NOW, preImageColumns, preImageJson } from './rows.js';
import { DEFAULT_LEASE_TABLE, MIGRATION_LOCK_SQL } from './schema.js';
import { createSession } from './session.js';
import { fenceHolds, fenceParams, PRE_IMAGE_WIDTH, transactionBound } from './statements.js';

/** The default gate table. */
export const DEFAULT_GATE_TABLE = 'leasefence_gates';

/** How long a gate transaction may outlive the writer's grant on the server (see `fencedTransactionMarginMs`). */
const GATE_MARGIN_MS = '500';

/** What a Postgres gate write's callback receives: a client bound to the gate's transaction. */
export interface PostgresGateContext {
  /** Runs one statement in the gate's transaction (bind parameters, never interpolated). */
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: Row[] }>;
  /** The token the write carries, now recorded as the resource's highest. */
  readonly token: bigint;
}

/**
 * A Postgres token gate over a gate table: the `TokenGate` contract (full fence, `FenceRefusal` outcome,
 * `inspect`, `reset`). NOTE: declared on its own until the contract's `GateOutcome` includes
 * `FenceRefusal` on this branch's base; it then `extends TokenGate<PostgresGateContext>` unchanged.
 */
export interface PostgresTokenGate {
  /** Creates the gate table if missing (idempotent, safe from several processes at once). */
  migrate(): Promise<void>;
  /**
   * Gate-checks and runs `write`. With a lease table (the default), `lease` must be the full fence
   * (`lease.fence()`: key, token, secret, holder, run): a fence that does not hold at the store's clock is
   * refused with the core's `FenceRefusal`, before the gate is touched.
   */
  write<T>(
    resource: string,
    lease: Fence | { readonly key: string; readonly token: bigint },
    write: (context: PostgresGateContext) => T | Promise<T>,
  ): Promise<GateOutcome<T> | FenceRefusal>;
  /** What the gate remembers of `resource`: the key and highest token that wrote it, or `null`. */
  inspect(resource: string): Promise<GateRecord>;
  /**
   * Forgets `resource` and answers what it forgot, so the next write of any key's current grant binds it
   * again: to re-key a resource or clear a forged token. Use it when the resource's old writers are stopped.
   * With `expectedToken` (and `expectedKey`), only if the gate row still holds them, in the same statement
   * as the delete; otherwise `superseded` with the row as it is, unchanged.
   */
  reset(resource: string, options?: GateResetOptions): Promise<GateResetOutcome>;
}

/** Options of `createPostgresTokenGate`. */
export interface PostgresTokenGateOptions {
  /** Your pool or client (as for `createPostgresStore`). */
  readonly client: PostgresClient;
  /** @default 'leasefence_gates' */
  readonly table?: string;
  /**
   * The lease table the writers' leases live in, in the same database: each write checks the full fence
   * (token, secret hash, holder, run, live grant at `clock_timestamp()`) in the same statement as the gate
   * check, and holds the lease row FOR SHARE until the write commits (a takeover waits, as for a fenced
   * write). `null`: tokens only, for leases kept elsewhere; a handle restored with a forged token higher
   * than any real one then passes, and locks every real holder out of the resource until `reset`.
   * @default 'leasefence_leases'
   */
  readonly leaseTable?: string | null;
  /**
   * Send the gate's statements as prepared statements, as the store's `prepare` option (turn off behind a
   * transaction-mode pooler: PgBouncer before 1.21, Supabase's and Neon's poolers).
   * @default true
   */
  readonly prepare?: boolean;
}

/** The gate table: one row per resource, the lease key and the highest token that wrote it. */
export function postgresGateSchemaSql(table: string = DEFAULT_GATE_TABLE): string {
  return `CREATE TABLE IF NOT EXISTS ${tableName(table, 'gate table').quoted} (
  resource text PRIMARY KEY,
  lease_key text NOT NULL,
  token bigint NOT NULL
)`;
}

/**
 * The upsert of the gate check, reading (resource, key, token) from `source`. ATOMICITY: it locks the
 * resource's row (inserting it for a first write) and moves it to (key, token) only if the row has the same
 * key and a token no higher; it returns the row as it is after the statement, so the write passed iff that
 * row is (key, token). Refused rows are rewritten unchanged, which keeps them locked until ROLLBACK, so the
 * refusal reports exactly the version it was judged against.
 */
function gateUpsert(table: TableName, source: string): string {
  const pass = `g.lease_key OPERATOR(pg_catalog.=) EXCLUDED.lease_key AND g.token OPERATOR(pg_catalog.<=) EXCLUDED.token`;
  return `INSERT INTO ${table.quoted} AS g (resource, lease_key, token) ${source}
ON CONFLICT (resource) DO UPDATE SET
  lease_key = CASE WHEN ${pass} THEN EXCLUDED.lease_key ELSE g.lease_key END,
  token = CASE WHEN ${pass} THEN EXCLUDED.token ELSE g.token END
RETURNING lease_key, token::text AS token`;
}

/** Token only: $1 resource, $2 key, $3 token. */
const tokenOnlySql = (table: TableName): string => gateUpsert(table, 'VALUES ($1::text, $2::text, $3::bigint)');

/**
 * With the full fence, one statement: fence params $1..$6 (statements.ts), $7 resource. `pre` locks the lease
 * row FOR SHARE and `clock` reads now after the lock, as a fenced write's first statement does (with the
 * same bound on the transaction); the upsert runs only when the fence holds (it reads `fence`).
 */
function fencedGateSql(table: TableName, leaseTable: TableName): string {
  return `WITH pre AS MATERIALIZED (
  SELECT ${preImageColumns(PRE_IMAGE_WIDTH.lockShared)} FROM ${leaseTable.quoted} WHERE key = $1::text FOR SHARE
),
clock AS MATERIALIZED (
  SELECT ${NOW} AS now, pg_catalog.count(*) AS locked FROM pre
),
fence AS MATERIALIZED (
  SELECT pre.key, pre.token FROM pre, clock WHERE ${fenceHolds((index) => `$${index}`)}
),
gate AS (
  ${gateUpsert(table, 'SELECT $7::text, fence.key, fence.token FROM fence')}
)
SELECT ${preImageJson(PRE_IMAGE_WIDTH.lockShared, 'pre.', 'clock.now', 'EXISTS (SELECT 1 FROM fence)', '$3::text')} AS r,
  (SELECT lease_key FROM gate) AS lease_key, (SELECT token FROM gate) AS token,
  CASE WHEN EXISTS (SELECT 1 FROM fence) AND pre.expires_at IS NOT NULL
    THEN ${transactionBound('statement_timeout', `${GATE_MARGIN_MS}::bigint`)} OPERATOR(pg_catalog.||) ${transactionBound('idle_in_transaction_session_timeout', `${GATE_MARGIN_MS}::bigint`)}
  END AS bounded
FROM clock LEFT JOIN pre ON true`;
}

const inspectSql = (table: TableName): string => `SELECT lease_key, token::text AS token FROM ${table.quoted} WHERE resource = $1::text`;
/**
 * $1 resource, $2 expected token (null: any), $3 expected key (null: any). ATOMICITY: one statement. `current`
 * locks the row FOR UPDATE, so it reads the latest committed version (after waiting for a gate write in
 * flight), and the delete judges that version: a write that commits first is found, never forgotten unseen.
 * Returns the row it judged (none: nothing recorded) and whether it was deleted.
 */
const resetSql = (table: TableName): string => `WITH current AS MATERIALIZED (
  SELECT resource, lease_key, token FROM ${table.quoted} WHERE resource = $1::text FOR UPDATE
),
gone AS (
  DELETE FROM ${table.quoted} AS g USING current
  WHERE g.resource OPERATOR(pg_catalog.=) current.resource
    AND ($2::bigint IS NULL OR (current.token OPERATOR(pg_catalog.=) $2::bigint AND ($3::text IS NULL OR current.lease_key OPERATOR(pg_catalog.=) $3::text)))
  RETURNING g.resource
)
SELECT lease_key, token::text AS token, EXISTS (SELECT 1 FROM gone) AS deleted FROM current`;

type GateRow = { lease_key: string | null; token: string | null } | undefined;

/** Whether `lease` carries a full fence (a secret and a holder), not only a key and token. */
function isFence(lease: Fence | { readonly key: string; readonly token: bigint }): lease is Fence {
  return typeof (lease as Fence).secret === 'string' && typeof (lease as Fence).holder === 'string';
}

/**
 * Creates a token gate whose records live in `table` of your database, so that the gate check and your
 * writes commit together. A refused write rolls back and its callback is not run.
 *
 * ```ts
 * const gate = createPostgresTokenGate({ client: pool });
 * await gate.migrate();
 * await leases.gateWriteOrThrow(gate, 'report:2024-06', lease, (tx) => tx.query('UPDATE reports SET body = $1 WHERE id = $2', [body, id]));
 * ```
 */
export function createPostgresTokenGate(given: PostgresTokenGateOptions): PostgresTokenGate {
  const options = readRequiredOptions('createPostgresTokenGate options', given, [
    'client',
    'table',
    'leaseTable',
    'prepare',
  ]) as PostgresTokenGateOptions;
  if (options.prepare !== undefined && typeof options.prepare !== 'boolean')
    throw new InvalidArgumentError(`prepare must be a boolean, got ${describe(options.prepare)}`);
  const table = tableName(options.table ?? DEFAULT_GATE_TABLE, 'gate table');
  const leaseTable = options.leaseTable === null ? null : tableName(options.leaseTable ?? DEFAULT_LEASE_TABLE, 'lease table');
  const names = [table.bare, ...(leaseTable === null ? [] : [leaseTable.bare, 'secret_hash'])];
  const schema = { names, fix: 'await gate.migrate() (and store.migrate() for the lease table)' };
  const session = createSession(options.client, options.prepare === undefined ? { schema } : { prepare: options.prepare, schema });
  const tokenOnly = tokenOnlySql(table);
  const fenced = leaseTable === null ? null : fencedGateSql(table, leaseTable);
  const fail = (error: unknown, operation: string) =>
    ownStatementFailure(session.classifyFailure(error, 'before-commit', operation), operation);

  /** Runs the gate statement on the transaction: the fence's refusal, or the gate row after the upsert. */
  const check = async (
    tx: PostgresQueryable,
    resource: string,
    lease: Fence | { key: string; token: bigint },
  ): Promise<FenceRefusal | { row: GateRow }> => {
    if (fenced === null)
      return { row: (await session.run(tx, tokenOnly, [resource, lease.key, lease.token.toString()])).rows[0] as GateRow };
    if (!isFence(lease))
      throw new InvalidArgumentError(
        'this gate checks the full fence: pass lease.fence() (or create the gate with leaseTable: null for token-only checks)',
      );
    const row = (await session.run(tx, fenced, [...fenceParams(lease), resource])).rows[0] as
      | ({ r: unknown } & NonNullable<GateRow>)
      | undefined;
    if (row === undefined) throw new Error('leasefence/postgres: gate statement returned no row');
    const { now, applied, record } = decodePreImage(row.r, lease.secret);
    const verdict = checkFence(record, lease, now);
    if (verdict.ok !== applied)
      throw new Error(`leasefence/postgres: gate write disagrees with the core (core ok=${verdict.ok}, SQL fence=${applied})`);
    return verdict.ok ? { row } : verdict;
  };

  /** Runs one gate statement (inspect or reset) on one resource: the row it answered, or `undefined`. */
  const gateRow = async <Row extends GateRow>(sql: string, params: unknown[], operation: string): Promise<Row> => {
    try {
      return (await session.statement(sql, params, operation))[0] as Row;
    } catch (error) {
      throw ownStatementFailure(error, operation);
    }
  };
  const foundOf = (row: GateRow): GateRecord['found'] =>
    row?.lease_key == null || row.token == null ? null : { key: row.lease_key, token: BigInt(row.token) };

  return {
    async migrate() {
      await session.transaction(async (tx) => {
        try {
          await tx.query(MIGRATION_LOCK_SQL, [`leasefence:${table.quoted}`]);
          await tx.query(postgresGateSchemaSql(table.name));
        } catch (error) {
          throw fail(error, 'gate migrate');
        }
      }, 'gate migrate');
    },
    async write<T>(
      resource: string,
      lease: Fence | { readonly key: string; readonly token: bigint },
      write: (context: PostgresGateContext) => T | Promise<T>,
    ) {
      assertName('resource', resource);
      assertEncodable('resource', resource);
      if (typeof lease !== 'object' || lease === null || typeof lease.key !== 'string' || typeof lease.token !== 'bigint') {
        throw new InvalidArgumentError('a gate write needs the lease fence (lease.fence()) or its key and bigint token');
      }
      assertEncodable('key', lease.key);
      const expected = { key: lease.key, token: lease.token };
      return session.transaction(async (tx, control): Promise<GateOutcome<T> | FenceRefusal> => {
        let checked: FenceRefusal | { row: GateRow };
        try {
          checked = await check(tx, resource, lease);
        } catch (error) {
          throw fail(error, 'gate write');
        }
        if (!('row' in checked)) return control.rollbackWith(checked);
        const { row } = checked;
        if (row === undefined || row.lease_key === null || row.token === null)
          throw new Error('leasefence/postgres: gate upsert returned no row');
        const found = { key: row.lease_key, token: BigInt(row.token) };
        if (found.key !== lease.key) return control.rollbackWith({ ok: false, reason: 'key-mismatch', resource, expected, found });
        if (found.token !== lease.token) return control.rollbackWith({ ok: false, reason: 'stale-token', resource, expected, found });
        const value = await write({ query: tx.query.bind(tx) as PostgresGateContext['query'], token: lease.token });
        return { ok: true, value, token: lease.token };
      }, 'gate write');
    },
    async inspect(resource) {
      assertName('resource', resource);
      assertEncodable('resource', resource);
      return { resource, found: foundOf(await gateRow(inspectSql(table), [resource], 'gate inspect')) };
    },
    async reset(resource, options) {
      assertName('resource', resource);
      assertEncodable('resource', resource);
      const expected = readGateResetOptions(options);
      const row = await gateRow<(GateRow & { deleted?: boolean }) | undefined>(
        resetSql(table),
        [resource, expected?.token.toString() ?? null, expected?.key ?? null],
        'gate reset',
      );
      const outcome = gateResetOutcome(resource, expected, foundOf(row));
      // NOTE: the statement decided; the judgement in JavaScript must agree with it (as a fenced gate write's does).
      const deleted = row?.deleted === true;
      if (deleted !== (outcome.ok && outcome.found !== null))
        throw new Error(
          `leasefence/postgres: gate reset ${deleted ? 'deleted' : 'kept'} a row the expectation ${outcome.ok ? 'matches' : 'refuses'}; this is a bug`,
        );
      return outcome;
    },
  };
}
