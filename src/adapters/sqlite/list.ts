/**
 * The SQLite store's `list`: keyset paging on the lease table's primary key. The key column has SQLite's
 * BINARY collation (UTF-8 byte order, which is code-point order), in which the keys that start with a
 * prefix are contiguous: a page reads at most `limit` rows from the later of the cursor and the prefix,
 * and the first key past the prefix ends the listing. A page reads the checkpoint's size, never its JSON.
 */
import { transitions, type ListedInspection, type StoreListPage, type StoreListQuery } from '../../store-entry.js';
import type { SqliteClient } from './client.js';
import type { TableName } from './identifier.js';
import { RECORD_COLUMNS_SQL, recordOf } from './rows.js';
import { statementFor } from './statement-cache.js';
import { immediate } from './transaction.js';

/**
 * One page; parameters in order: the cursor (the last key examined, `''` from the start), the prefix, the limit.
 * ATOMICITY: one SELECT, run in a `BEGIN IMMEDIATE` transaction that writes nothing (see `createSqliteList`).
 */
export function listPageSql(table: TableName): string {
  // NOTE: the JSON's size instead of the JSON (an empty text stands in for it, so `recordOf` reads the row as usual).
  const columns = RECORD_COLUMNS_SQL.replace(
    /\bcheckpoint_json\b/,
    `CASE WHEN checkpoint_json IS NULL THEN NULL ELSE '' END AS checkpoint_json, length(CAST(checkpoint_json AS BLOB)) AS checkpoint_bytes`,
  );
  return `SELECT ${columns}
FROM ${table.quoted} WHERE key > ? AND key >= ? ORDER BY key LIMIT ?`;
}

/** Builds `list` over a lease table; `now` is the store's clock, read once per page. */
export function createSqliteList(
  client: SqliteClient,
  table: TableName,
  now: () => number,
): (query: StoreListQuery) => Promise<StoreListPage> {
  const text = listPageSql(table);
  return async ({ prefix, limit, cursor }) => {
    // NOTE: under the write lock, like every operation: no writer can change a row between the clock
    // reading and the SELECT, so each lease is listed as it stood at `at`.
    const { rows, at } = immediate(client, 'list', () => ({
      outcome: { at: now(), rows: statementFor(client, text).all(cursor ?? '', prefix, limit) },
      commit: false,
    }));
    const leases: ListedInspection[] = [];
    let last: string | null = null;
    for (const row of rows) {
      const { key } = row as { key: string };
      // NOTE: in key order the prefix's keys are contiguous: the first key past them ends the listing.
      if (!key.startsWith(prefix)) return { leases, cursor: null };
      last = key;
      // NOTE: an item with no record (items.ts) is examined (the cursor moves past it) but not listed.
      const record = recordOf(row);
      if (record === null) continue;
      const inspection = transitions.inspect(record, record.key, at);
      const { checkpoint } = inspection;
      const bytes = Number((row as { checkpoint_bytes?: unknown }).checkpoint_bytes ?? 0);
      leases.push({
        ...inspection,
        checkpoint: checkpoint === null ? null : { token: checkpoint.token, writtenAt: checkpoint.writtenAt, bytes },
      });
    }
    return { leases, cursor: rows.length < limit ? null : last };
  };
}
