/**
 * The lease table, its submissions and token-floor tables and its functions (claim, set key state, remove,
 * submission lookup), as DDL text you can run in your own migrations, plus the statements `migrate()` runs
 * under an advisory lock (safe when several processes start at once).
 */
import {
  CLAIM_FUNCTION_SUFFIX,
  claimable,
  claimSet,
  firstGrant,
  PLPGSQL_CLAIM_TERMS,
  refloorFirstGrant,
  stateExpected,
  type ClaimTerms,
} from './claim-rule.js';
import { firstGrantQueue, QUEUE_FUNCTION_ARGUMENTS, QUEUE_FUNCTION_VARIABLES, queuedClaimBody } from './claim-queue.js';
import { addItemsFunctionDdl } from './items.js';
import { acquirePermitFunctionDdl, permitIndexDdl } from './permits.js';
import { removeFunctionDdl } from './remove.js';
import { setKeyStateFunctionDdl } from './key-state.js';
import { submissionLookupDdl, submissionsTableDdl } from './submissions.js';
import { removedFloorSql, tokenFloorDdl } from './token-floor.js';
import { tableName, type TableName } from './identifier.js';
import { claimPreImageJson, NOW } from './rows.js';

/** The default lease table. */
export const DEFAULT_LEASE_TABLE = 'leasefence_leases';

/**
 * One row per key, deleted only by `remove` (a row whose `state` is NULL is a placeholder that carries waiter
 * interest only, `waited_until`: freed-interest.ts; it reads as no record; every record has a state, `{}`
 * when none was set): `token` is the floor of every later grant (token-floor.ts: the clock floor, and the
 * removed-token floor that outlives a deleted row). `ending_change` is a `state-changed` ending's
 * `{name, from, to}`; `held_until` the hold of a release with `holdMs` or of `setKeyState`; `waiters` the key's
 * queue of waiting claims (claim-queue.ts), NULL when nobody waits. Submissions live
 * in their own table (submissions.ts), so no lease statement reads or rewrites them. Times are `timestamptz(3)`
 * on the server's clock, truncated to milliseconds so that SQL and the pure core compare the same values.
 *
 * `item_set`, `item_due_at`, `available_at` and `item_secret` make the row an item of a claim-next set
 * (items.ts; availability.ts keeps `available_at`).
 *
 * NOTE: no CHECK constraints. Postgres deserialises and compiles a table's CHECK expressions on every
 * statement that writes it, which cost a lease operation about a fifth of its server time; the only writers
 * are leasefence's statements, which keep `holder` and `secret_hash` NULL together, tokens positive and endings
 * one of three kinds, and the conformance and model suites check what they write. Updates of a key that is
 * no item are HOT (no index entry written): `key` never changes, the item columns the partial indexes read stay
 * NULL (NULL written over NULL), and page pruning makes room (a
 * lower fillfactor was measured and did not pay: only the first update of rows on freshly filled pages
 * missed, about 1%).
 */
function tableDdl(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${table.quoted} (
  key text PRIMARY KEY,
  token bigint NOT NULL,
  holder text,
  run_id text,
  secret_hash text,
  acquired_at timestamptz(3),
  expires_at timestamptz(3),
  attributes jsonb,
  ending_kind text,
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
  ending_change jsonb,
  state jsonb,
  held_until timestamptz(3),
  waiters jsonb,
  waited_until timestamptz(3),
  item_set text,
  item_due_at timestamptz(3),
  available_at timestamptz(3),
  item_secret text
)`;
}

/**
 * The claim-next indexes (items.ts), partial: a key that is no item has no entry, and its updates write NULL over
 * NULL in `available_at` and `item_secret`, so they stay HOT. `ready` hands a set's items in grant order
 * (availability, then key: `COLLATE "C"` is code-unit order for the UTF-8 keys); `secret` finds the live grant a
 * re-delivered claim-next made.
 */
function itemIndexesDdl(table: TableName): string[] {
  const index = (suffix: string) => `"${table.bare}_${suffix}"`;
  return [
    `CREATE INDEX IF NOT EXISTS ${index('ready')} ON ${table.quoted} (item_set, available_at, key COLLATE "C") WHERE available_at IS NOT NULL`,
    `CREATE INDEX IF NOT EXISTS ${index('item_secret')} ON ${table.quoted} (item_set, item_secret) WHERE item_secret IS NOT NULL`,
  ];
}

/** The claim function's arguments, as `claim-rule.ts` terms. */
const FUNCTION_TERMS: ClaimTerms = PLPGSQL_CLAIM_TERMS;

/**
 * The claim as one plpgsql function, in two roles: the claim statement calls it (in the same statement, one
 * round trip) when its snapshot has no row for the key; and a store whose statements are not prepared
 * (`prepare: false`, PGlite) sends every claim as a call of it, because plpgsql keeps the plans of its
 * statements for the session while a statement sent as text is planned at every call (the claim statement
 * costs more to plan than to run). ATOMICITY: it locks the row (`FOR NO KEY UPDATE`) or, for a key's first
 * claim, inserts it with the first token (the clock floor, token-floor.ts); when a concurrent first claim inserted it first, `ON CONFLICT DO NOTHING`
 * waits for that transaction, and the next `SELECT ... FOR NO KEY UPDATE` (a fresh snapshot: the function
 * is VOLATILE, at READ COMMITTED) locks the winner's row; `now` is read after the lock, and the grant is
 * applied under the claim rule (claim-rule.ts, the same fragments as the claim statement's). It returns the
 * pre-image (`rows.ts`; all NULL for an insert). A row that another transaction holds locked and whose
 * committed version shows a live grant is answered without waiting: `held` (see the NOTE in the body), unless
 * the claim waits (its refusal writes the key's queue). A claim that waits, or of a row with a queue, is judged
 * against the queue (claim-queue.ts); every other claim as before.
 */
function claimFunctionDdl(table: TableName, schemaPrefix: string): string {
  const t = `${schemaPrefix}"${table.bare}"`;
  const floorTable = `${schemaPrefix}"${table.bare}_token_floor"`;
  return `CREATE OR REPLACE FUNCTION ${schemaPrefix}"${table.bare}_${CLAIM_FUNCTION_SUFFIX}"(
  p_key text, p_holder text, p_run_id text, p_secret text, p_ttl_ms bigint, p_attributes jsonb, p_recovering boolean, p_expect jsonb, p_absent text[],
  ${QUEUE_FUNCTION_ARGUMENTS})
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $leasefence$
DECLARE
  pre ${t};
  now_at timestamptz;
  applied boolean := false;
  removed_floor bigint;
  latest_floor bigint;
  ${QUEUE_FUNCTION_VARIABLES}
BEGIN
  -- NOTE: a row another transaction holds (a fenced write in progress, a renew) whose last committed version
  -- shows a live grant is answered from that version without waiting for the lock: the claim changes
  -- nothing and is linearised before that transaction (read after the snapshot, now proves it was live).
  SELECT * INTO pre FROM ${t} AS l WHERE l.key = p_key FOR NO KEY UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    SELECT * INTO pre FROM ${t} AS l WHERE l.key = p_key;
    now_at := ${NOW};
    -- NOTE: not for a waiting claim, whose refusal writes the queue: it waits for the lock.
    IF FOUND AND p_waiters IS NULL AND pre.holder IS NOT NULL AND (pre.expires_at IS NULL OR now_at < pre.expires_at) THEN
      RETURN ${claimPreImageJson('pre.', 'now_at', 'false', 'p_secret', 'NULL::bigint')};
    END IF;
  END IF;
  -- NOTE: each round finds the row (and locks it) or inserts it, unless a concurrent first grant inserted it and a
  -- remove deleted it again in between: rare, and repeated only under removes with no pause (a stress test's 16
  -- connections ran out of 3 rounds), hence 16.
  FOR attempt IN 1..16 LOOP
    SELECT * INTO pre FROM ${t} AS l WHERE l.key = p_key FOR NO KEY UPDATE;
    IF FOUND THEN
      EXIT;
    END IF;
    now_at := ${NOW};
    -- NOTE: no record: its state is empty, and a claim that expects a value is refused (state-mismatch).
    IF NOT (${stateExpected(FUNCTION_TERMS, 'NULL::jsonb')}) THEN
      RETURN ${claimPreImageJson('pre.', 'now_at', 'false', 'p_secret', 'NULL::bigint')};
    END IF;
    -- NOTE: read once, so the token minted and the floor the pre-image reports are the same value.
    removed_floor := ${removedFloorSql(floorTable)};
    ${firstGrant(t, 'removed_floor', 'p_key', FUNCTION_TERMS)}
    ON CONFLICT (key) DO NOTHING;
    IF FOUND THEN
      ${refloorFirstGrant(t, floorTable, 'p_key', 'removed_floor', 'latest_floor', FUNCTION_TERMS)}
      ${firstGrantQueue(t)}
      RETURN ${claimPreImageJson('pre.', 'now_at', 'true', 'p_secret', 'removed_floor')};
    END IF;
  END LOOP;
  IF pre.key IS NULL THEN
    RAISE EXCEPTION 'leasefence: could not lock or create the lease row of %', p_key;
  END IF;
  now_at := ${NOW};
  IF pre.token = 0 THEN
    removed_floor := ${removedFloorSql(floorTable)};
  END IF;
  IF p_waiters IS NULL AND pre.waiters IS NULL THEN
    UPDATE ${t} AS l SET ${claimSet(FUNCTION_TERMS, 'removed_floor')}
    WHERE l.key = p_key AND ${claimable(FUNCTION_TERMS)};
    applied := FOUND;
    RETURN ${claimPreImageJson('pre.', 'now_at', 'applied', 'p_secret', 'removed_floor')};
  END IF;
  ${queuedClaimBody({
    table: t,
    stateExpected: stateExpected(FUNCTION_TERMS),
    grantSet: claimSet(FUNCTION_TERMS, 'removed_floor'),
    claimable: claimable(FUNCTION_TERMS),
    answer: (applied) => claimPreImageJson('pre.', 'now_at', applied, 'p_secret', 'removed_floor'),
  })}
END
$leasefence$`;
}

/**
 * A function's DDL (`ddl(schemaPrefix)`) with its table and its own name schema-qualified, because its
 * `search_path` is pinned to `pg_catalog, pg_temp` (no object of another schema can stand in for an
 * operator or function it uses). For a table named without a schema, the schema is the one the table is
 * created in, the session's `current_schema()`, filled in on the server by a DO block.
 */
function qualifiedFunctionDdl(table: TableName, ddl: (schemaPrefix: string) => string): string {
  if (table.schema !== null) return ddl(`"${table.schema}".`);
  // NOTE: format() reads % as a placeholder: every % of the body (RAISE placeholders, LIKE patterns) is doubled,
  // then the schema's placeholder goes where the marker was.
  const marker = '\u0000schema\u0000';
  const template = ddl(marker).replaceAll('%', '%%').replaceAll(marker, '%1$I.');
  return `DO $leasefence_ddl$ BEGIN
  EXECUTE pg_catalog.format($leasefence_fn$${template}$leasefence_fn$, pg_catalog.current_schema());
END $leasefence_ddl$`;
}

/**
 * The DDL statements of a lease table, in order: the lease table, its indexes (claim-next's, permits'), its
 * removed-token floor, its submissions table, and its functions (claim, set key state, remove, submission lookup,
 * add items, acquire permit).
 */
export function schemaStatements(table: TableName): string[] {
  return [
    tableDdl(table),
    ...itemIndexesDdl(table),
    permitIndexDdl(table),
    tokenFloorDdl(table),
    submissionsTableDdl(table),
    qualifiedFunctionDdl(table, (prefix) => claimFunctionDdl(table, prefix)),
    qualifiedFunctionDdl(table, (prefix) => setKeyStateFunctionDdl(table, prefix)),
    qualifiedFunctionDdl(table, (prefix) => removeFunctionDdl(table, prefix)),
    qualifiedFunctionDdl(table, (prefix) => submissionLookupDdl(table, prefix)),
    qualifiedFunctionDdl(table, (prefix) => addItemsFunctionDdl(table, prefix)),
    qualifiedFunctionDdl(table, (prefix) => acquirePermitFunctionDdl(table, prefix)),
  ];
}

/**
 * The DDL of the lease table, its submissions and token-floor tables and its functions, to run in your own migrations (idempotent:
 * `CREATE TABLE IF NOT EXISTS`, `CREATE OR REPLACE FUNCTION`). The table name is validated and quoted.
 *
 * ```ts
 * fs.writeFileSync('migrations/001_leasefence.sql', postgresLeaseSchemaSql());
 * ```
 */
export function postgresLeaseSchemaSql(table: string = DEFAULT_LEASE_TABLE): string {
  return `${schemaStatements(tableName(table)).join(';\n\n')};\n`;
}

/**
 * Serialises concurrent migrations of the same table: concurrent `CREATE TABLE IF NOT EXISTS` can fail
 * on the catalog's unique index and concurrent `CREATE OR REPLACE FUNCTION` with "tuple concurrently
 * updated", so each migration takes a transaction-scoped advisory lock first.
 */
export const MIGRATION_LOCK_SQL = `SELECT pg_catalog.pg_advisory_xact_lock(1818588518, pg_catalog.hashtext($1::text))`;
