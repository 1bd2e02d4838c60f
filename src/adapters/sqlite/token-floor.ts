/**
 * The store-wide token floor that outlives removed records (`<table>_floor`, schema.ts): the highest token of
 * any record `remove` deleted. A claim of a key whose record holds no token above it (no row, or a row that
 * `setKeyState` created with token 0) mints above it, so a key removed and created again never reissues a
 * token, even in the millisecond of the remove (where the clock floor alone would mint the same token again).
 */
import type { SqliteClient } from './client.js';
import type { TableName } from './identifier.js';
import { floorTable } from './schema.js';
import { statementFor } from './statement-cache.js';

/** The statements of one lease table's floor. */
export interface TokenFloorStatements {
  /** The highest token removed so far (`0n`: none). */
  removed(): bigint;
  /** Raises the floor to `token` (a record with this token was removed). */
  raise(token: bigint): void;
}

export function tokenFloorStatements(client: SqliteClient, table: TableName): TokenFloorStatements {
  const { quoted } = floorTable(table);
  // ATOMICITY: both run inside the calling operation's BEGIN IMMEDIATE transaction (claim, remove).
  const selectSql = `SELECT CAST(removed_token AS TEXT) AS token FROM ${quoted} WHERE id = 1`;
  const raiseSql = `INSERT INTO ${quoted} (id, removed_token) VALUES (1, ?)
ON CONFLICT (id) DO UPDATE SET removed_token = max(removed_token, excluded.removed_token)`;
  return {
    removed() {
      const row = statementFor(client, selectSql).get() as { token: string } | undefined;
      return row === undefined ? 0n : BigInt(row.token);
    },
    raise(token) {
      statementFor(client, raiseSql).run(token);
    },
  };
}
