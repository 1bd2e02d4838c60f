/**
 * A token-gated upsert into a table you own: each row records the lease key and token that last wrote it
 * (two columns you add, `fence_key text` and `fence_token bigint` by default), and a write carrying an older
 * token, or another key's token, is refused atomically in the same statement. By default the writer's full
 * fence is also checked against the lease table in the same statement.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { GateOutcome } from '../../fence/operations.js';
import type { Fence, FenceRefusal } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import type { PostgresQueryable } from './client.js';
import { assertEncodable } from './encodable.js';
import { classifyFailure, ownStatementFailure } from './failures.js';
import { columnName, tableName, type TableName } from './identifier.js';
import { decodePreImage, preImageJson } from './rows.js';
import { DEFAULT_LEASE_TABLE } from './schema.js';
import { fenceHolds, fenceParams, LOCKED_NOW, lockedRow, PRE_IMAGE_WIDTH } from './statements.js';

/** One gated upsert. Column names are validated and quoted; values travel as bind parameters. */
export interface GatedUpsert {
  /** Your table, optionally schema-qualified. */
  readonly table: string;
  /** The row's identity: the columns of a primary key or unique constraint, and their values. */
  readonly identity: Readonly<Record<string, unknown>>;
  /** The columns to write and their values. */
  readonly values: Readonly<Record<string, unknown>>;
  /**
   * The writer's lease: a `Lease` handle or its fence (`lease.fence()`); with `leaseTable: null`, its key
   * and token are enough.
   */
  readonly lease: { readonly key: string; readonly token: bigint; fence?(): Fence } | Fence;
  /**
   * The lease table, in the same database: the writer's full fence (token, secret hash, holder, run, live
   * grant at `clock_timestamp()`) is checked in the same statement, and a fence that does not hold is
   * refused with the core's `FenceRefusal` (nothing written). `null`: tokens only (a handle restored with a
   * forged token higher than any real one would then pass and lock real holders out of the row).
   * @default 'leasefence_leases'
   */
  readonly leaseTable?: string | null;
  /** @default 'fence_key' */
  readonly keyColumn?: string;
  /** @default 'fence_token' */
  readonly tokenColumn?: string;
}

/** Written (inserted or updated), refused with the key and token that wrote the row before, or fenced. */
export type GatedUpsertOutcome = GateOutcome<{ readonly inserted: boolean }> | FenceRefusal;

/** The fence of `lease` when it carries one (a `Lease` handle or a `Fence`), else `null`. */
function fenceOf(lease: GatedUpsert['lease']): Fence | null {
  if (typeof (lease as { fence?: unknown }).fence === 'function') return (lease as { fence(): Fence }).fence();
  const candidate = lease as Partial<Fence>;
  return typeof candidate.secret === 'string' && typeof candidate.holder === 'string' ? (lease as Fence) : null;
}

/**
 * The CTEs that check the writer's fence against the lease table (`lf_fence` has one row iff it holds),
 * with the fence parameters after `offset`; `lf_lease` is the lease row's pre-image for the decision.
 */
function fenceCtes(leaseTable: TableName, offset: number): { ctes: string; preImage: string } {
  const param = (index: number) => `$${offset + index}`;
  return {
    // NOTE: now is read in `lf_pre` after the lock (`lockedRow`), or in the pre-image when there is no row.
    ctes: `lf_pre AS MATERIALIZED (
  ${lockedRow(leaseTable, PRE_IMAGE_WIDTH.lockShared, 'SHARE', param(1))}
),
lf_fence AS MATERIALIZED (
  SELECT 1 AS holds FROM lf_pre AS pre WHERE ${fenceHolds(param, 'pre.now')}
),`,
    preImage: `(SELECT ${preImageJson(PRE_IMAGE_WIDTH.lockShared, 'pre.', LOCKED_NOW, 'EXISTS (SELECT 1 FROM lf_fence)', `${param(3)}::text`)}
    FROM (SELECT) AS lf_none LEFT JOIN lf_pre AS pre ON true)`,
  };
}

function columnsOf(what: string, record: Readonly<Record<string, unknown>>): [string, unknown][] {
  if (typeof record !== 'object' || record === null)
    throw new InvalidArgumentError(`gatedUpsert ${what} must be an object of column values`);
  return Object.entries(record).map(([name, value]) => [columnName(name, `gatedUpsert ${what} column`), value]);
}

/**
 * Upserts one row of your table if the lease's token is at least the one recorded on the row (and the row
 * was written under the same lease key, or never under any), and records the lease's key and token on it.
 * One statement, one round trip.
 *
 * ATOMICITY: `pre` locks the existing row (FOR UPDATE) to report what a refusal found; the upsert's
 * `ON CONFLICT ... DO UPDATE ... WHERE` judges the conflicting row's newest version, which is the one `pre`
 * locked. A refused write changes nothing (no row version, no trigger).
 *
 * ```ts
 * // ALTER TABLE reports ADD COLUMN fence_key text, ADD COLUMN fence_token bigint;
 * const outcome = await gatedUpsert(pool, { table: 'reports', identity: { id: 42 }, values: { body }, lease });
 * if (!outcome.ok) console.warn(`stale writer: row was written by token ${outcome.found.token}`);
 * ```
 */
export async function gatedUpsert(client: PostgresQueryable, upsert: GatedUpsert): Promise<GatedUpsertOutcome> {
  const table = tableName(upsert.table);
  const identity = columnsOf('identity', upsert.identity);
  const values = columnsOf('values', upsert.values);
  if (identity.length === 0) throw new InvalidArgumentError('gatedUpsert needs at least one identity column');
  const keyColumn = columnName(upsert.keyColumn ?? 'fence_key', 'gatedUpsert keyColumn');
  const tokenColumn = columnName(upsert.tokenColumn ?? 'fence_token', 'gatedUpsert tokenColumn');
  if (typeof upsert.lease !== 'object' || upsert.lease === null) throw new InvalidArgumentError('gatedUpsert needs a lease');
  const { key, token } = upsert.lease;
  if (typeof key !== 'string' || typeof token !== 'bigint')
    throw new InvalidArgumentError('gatedUpsert needs a lease with a key and a bigint token');
  assertEncodable('key', key);
  const leaseTable = upsert.leaseTable === null ? null : tableName(upsert.leaseTable ?? DEFAULT_LEASE_TABLE, 'lease table');
  const fence = leaseTable === null ? null : fenceOf(upsert.lease);
  if (leaseTable !== null && fence === null) {
    throw new InvalidArgumentError(
      'gatedUpsert checks the full fence: pass the Lease (or lease.fence()), or leaseTable: null for a token-only check',
    );
  }

  const userParams = [...identity.map(([, value]) => value), ...values.map(([, value]) => value), key, token.toString()];
  const params = fence === null ? userParams : [...userParams, ...fenceParams(fence)];
  const fenced = leaseTable === null ? null : fenceCtes(leaseTable, userParams.length);
  const p = (index: number) => `$${index + 1}`;
  const keyParam = p(identity.length + values.length);
  const tokenParam = p(identity.length + values.length + 1);
  const where = identity.map(([column], index) => `t.${column} = ${p(index)}`).join(' AND ');
  const insertColumns = [...identity, ...values].map(([column]) => column);
  const set = [...values.map(([column]) => column), keyColumn, tokenColumn].map((column) => `${column} = EXCLUDED.${column}`).join(', ');
  const insertValues = [...insertColumns.map((_, index) => p(index)), `${keyParam}::text`, `${tokenParam}::bigint`].join(', ');
  const sql = `WITH ${fenced === null ? '' : fenced.ctes}
pre AS MATERIALIZED (
  SELECT t.${keyColumn} AS lease_key, t.${tokenColumn}::text AS token FROM ${table.quoted} AS t WHERE ${where} FOR UPDATE
),
upserted AS (
  INSERT INTO ${table.quoted} AS t (${[...insertColumns, keyColumn, tokenColumn].join(', ')})
  ${fenced === null ? `VALUES (${insertValues})` : `SELECT ${insertValues} FROM lf_fence`}
  ON CONFLICT (${identity.map(([column]) => column).join(', ')}) DO UPDATE SET ${set}
  WHERE (t.${keyColumn} IS NULL OR t.${keyColumn} = EXCLUDED.${keyColumn})
    AND (t.${tokenColumn} IS NULL OR t.${tokenColumn} <= EXCLUDED.${tokenColumn})
  RETURNING 1
)
SELECT (SELECT pg_catalog.count(*) FROM upserted)::int AS written, (SELECT pg_catalog.count(*) FROM pre)::int AS existed, pre.lease_key, pre.token${
    fenced === null
      ? ''
      : `,
  ${fenced.preImage} AS r`
  }
FROM (SELECT 1) AS one LEFT JOIN pre ON true`;

  let row: { written: number; existed: number; lease_key: string | null; token: string | null; r?: unknown };
  try {
    row = (await client.query(sql, params)).rows[0] as typeof row;
  } catch (error) {
    throw ownStatementFailure(classifyFailure(error, 'statement', 'gatedUpsert'), 'gatedUpsert');
  }
  if (fence !== null) {
    const { now, applied, record } = decodePreImage(row.r, fence.secret);
    const verdict = checkFence(record, fence, now);
    if (verdict.ok !== applied)
      throw new Error(`leasefence/postgres: gatedUpsert disagrees with the core (core ok=${verdict.ok}, SQL fence=${applied})`);
    if (!verdict.ok) return verdict;
  }
  const resource = `${table.name}(${identity.map(([column], index) => `${column.slice(1, -1)}=${String(params[index])}`).join(', ')})`;
  const expected = { key, token };
  if (Number(row.written) === 1) return { ok: true, value: { inserted: Number(row.existed) === 0 }, token };
  let found = row.lease_key === null && row.token === null ? null : { key: row.lease_key, token: row.token };
  if (Number(row.existed) === 0) {
    // NOTE: the row appeared after this statement's snapshot (a concurrent first write): the refusal was
    // decided atomically by the upsert; this read only describes what refused it.
    const read = await client.query(
      `SELECT t.${keyColumn} AS lease_key, t.${tokenColumn}::text AS token FROM ${table.quoted} AS t WHERE ${where}`,
      params.slice(0, identity.length),
    );
    found = (read.rows[0] as typeof found) ?? null;
  }
  const foundKey = found?.key ?? key;
  const foundToken = found?.token === null || found?.token === undefined ? 0n : BigInt(found.token);
  return {
    ok: false,
    reason: foundKey !== key ? 'key-mismatch' : 'stale-token',
    resource,
    expected,
    found: { key: foundKey, token: foundToken },
  };
}
