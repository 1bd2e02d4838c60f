/**
 * `remove` as one plpgsql function (one statement, one round trip), mirroring `transitions.remove`: an
 * operator deletes a key's record (its row and its submissions), refused while a live grant holds it unless
 * forced, or when the key's token is not the expected one.
 *
 * ATOMICITY: the function locks the row (`FOR UPDATE`: it deletes it) and reads now after the lock. In the
 * same transaction it raises the removed-token floor (token-floor.ts) to the row's token, so the key's next
 * first grant mints above every token it had, and deletes the key's submissions in a statement of its own:
 * a fresh snapshot (the function is VOLATILE, at READ COMMITTED) that sees every submission committed by a
 * fenced write that held the row before this lock (a statement's own snapshot, taken before the lock wait,
 * would miss one and leave it to a record created later). A row that is a placeholder (waiter interest,
 * state NULL) is no record: `missing`, and kept.
 */
import { freedChannelOf } from './freed-channel.js';
import type { TableName } from './identifier.js';
import { NOW, preImageJson } from './rows.js';
import { SUBMISSIONS_SUFFIX } from './submissions.js';
import { raiseFloorSql } from './token-floor.js';

/** Every column of a record, cleared (a placeholder row: no record; `waited_until` is waiter interest, kept). */
const CLEARED_COLUMNS = [
  'holder',
  'run_id',
  'secret_hash',
  'acquired_at',
  'expires_at',
  'attributes',
  'ending_kind',
  'ending_token',
  'ending_holder',
  'ending_run_id',
  'ending_at',
  'ending_reason',
  'ending_by',
  'ending_change',
  'checkpoint_json',
  'checkpoint_token',
  'checkpoint_written_at',
  'state',
  'held_until',
  'waiters',
]
  .map((column) => `${column} = NULL`)
  .join(', ')
  .concat(', recovery_required = false');

/** The function's name in the table's schema. */
export const REMOVE_SUFFIX = 'remove';

/**
 * The function's DDL. Arguments: the key, force, the expected token (NULL: any), and whether to notify the
 * table's channel (waiters, and a forced-out holder's `withLease`) when it removed the record.
 */
export function removeFunctionDdl(table: TableName, schemaPrefix: string): string {
  const t = `${schemaPrefix}"${table.bare}"`;
  return `CREATE OR REPLACE FUNCTION ${schemaPrefix}"${table.bare}_${REMOVE_SUFFIX}"(
  p_key text, p_force boolean, p_expected numeric, p_notify boolean)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $leasefence$
DECLARE
  pre ${t};
  found_row boolean;
  now_at timestamptz;
  applied boolean := false;
BEGIN
  SELECT * INTO pre FROM ${t} AS l WHERE l.key = p_key FOR UPDATE;
  found_row := FOUND;
  now_at := ${NOW};
  IF found_row AND pre.state IS NOT NULL
    AND (p_expected IS NULL OR pre.token::numeric = p_expected)
    AND (p_force OR pre.holder IS NULL OR (pre.expires_at IS NOT NULL AND now_at >= pre.expires_at)) THEN
    IF pre.item_set IS NULL THEN
      DELETE FROM ${t} AS l WHERE l.key = p_key;
    ELSE
      -- NOTE: an item stays an item of its set (claim-next): its row becomes a token-0 placeholder (no record),
      -- available since its due time; its next grant mints above the removed-token floor raised below.
      UPDATE ${t} AS l SET token = 0, ${CLEARED_COLUMNS}, available_at = l.item_due_at, item_secret = NULL
      WHERE l.key = p_key;
    END IF;
    ${raiseFloorSql(`${schemaPrefix}"${table.bare}_token_floor"`, 'pre.token')};
    DELETE FROM ${schemaPrefix}"${table.bare}_${SUBMISSIONS_SUFFIX}" AS s WHERE s.key = p_key;
    IF p_notify THEN
      PERFORM pg_notify('${freedChannelOf(table)}', p_key);
    END IF;
    applied := true;
  END IF;
  RETURN ${preImageJson('grant', 'pre.', 'now_at', 'applied', null)};
END
$leasefence$`;
}

/** The function's call: $1 key, $2 force, $3 expected token (decimal text or NULL); notifying or not. */
export function removeCall(table: TableName, notify: boolean): string {
  return `SELECT ${table.derive(REMOVE_SUFFIX)}($1::text, $2::boolean, $3::numeric, ${notify}) AS r`;
}
