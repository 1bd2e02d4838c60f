/**
 * The Postgres store's `list`: keyset paging on the lease table's primary-key index, one statement per
 * page. The page's rows come back in the pre-image format of `rows.ts` (decoded by `decodePreImage`), with
 * the secret column replaced by an empty text: a listing never reads it.
 */
import type { StoreListPage, StoreListQuery } from '../../list.js';
import * as transitions from '../../fence/transitions.js';
import type { StoreInspection } from '../../fence/operations.js';
import type { TableName } from './identifier.js';
import { decodePreImage, NOW, preImageColumnNames, preImageJson } from './rows.js';
import type { Session } from './session.js';

/** Collations whose order is the code-point order, in which the keys that share a prefix are contiguous. */
const CODE_POINT_ORDER = `c.collname IN ('C', 'POSIX', 'ucs_basic') OR (c.collname = 'default' AND d.datcollate IN ('C', 'POSIX', 'C.UTF-8', 'C.utf8'))`;

/**
 * One page: $1 the cursor (the last key examined, `''` from the start), $2 the prefix, $3 the limit.
 *
 * ATOMICITY: one statement, one snapshot: every row is the committed row at that snapshot, judged at one
 * now. It takes no lock. It returns at most $3 rows (skipping placeholders of waiter interest, token 0:
 * freed-interest.ts): an index range scan from the greater of the cursor
 * and the prefix, in the key index's order (so keyset paging stays correct while rows change: keys are
 * never deleted and never change). Each row also says whether the key column collates in code-point
 * order, where the keys that start with the prefix are contiguous and the first one past them ends the
 * listing; in another collation they may interleave with others, and the listing runs to the table's end.
 */
export function listStatement(table: TableName): string {
  const columns = preImageColumnNames('record').map((name) =>
    // NOTE: whatever the secret column is called (a hash, or the secret itself), a listing never reads it.
    /secret/.test(name) ? `''::text AS ${name}` : `l.${name}`,
  );
  return `WITH clock AS (SELECT ${NOW} AS now),
ordered AS (
  SELECT coalesce(bool_or(${CODE_POINT_ORDER}), false) AS contiguous
  FROM pg_attribute AS a JOIN pg_collation AS c ON c.oid = a.attcollation CROSS JOIN pg_database AS d
  WHERE a.attrelid = '${table.quoted}'::regclass AND a.attname = 'key' AND d.datname = current_database()
),
pre AS (
  SELECT ${columns.join(', ')} FROM ${table.quoted} AS l
  WHERE l.key > $1::text AND l.key >= $2::text AND l.token OPERATOR(pg_catalog.<>) 0::bigint
  ORDER BY l.key
  LIMIT $3::int
)
SELECT ${preImageJson('record', 'pre.', 'clock.now', 'false', null)} AS r, ordered.contiguous AS contiguous
FROM pre CROSS JOIN clock CROSS JOIN ordered
ORDER BY pre.key`;
}

/** Builds `list` for a lease table (`text`: its `listStatement`). */
export function createPostgresList(session: Session, text: string): (query: StoreListQuery) => Promise<StoreListPage> {
  return async ({ prefix, limit, cursor }) => {
    const rows = (await session.statement(text, [cursor ?? '', prefix, limit], 'list')) as Array<{ r: unknown; contiguous: unknown }>;
    const leases: StoreInspection[] = [];
    let last: string | null = null;
    let pastPrefix = false;
    for (const row of rows) {
      const { now, record } = decodePreImage(row.r);
      if (record === null) continue;
      last = record.key;
      if (record.key.startsWith(prefix)) leases.push(transitions.inspect(record, record.key, now));
      else if (row.contiguous === true) pastPrefix = true;
    }
    return { leases, cursor: rows.length < limit || pastPrefix ? null : last };
  };
}
