/**
 * Token gates in SQLite, Kleppmann's storage-side check: a resource remembers the lease key and the highest
 * token that wrote it, and a write carrying an older token (or another key's token) is refused. The gate
 * check, the record of the new highest token and the callback's statements commit in one `BEGIN IMMEDIATE`
 * transaction. Made with `{ store }`, the gate shares the lease store's connection and also checks the
 * full fence (token, secret, holder, run, live grant at the store's clock) in that transaction.
 */
import {
  assertName,
  checkFence,
  gateResetOutcome,
  InvalidArgumentError,
  readGateResetOptions,
  type Fence,
  type FenceRefusal,
  type GateOutcome,
  type GateRecord,
  type GateResetOptions,
  type GateResetOutcome,
} from '../../store-entry.js';
import type { SqliteClient, SqliteValue } from './client.js';
import { classifyFailure, runCallback } from './failures.js';
import { tableName, type TableName } from './identifier.js';
import { runMigration } from './migration.js';
import { DEFAULT_GATE_TABLE, gateTableSql, WAL_PRAGMA } from './schema.js';
import { hashedFence } from './secret-hash.js';
import { statementFor } from './statement-cache.js';
import { assertClient, fenceJudgeOf, type SqliteFenceJudge, type SqliteStore } from './sqlite-store.js';
import { refuseAsyncCallback, refuseThenable, transactionStatements, type SqliteTransactionStatements } from './synchronous-callback.js';
import { immediate } from './transaction.js';

/** What a SQLite gate write's callback receives: statements inside the gate's transaction. */
export interface SqliteGateContext extends SqliteTransactionStatements {
  /** The token the write carries, now recorded as the resource's highest. */
  readonly token: bigint;
}

/** A SQLite token gate. */
export interface SqliteTokenGate {
  /** The gate table as configured. */
  readonly table: string;
  /**
   * Runs `write` (synchronously, inside the gate's transaction) only if `lease`'s token is at least the
   * highest that wrote `resource` for its key (and, for a gate made with `{ store }`, the fence holds), and
   * records it as the new highest, atomically. A refused write runs nothing.
   */
  write<T>(resource: string, lease: Fence, write: (context: SqliteGateContext) => T | Promise<T>): Promise<GateOutcome<T> | FenceRefusal>;
  /** What the gate remembers of `resource`. For operators. */
  inspect(resource: string): Promise<GateRecord>;
  /**
   * Forgets `resource` (answers what it forgot), so the next write by any key's grant binds it again: to
   * re-key a resource or clear a forged token. Unsafe while an older grant may still write. With
   * `expectedToken` (and `expectedKey`), only if the gate still records them, judged in the delete's
   * `BEGIN IMMEDIATE` transaction; otherwise `superseded` with what it records, unchanged.
   */
  reset(resource: string, options?: GateResetOptions): Promise<GateResetOutcome>;
  /** Creates the gate table if missing (and switches the file to WAL mode). */
  migrate(): Promise<void>;
}

/** Options of `createSqliteTokenGate`: the lease store to share (full fence), or a bare connection (tokens only). */
export type SqliteTokenGateOptions =
  | {
      /** A store from `createSqliteStore`: the gate uses its connection and clock and checks the full fence. */
      readonly store: SqliteStore;
      /**
       * The gate table, in the store's database.
       * @default 'leasefence_gates'
       */
      readonly table?: string;
    }
  | {
      /**
       * A connection to a database without the lease table: the gate orders writers by token only, and
       * cannot tell a real grant from a forged handle.
       */
      readonly client: SqliteClient;
      /**
       * The gate table.
       * @default 'leasefence_gates'
       */
      readonly table?: string;
    };

/** ATOMICITY: a single read inside the gate's `BEGIN IMMEDIATE` (inspect: a single autocommit read). */
const selectGateSql = (table: TableName): string =>
  `SELECT lease_key, CAST(token AS TEXT) AS token FROM ${table.quoted} WHERE resource = ?`;
/** ATOMICITY: one statement, inside the gate's `BEGIN IMMEDIATE`, after the read it was decided on. */
const upsertGateSql = (table: TableName): string =>
  `INSERT INTO ${table.quoted} (resource, lease_key, token) VALUES (?, ?, ?) ON CONFLICT (resource) DO UPDATE SET lease_key = excluded.lease_key, token = excluded.token`;
/** ATOMICITY: one statement, inside reset's `BEGIN IMMEDIATE`, after the read it was judged on. */
const deleteGateSql = (table: TableName): string => `DELETE FROM ${table.quoted} WHERE resource = ?`;

function foundOf(row: unknown): GateRecord['found'] {
  if (row === undefined || row === null) return null;
  const { lease_key: key, token } = row as { lease_key: string; token: string };
  return { key, token: BigInt(token) };
}

/** Validates the handle a gate write carries before any I/O. */
function assertGateLease(lease: unknown): asserts lease is Fence {
  const candidate = lease as Partial<Fence> | null | undefined;
  if (typeof candidate !== 'object' || candidate === null)
    throw new InvalidArgumentError('a gate write needs the lease fence (lease.fence())');
  assertName('key', candidate.key);
  if (typeof candidate.token !== 'bigint' || candidate.token <= 0n)
    throw new InvalidArgumentError(`token must be a positive bigint, got ${String(candidate.token)}`);
}

/**
 * Creates a token gate whose records live in a table of your SQLite database, so that the gate check and
 * your writes to that database commit together.
 *
 * ```ts
 * const gate = createSqliteTokenGate({ store });
 * await gate.migrate();
 * await gate.write('report:2024-06', lease.fence(), (tx) => tx.run('UPDATE reports SET body = ? WHERE id = ?', body, id));
 * ```
 */
export function createSqliteTokenGate(options: SqliteTokenGateOptions): SqliteTokenGate {
  if (typeof options !== 'object' || options === null)
    throw new InvalidArgumentError('createSqliteTokenGate needs options with a store or a client');
  let given: { readonly hasStore: boolean; readonly store: unknown; readonly client: unknown; readonly table: unknown };
  try {
    given = {
      hasStore: 'store' in options,
      store: (options as { store?: unknown }).store,
      client: (options as { client?: unknown }).client,
      table: options.table,
    };
  } catch {
    // NOTE: read once, here: a getter or Proxy that throws gets the typed refusal, not its own error.
    throw new InvalidArgumentError('createSqliteTokenGate options could not be read (a getter or Proxy threw)');
  }
  let judge: SqliteFenceJudge | null = null;
  let client: SqliteClient;
  if (given.hasStore) {
    judge = fenceJudgeOf(given.store as SqliteStore) ?? null;
    if (judge === null) throw new InvalidArgumentError('store must be a store made by createSqliteStore');
    client = judge.client;
  } else {
    assertClient(given.client);
    client = given.client;
  }
  const table = tableName((given.table as string | undefined) ?? DEFAULT_GATE_TABLE, 'gate table');
  const select = selectGateSql(table);
  const upsert = upsertGateSql(table);
  const remove = deleteGateSql(table);
  const get = (sql: string, ...params: SqliteValue[]): unknown => statementFor(client, sql).get(...params);

  return {
    table: table.name,
    async migrate() {
      await runMigration(client, [WAL_PRAGMA, gateTableSql(table)], 'gate migrate');
    },
    async write<T>(
      resource: string,
      lease: Fence,
      write: (context: SqliteGateContext) => T | Promise<T>,
    ): Promise<GateOutcome<T> | FenceRefusal> {
      assertName('resource', resource);
      assertGateLease(lease);
      if (judge !== null && typeof lease.secret !== 'string')
        throw new InvalidArgumentError('a gate sharing the lease store checks the full fence: pass lease.fence(), with its secret');
      refuseAsyncCallback(write, 'gate write');
      const expected = { key: lease.key, token: lease.token };
      return immediate<GateOutcome<T> | FenceRefusal>(client, 'gate write', () => {
        if (judge !== null) {
          const verdict = checkFence(judge.read(lease.key), hashedFence(lease), judge.now());
          if (!verdict.ok) return { outcome: verdict, commit: false };
        }
        const found = foundOf(get(select, resource));
        if (found !== null && found.key !== lease.key)
          return { outcome: { ok: false, reason: 'key-mismatch', resource, expected, found }, commit: false };
        if (found !== null && lease.token < found.token)
          return { outcome: { ok: false, reason: 'stale-token', resource, expected, found }, commit: false };
        statementFor(client, upsert).run(resource, lease.key, lease.token);
        const { statements, close } = transactionStatements(client, 'gate write');
        let value: T | Promise<T>;
        try {
          value = runCallback(() => write({ ...statements, token: lease.token }));
        } finally {
          close();
        }
        refuseThenable(value, 'gate write');
        return { outcome: { ok: true, value: value as T, token: lease.token }, commit: true };
      });
    },
    async inspect(resource) {
      assertName('resource', resource);
      try {
        return { resource, found: foundOf(get(select, resource)) };
      } catch (error) {
        throw classifyFailure(error, 'before-commit', 'gate inspect');
      }
    },
    async reset(resource, options) {
      assertName('resource', resource);
      const expected = readGateResetOptions(options);
      return immediate(client, 'gate reset', () => {
        const outcome = gateResetOutcome(resource, expected, foundOf(get(select, resource)));
        const forget = outcome.ok && outcome.found !== null;
        if (forget) statementFor(client, remove).run(resource);
        return { outcome, commit: forget };
      });
    },
  };
}
