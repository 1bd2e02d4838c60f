/**
 * The lease table and the claim function, as DDL text you can run in your own migrations, plus the
 * statements `migrate()` runs under an advisory lock (safe when several processes start at once).
 */
import { tableName, type TableName } from './identifier.js';

/** The default lease table. */
export const DEFAULT_LEASE_TABLE = 'leasefence_leases';

/**
 * One row per key, never deleted: `token` is the floor of every later grant. Times are `timestamptz(3)`
 * on the server's clock, truncated to milliseconds so that SQL and the pure core compare the same values.
 */
function tableDdl(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${table.quoted} (
  key text PRIMARY KEY,
  token bigint NOT NULL CHECK (token >= 0),
  holder text,
  run_id text,
  secret text,
  acquired_at timestamptz(3),
  expires_at timestamptz(3),
  attributes jsonb,
  ending_kind text CHECK (ending_kind IN ('released', 'expired', 'revoked')),
  ending_token bigint,
  ending_holder text,
  ending_run_id text,
  ending_at timestamptz(3),
  ending_reason text,
  ending_by text,
  checkpoint_json text,
  checkpoint_token bigint,
  checkpoint_written_at timestamptz(3),
  recovery_required boolean NOT NULL DEFAULT false,
  CHECK ((holder IS NULL) = (secret IS NULL))
)`;
}

/**
 * The claim, as one function call (one statement, one round trip). ATOMICITY: the row is locked
 * (`FOR NO KEY UPDATE`, which a fenced write's `FOR SHARE` holds off) before the decision, and `now` is
 * read after the lock, so the decision sees the latest committed version at the time it applies. A key's
 * first claim inserts the row; when a concurrent first claim inserted it first, `ON CONFLICT DO NOTHING`
 * waits for that transaction, and the next `SELECT ... FOR NO KEY UPDATE` (a fresh snapshot: the function
 * is VOLATILE, at READ COMMITTED) locks the winner's row. It applies the grant under exactly the
 * conditions of `transitions.claim` and returns the PRE-IMAGE (`pre`, NULL for a first claim), the store's
 * `now_at` and whether it `applied`: the adapter decides the outcome with the pure transition on that
 * pre-image.
 */
function claimFunctionDdl(table: TableName): string {
  const t = table.quoted;
  return `CREATE OR REPLACE FUNCTION ${table.derive('claim')}(
  p_key text, p_holder text, p_run_id text, p_secret text, p_ttl_ms bigint, p_attributes jsonb, p_recovering boolean,
  OUT applied boolean, OUT now_at timestamptz, OUT pre ${t})
LANGUAGE plpgsql VOLATILE
AS $leasefence$
BEGIN
  applied := false;
  FOR attempt IN 1..3 LOOP
    SELECT * INTO pre FROM ${t} AS l WHERE l.key = p_key FOR NO KEY UPDATE;
    IF FOUND THEN
      EXIT;
    END IF;
    now_at := date_trunc('milliseconds', clock_timestamp());
    INSERT INTO ${t} AS l (key, token, holder, run_id, secret, acquired_at, expires_at, attributes)
    VALUES (p_key, 1, p_holder, p_run_id, p_secret, now_at, now_at + p_ttl_ms * interval '1 millisecond', p_attributes)
    ON CONFLICT (key) DO NOTHING;
    IF FOUND THEN
      pre := NULL;
      applied := true;
      RETURN;
    END IF;
  END LOOP;
  IF pre.key IS NULL THEN
    RAISE EXCEPTION 'leasefence: could not lock or create the lease row of %', p_key;
  END IF;
  now_at := date_trunc('milliseconds', clock_timestamp());
  IF (pre.holder IS NULL OR (pre.expires_at IS NOT NULL AND now_at >= pre.expires_at))
     AND (NOT pre.recovery_required OR p_recovering) THEN
    UPDATE ${t} AS l SET
      token = pre.token + 1,
      holder = p_holder, run_id = p_run_id, secret = p_secret, acquired_at = now_at,
      expires_at = now_at + p_ttl_ms * interval '1 millisecond', attributes = p_attributes,
      ending_kind = CASE WHEN pre.holder IS NULL THEN pre.ending_kind ELSE 'expired' END,
      ending_token = CASE WHEN pre.holder IS NULL THEN pre.ending_token ELSE pre.token END,
      ending_holder = CASE WHEN pre.holder IS NULL THEN pre.ending_holder ELSE pre.holder END,
      ending_run_id = CASE WHEN pre.holder IS NULL THEN pre.ending_run_id ELSE pre.run_id END,
      ending_at = CASE WHEN pre.holder IS NULL THEN pre.ending_at ELSE pre.expires_at END,
      ending_reason = CASE WHEN pre.holder IS NULL THEN pre.ending_reason END,
      ending_by = CASE WHEN pre.holder IS NULL THEN pre.ending_by END
    WHERE l.key = p_key;
    applied := true;
  END IF;
END
$leasefence$`;
}

/** The DDL statements of a lease table, in order. */
export function schemaStatements(table: TableName): string[] {
  return [tableDdl(table), claimFunctionDdl(table)];
}

/**
 * The DDL of the lease table and its claim function, to run in your own migrations (idempotent:
 * `CREATE TABLE IF NOT EXISTS`, `CREATE OR REPLACE FUNCTION`). The table name is validated and quoted.
 *
 * ```ts
 * fs.writeFileSync('migrations/001_leasefence.sql', postgresSchemaSql());
 * ```
 */
export function postgresSchemaSql(table: string = DEFAULT_LEASE_TABLE): string {
  return `${schemaStatements(tableName(table)).join(';\n\n')};\n`;
}

/**
 * Serialises concurrent migrations of the same table: concurrent `CREATE TABLE IF NOT EXISTS` can fail
 * on the catalog's unique index and concurrent `CREATE OR REPLACE FUNCTION` with "tuple concurrently
 * updated", so each migration takes a transaction-scoped advisory lock first.
 */
export const MIGRATION_LOCK_SQL = `SELECT pg_advisory_xact_lock(1818588518, hashtext($1::text))`;
