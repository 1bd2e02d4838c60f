/**
 * Token gates in Postgres, Kleppmann's storage-side check: a resource remembers the lease key and the
 * highest token that wrote it, and a write carrying an older token (or another key's token) is refused.
 * - `createPostgresTokenGate`: the `TokenGate` contract over a small gate table; the gate check and your
 *   callback's statements commit in one transaction.
 * - `gatedUpsert` (gated-upsert.ts): one statement on a table you own, whose rows carry the writer's lease
 *   key and token.
 */
import type { GateOutcome } from '../../fence/operations.js';
import type { TokenGate } from '../../gate.js';
import { assertName } from '../../validate.js';
import type { PostgresClient, PostgresQueryable } from './client.js';
import { assertEncodable } from './encodable.js';
import { classifyFailure } from './failures.js';
import { tableName, type TableName } from './identifier.js';
import { MIGRATION_LOCK_SQL } from './schema.js';
import { createSession } from './session.js';

/** The default gate table. */
export const DEFAULT_GATE_TABLE = 'leasefence_gates';

/** What a Postgres gate write's callback receives: a client bound to the gate's transaction. */
export interface PostgresGateContext {
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: Row[] }>;
  /** The token the write carries, now recorded as the resource's highest. */
  readonly token: bigint;
}

/** A Postgres token gate over a gate table. */
export interface PostgresTokenGate extends TokenGate<PostgresGateContext> {
  /** Creates the gate table if missing (idempotent, safe from several processes at once). */
  migrate(): Promise<void>;
}

/** The gate table: one row per resource, the lease key and the highest token that wrote it. */
export function gateTableSql(table: string = DEFAULT_GATE_TABLE): string {
  return `CREATE TABLE IF NOT EXISTS ${tableName(table, 'gate table').quoted} (
  resource text PRIMARY KEY,
  lease_key text NOT NULL,
  token bigint NOT NULL
)`;
}

/**
 * ATOMICITY: one upsert that locks the resource's row (inserting it for a first write) and moves it to
 * (key, token) only if the row has the same key and a token no higher; it returns the row as it is after the
 * statement, so the write passed iff that row is (key, token). Refused rows are rewritten unchanged, which
 * keeps them locked until ROLLBACK, so the refusal reports exactly the version it was judged against.
 */
function gateSql(table: TableName): string {
  const pass = `g.lease_key = EXCLUDED.lease_key AND g.token <= EXCLUDED.token`;
  return `INSERT INTO ${table.quoted} AS g (resource, lease_key, token) VALUES ($1::text, $2::text, $3::bigint)
ON CONFLICT (resource) DO UPDATE SET
  lease_key = CASE WHEN ${pass} THEN EXCLUDED.lease_key ELSE g.lease_key END,
  token = CASE WHEN ${pass} THEN EXCLUDED.token ELSE g.token END
RETURNING lease_key, token::text AS token`;
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
export function createPostgresTokenGate(options: { readonly client: PostgresClient; readonly table?: string }): PostgresTokenGate {
  const table = tableName(options.table ?? DEFAULT_GATE_TABLE, 'gate table');
  const session = createSession(options.client);
  const upsert = gateSql(table);
  return {
    async migrate() {
      await session.transaction(async (tx) => {
        await tx.query(MIGRATION_LOCK_SQL, [`leasefence:${table.quoted}`]);
        await tx.query(gateTableSql(table.name));
      }, 'migrate');
    },
    async write<T>(resource: string, lease: { readonly key: string; readonly token: bigint }, write: (context: PostgresGateContext) => T | Promise<T>): Promise<GateOutcome<T>> {
      assertName('resource', resource);
      assertEncodable('resource', resource);
      assertEncodable('key', lease.key);
      const expected = { key: lease.key, token: lease.token };
      return session.transaction(async (tx: PostgresQueryable, control): Promise<GateOutcome<T>> => {
        let row: { lease_key: string; token: string } | undefined;
        try {
          row = (await session.run(tx, upsert, [resource, lease.key, lease.token.toString()])).rows[0] as typeof row;
        } catch (error) {
          throw classifyFailure(error, 'before-commit', 'gate write');
        }
        if (row === undefined) throw new Error('leasefence/postgres: gate upsert returned no row');
        const found = { key: row.lease_key, token: BigInt(row.token) };
        if (found.key !== lease.key) return control.rollbackWith({ ok: false, reason: 'key-mismatch', resource, expected, found });
        if (found.token !== lease.token) return control.rollbackWith({ ok: false, reason: 'stale-token', resource, expected, found });
        const value = await write({ query: tx.query.bind(tx) as PostgresGateContext['query'], token: lease.token });
        return { ok: true, value, token: lease.token };
      }, 'gate write');
    },
  };
}
