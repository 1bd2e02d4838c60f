/**
 * `setKeyState` as one plpgsql function (one statement, one round trip), mirroring `transitions.setKeyState`:
 * values that belong to the key (and its hold), set by a writer who needs no lease; a changed value ends the
 * grant that holds the key. The adapter decides the outcome with the pure transition on the pre-image the
 * function returns (`rows.ts`, `grant` width) and checks that the function wrote iff the core says it changed.
 *
 * ATOMICITY: the function locks the row (`FOR NO KEY UPDATE`) and reads now after the lock; for a key with
 * no row it inserts the record only when something changes, and when a concurrent first write inserted the
 * row first (`ON CONFLICT DO NOTHING` waits for it), locks that row on its next attempt (a fresh snapshot:
 * the function is VOLATILE, at READ COMMITTED), as the claim function does. A placeholder row (waiter
 * interest, state NULL) is the empty record.
 *
 * The first changed name must be the first in UTF-16 code-unit order (the pure core's order), which no
 * Postgres collation sorts by: the adapter sends the values as a JSON array of `[name, value]` pairs already
 * in that order, and the function walks it in array order.
 */
import type { TableName } from './identifier.js';
import { freedChannelOf } from './freed-channel.js';
import { NOW, preImageJson } from './rows.js';
import { availableAtSet } from './availability.js';

/** The function's name in the table's schema. */
export const SET_KEY_STATE_SUFFIX = 'set_key_state';

/** The columns an ending grant clears. */
const CLEAR_GRANT = `holder = NULL, run_id = NULL, secret_hash = NULL, acquired_at = NULL, expires_at = NULL, attributes = NULL`;

/**
 * The function's DDL. Arguments: the key, the values (`[[name, value or null], ...]` in code-unit order of
 * the names), who sets them, the hold (`keep` | `clear` | `set`, with its ms), and whether to notify the
 * table's channel when a grant ends (the statement is sent again without, when the notification queue is full).
 */
export function setKeyStateFunctionDdl(table: TableName, schemaPrefix: string): string {
  const t = `${schemaPrefix}"${table.bare}"`;
  const preImage = (applied: string) => preImageJson('grant', 'pre.', 'now_at', applied, null);
  return `CREATE OR REPLACE FUNCTION ${schemaPrefix}"${table.bare}_${SET_KEY_STATE_SUFFIX}"(
  p_key text, p_values jsonb, p_by text, p_hold text, p_hold_ms bigint, p_notify boolean)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $leasefence$
DECLARE
  pre ${t};
  found_row boolean;
  now_at timestamptz;
  before jsonb;
  next_state jsonb;
  change jsonb;
  item jsonb;
  next_held timestamptz;
  live boolean;
BEGIN
  -- NOTE: a round fails only when a concurrent first grant inserted the row and a remove deleted it in between
  -- (the claim function's loop: 16 rounds).
  FOR attempt IN 1..16 LOOP
    SELECT * INTO pre FROM ${t} AS l WHERE l.key = p_key FOR NO KEY UPDATE;
    found_row := FOUND;
    now_at := ${NOW};
    before := COALESCE(pre.state, '{}'::jsonb);
    next_state := before;
    change := NULL;
    FOR item IN SELECT e.value FROM jsonb_array_elements(p_values) WITH ORDINALITY AS e(value, ord) ORDER BY e.ord LOOP
      IF (before ->> (item ->> 0)) IS DISTINCT FROM (item ->> 1) THEN
        IF change IS NULL THEN
          change := jsonb_build_object('name', item -> 0, 'from', before -> (item ->> 0), 'to', item -> 1);
        END IF;
        IF (item ->> 1) IS NULL THEN
          next_state := next_state - (item ->> 0);
        ELSE
          next_state := next_state || jsonb_build_object(item ->> 0, item -> 1);
        END IF;
      END IF;
    END LOOP;
    next_held := CASE p_hold
      WHEN 'keep' THEN pre.held_until
      WHEN 'clear' THEN NULL
      ELSE now_at + p_hold_ms::float8 * '1 millisecond'::interval END;
    IF change IS NULL AND next_held IS NOT DISTINCT FROM pre.held_until THEN
      RETURN ${preImage('false')};
    END IF;
    IF found_row THEN
      IF change IS NOT NULL AND pre.holder IS NOT NULL THEN
        -- NOTE: a live grant ends state-changed (by the writer, naming the first changed value); an expired
        -- one is recorded expired at its expiry, as a takeover would record it. The token does not move.
        live := pre.expires_at IS NULL OR now_at < pre.expires_at;
        UPDATE ${t} AS l SET state = next_state, held_until = next_held, ${CLEAR_GRANT},
          ending_kind = CASE WHEN live THEN 'state-changed' ELSE 'expired' END,
          ending_token = pre.token, ending_holder = pre.holder, ending_run_id = pre.run_id,
          ending_at = CASE WHEN live THEN now_at ELSE pre.expires_at END,
          ending_reason = NULL, ending_by = CASE WHEN live THEN p_by END,
          ending_change = CASE WHEN live THEN change END,
          ${availableAtSet({ blocked: 'pre.recovery_required', end: 'CASE WHEN live THEN now_at ELSE pre.expires_at END', held: 'next_held' })}
        WHERE l.key = p_key;
        IF p_notify THEN
          PERFORM pg_notify('${freedChannelOf(table)}', p_key);
        END IF;
      ELSE
        -- NOTE: a placeholder row (no record) keeps no ending: available since its due time and the hold.
        UPDATE ${t} AS l SET state = next_state, held_until = next_held,
          ${availableAtSet({
            blocked: 'pre.recovery_required OR (pre.holder IS NOT NULL AND pre.expires_at IS NULL)',
            end: 'CASE WHEN pre.state IS NULL THEN NULL WHEN pre.holder IS NOT NULL THEN pre.expires_at ELSE pre.ending_at END',
            held: 'next_held',
          })}
        WHERE l.key = p_key;
      END IF;
      RETURN ${preImage('true')};
    END IF;
    INSERT INTO ${t} AS l (key, token, state, held_until) VALUES (p_key, 0, next_state, next_held)
    ON CONFLICT (key) DO NOTHING;
    IF FOUND THEN
      RETURN ${preImage('true')};
    END IF;
  END LOOP;
  RAISE EXCEPTION 'leasefence: could not lock or create the lease row of %', p_key;
END
$leasefence$`;
}

/** The function's call: $1 key, $2 values JSON text, $3 by, $4 hold mode, $5 hold ms; notifying or not. */
export function setKeyStateCall(table: TableName, notify: boolean): string {
  return `SELECT ${table.derive(SET_KEY_STATE_SUFFIX)}($1::text, $2::text::jsonb, $3::text, $4::text, $5::bigint, ${notify}) AS r`;
}

/** The values as the function reads them: `[name, value or null]` pairs in UTF-16 code-unit order of the names. */
export function orderedValues(values: Readonly<Record<string, string | null>>): string {
  const names = Object.keys(values).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(names.map((name) => [name, values[name] ?? null]));
}
