/**
 * The Postgres store's `list`: keyset paging on the lease table's primary-key index, one statement per
 * page. The page's rows come back in the pre-image format of `rows.ts` (decoded by `decodePreImage`), with
 * the secret column replaced by an empty text (a listing never reads it) and the checkpoint's JSON by its
 * size (a listing never sends it: 25 checkpoints of 4 MiB would be 100 MiB for one page).
 */
import type { ListedInspection, StoreListPage, StoreListQuery } from '../../list.js';
import * as transitions from '../../fence/transitions.js';
import type { TableName } from './identifier.js';
import { decodePreImage, NOW, preImageColumnNames, preImageJson } from './rows.js';
import type { Session } from './session.js';

/** Collations whose order is the code-point order, in which the keys that share a prefix are contiguous. */
const CODE_POINT_ORDER = `c.collname IN ('C', 'POSIX', 'ucs_basic') OR (c.collname = 'default' AND d.datcollate IN ('C', 'POSIX', 'C.UTF-8', 'C.utf8'))`;

/**
 * One page: $1 the cursor (the last key examined, `''` from the start), $2 the prefix, $3 the limit.
 *
 * ATOMICITY: one statement, one snapshot: every row is the committed row at that snapshot, judged at one
 * now. It takes no lock. It returns at most $3 rows (skipping placeholders of waiter interest, state NULL:
 * freed-interest.ts): an index range scan from the greater of the cursor
 * and the prefix, in the key index's order (so keyset paging stays correct while rows change: keys never
 * change, and a row `remove` deletes is simply not listed). Each row also says whether the key column collates in code-point
 * order, where the keys that start with the prefix are contiguous and the first one past them ends the
 * listing; in another collation they may interleave with others, and the listing runs to the table's end.
 */
export function listStatement(table: TableName): string {
  const columns = preImageColumnNames('record').map((name) =>
    // NOTE: whatever the secret column is called (a hash, or the secret itself), a listing never reads it;
    // nor the checkpoint's JSON: only its size (an empty text stands in for it in the pre-image).
    /secret/.test(name) ? `''::text AS ${name}` : name === 'checkpoint_json' ? `''::text AS ${name}` : `l.${name}`,
  );
  columns.push('pg_catalog.octet_length(l.checkpoint_json) AS checkpoint_bytes');
  return `WITH clock AS (SELECT ${NOW} AS now),
ordered AS (
  SELECT coalesce(bool_or(${CODE_POINT_ORDER}), false) AS contiguous
  FROM pg_attribute AS a JOIN pg_collation AS c ON c.oid = a.attcollation CROSS JOIN pg_database AS d
  WHERE a.attrelid = '${table.quoted}'::regclass AND a.attname = 'key' AND d.datname = current_database()
),
pre AS (
  SELECT ${columns.join(', ')} FROM ${table.quoted} AS l
  WHERE l.key > $1::text AND l.key >= $2::text AND l.state IS NOT NULL
  ORDER BY l.key
  LIMIT $3::int
)
SELECT ${preImageJson('record', 'pre.', 'clock.now', 'false', null)} AS r, pre.checkpoint_bytes::text AS checkpoint_bytes, ordered.contiguous AS contiguous
FROM pre CROSS JOIN clock CROSS JOIN ordered
ORDER BY pre.key`;
}

/** Builds `list` for a lease table (`text`: its `listStatement`). */
export function createPostgresList(session: Session, text: string): (query: StoreListQuery) => Promise<StoreListPage> {
  return async ({ prefix, limit, cursor }) => {
    const rows = (await session.statement(text, [cursor ?? '', prefix, limit], 'list')) as Array<{
      r: unknown;
      checkpoint_bytes: unknown;
      contiguous: unknown;
    }>;
    const leases: ListedInspection[] = [];
    let last: string | null = null;
    let pastPrefix = false;
    for (const row of rows) {
      const { now, record } = decodePreImage(row.r);
      if (record === null) continue;
      last = record.key;
      if (record.key.startsWith(prefix)) {
        const inspection = transitions.inspect(record, record.key, now);
        const { checkpoint } = inspection;
        const bytes = Number(row.checkpoint_bytes ?? 0);
        leases.push({
          ...inspection,
          checkpoint: checkpoint === null ? null : { token: checkpoint.token, writtenAt: checkpoint.writtenAt, bytes },
        });
      } else if (row.contiguous === true) pastPrefix = true;
    }
    return { leases, cursor: rows.length < limit || pastPrefix ? null : last };
  };
}
