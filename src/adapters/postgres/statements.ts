/**
 * Every statement the lease store sends, one per operation. Each returns exactly one row: the PRE-IMAGE of
 * the lease row (all NULL when there is none), the store's `now_ms` and whether the statement `applied`
 * its change. The adapter then runs the pure transition on the pre-image (so it never re-decides) and
 * checks that SQL applied the change iff the core says it changed.
 *
 * ATOMICITY of the CTE statements: `pre` locks the row (`FOR NO KEY UPDATE`, the lock their UPDATE takes
 * anyway, or `FOR SHARE` for fenced writes, which conflicts with it) and
 * returns its newest committed version; `clock` reads `clock_timestamp()` only after `pre` is fully read
 * (it aggregates over it), so `now` is taken after any lock wait; `applied` updates that same row under
 * exactly the conditions of the pure transition. At READ COMMITTED, if the row changed after the
 * statement's snapshot, the UPDATE re-checks its WHERE on the newest version (EvalPlanQual), which is the
 * version `pre` holds locked, so the decision and the change concern the same version.
 *
 * Bind parameters of fence-checking statements: $1 key, $2 token, $3 secret, $4 holder, $5 run id,
 * $6 required attributes (JSON text); operation parameters follow from $7.
 */
import type { Fence } from '../../fence/types.js';
import type { TableName } from './identifier.js';

/**
 * Epoch milliseconds of a `timestamptz(3)`, as decimal text. NOTE: `date_part` (float8) is measurably cheaper
 * than `extract` (numeric) and exact here: stored times are whole milliseconds, so the product is within a
 * rounding error of an integer far below 0.5, and `round` recovers it.
 */
export const epochMs = (expression: string): string => `round(date_part('epoch', ${expression}) * 1000)::bigint::text`;

/** The store's now, truncated to milliseconds like every stored time. */
export const NOW = `date_trunc('milliseconds', clock_timestamp())`;

/** The pre-image columns, read from `source` (`pre.` or `(c.pre).`), as text, JSON text and booleans. */
export function recordColumns(source: string): string {
  const c = (column: string) => `${source}${column}`;
  return [
    `${c('key')} AS key`,
    `${c('token')}::text AS token`,
    `${c('holder')} AS holder`,
    `${c('run_id')} AS run_id`,
    `${c('secret')} AS secret`,
    `${epochMs(c('acquired_at'))} AS acquired_at`,
    `${epochMs(c('expires_at'))} AS expires_at`,
    `${c('attributes')}::text AS attributes`,
    `${c('ending_kind')} AS ending_kind`,
    `${c('ending_token')}::text AS ending_token`,
    `${c('ending_holder')} AS ending_holder`,
    `${c('ending_run_id')} AS ending_run_id`,
    `${epochMs(c('ending_at'))} AS ending_at`,
    `${c('ending_reason')} AS ending_reason`,
    `${c('ending_by')} AS ending_by`,
    `${c('checkpoint_json')} AS checkpoint_json`,
    `${c('checkpoint_token')}::text AS checkpoint_token`,
    `${epochMs(c('checkpoint_written_at'))} AS checkpoint_written_at`,
    `${c('recovery_required')} AS recovery_required`,
  ].join(', ');
}

/**
 * The fence check of `verdict.ts#checkFence`, as SQL over `pre` at `clock.now`: true iff the verdict is ok.
 * `param(i)` names the i-th fence parameter (1 key, 2 token, 3 secret, 4 holder, 5 run id, 6 attributes).
 * NOTE: the token is compared as numeric, so a forged token beyond bigint is refused, not an SQL error.
 */
export function fenceHolds(param: (index: number) => string): string {
  return `pre.holder IS NOT NULL
    AND pre.token = ${param(2)}::numeric
    AND pre.secret = ${param(3)}::text
    AND pre.holder = ${param(4)}::text
    AND pre.run_id IS NOT DISTINCT FROM ${param(5)}::text
    AND pre.attributes @> ${param(6)}::text::jsonb
    AND (pre.expires_at IS NULL OR clock.now < pre.expires_at)`;
}

/** The bind parameters of a fence, in the order `fenceHolds` numbers them. */
export function fenceParams(fence: Fence): unknown[] {
  return [fence.key, fence.token.toString(), fence.secret, fence.holder, fence.runId, JSON.stringify(fence.attributes ?? {})];
}

/** `fenceHolds` with the fence parameters at $1..$6. */
export const FENCE_HOLDS: string = fenceHolds((index) => `$${index}`);

/** The columns an ending grant clears. */
const CLEAR_GRANT = `holder = NULL, run_id = NULL, secret = NULL, acquired_at = NULL, expires_at = NULL, attributes = NULL`;

/** Locks the row (`lock`), reads now after the lock, applies `set` where `condition`, returns the pre-image. */
function lockedUpdate(table: TableName, lock: 'NO KEY UPDATE' | 'SHARE', set: string | null, condition: string): string {
  const applied =
    set === null
      ? ''
      : `,
applied AS (
  UPDATE ${table.quoted} AS l SET ${set}
  FROM pre, clock
  WHERE l.key = pre.key AND ${condition}
  RETURNING 1
)`;
  return `WITH pre AS MATERIALIZED (
  SELECT * FROM ${table.quoted} WHERE key = $1::text FOR ${lock}
),
clock AS MATERIALIZED (
  SELECT ${NOW} AS now, count(*) AS locked FROM pre
)${applied}
SELECT ${recordColumns('pre.')}, ${epochMs('clock.now')} AS now_ms, ${set === null ? 'false' : 'EXISTS (SELECT 1 FROM applied)'} AS applied
FROM clock LEFT JOIN pre ON true`;
}

/** The statements of one lease table. */
export interface LeaseStatements {
  /** $1 key, $2 holder, $3 run id, $4 secret, $5 ttl ms (NULL: no expiry), $6 attributes JSON, $7 recovering. */
  readonly claim: string;
  /** Fence params, $7 ttl ms (NULL: no expiry). */
  readonly renew: string;
  /** Fence params, $7 checkpoint JSON text. */
  readonly checkpoint: string;
  /** Fence params, $7 'keep' | 'clear' | 'replace', $8 checkpoint JSON text (for 'replace'). */
  readonly release: string;
  /** $1 key, $2 reason, $3 by, $4 require recovery, $5 expected token (NULL: any). */
  readonly revoke: string;
  /** Fence params, $7 'resume' | 'discard'. */
  readonly recover: string;
  /** $1 key. */
  readonly inspect: string;
  /** $1 key: locks the row FOR SHARE (a fenced write's first statement) and returns it with now. */
  readonly lockShared: string;
}

/** Builds the statements of a (validated, quoted) lease table. */
export function leaseStatements(table: TableName): LeaseStatements {
  return {
    claim: `SELECT ${recordColumns('(c.pre).')}, ${epochMs('c.now_at')} AS now_ms, c.applied AS applied
FROM ${table.derive('claim')}($1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text::jsonb, $7::boolean) AS c`,

    renew: lockedUpdate(table, 'NO KEY UPDATE', `expires_at = clock.now + $7::bigint * interval '1 millisecond'`, FENCE_HOLDS),

    checkpoint: lockedUpdate(
      table,
      'NO KEY UPDATE',
      `checkpoint_json = $7::text, checkpoint_token = pre.token, checkpoint_written_at = clock.now, recovery_required = false`,
      FENCE_HOLDS,
    ),

    release: lockedUpdate(
      table,
      'NO KEY UPDATE',
      `${CLEAR_GRANT},
    ending_kind = 'released', ending_token = pre.token, ending_holder = pre.holder, ending_run_id = pre.run_id,
    ending_at = clock.now, ending_reason = NULL, ending_by = NULL,
    checkpoint_json = CASE $7::text WHEN 'keep' THEN pre.checkpoint_json WHEN 'clear' THEN NULL ELSE $8::text END,
    checkpoint_token = CASE $7::text WHEN 'keep' THEN pre.checkpoint_token WHEN 'clear' THEN NULL ELSE pre.token END,
    checkpoint_written_at = CASE $7::text WHEN 'keep' THEN pre.checkpoint_written_at WHEN 'clear' THEN NULL ELSE clock.now END`,
      FENCE_HOLDS,
    ),

    revoke: lockedUpdate(
      table,
      'NO KEY UPDATE',
      `token = pre.token + 1, ${CLEAR_GRANT},
    ending_kind = 'revoked', ending_token = pre.token, ending_holder = pre.holder, ending_run_id = pre.run_id,
    ending_at = clock.now, ending_reason = $2::text, ending_by = $3::text,
    recovery_required = ($4::boolean AND pre.checkpoint_json IS NOT NULL)`,
      `pre.holder IS NOT NULL AND ($5::numeric IS NULL OR pre.token = $5::numeric)`,
    ),

    recover: lockedUpdate(
      table,
      'NO KEY UPDATE',
      `recovery_required = false,
    checkpoint_json = CASE WHEN $7::text = 'discard' THEN NULL ELSE pre.checkpoint_json END,
    checkpoint_token = CASE WHEN $7::text = 'discard' OR pre.checkpoint_json IS NULL THEN NULL ELSE pre.token END,
    checkpoint_written_at = CASE WHEN $7::text = 'discard' OR pre.checkpoint_json IS NULL THEN NULL ELSE clock.now END`,
      FENCE_HOLDS,
    ),

    // NOTE: a plain read (no lock): an inspection is linearised at its snapshot and judges liveness at its now.
    inspect: `SELECT ${recordColumns('pre.')}, ${epochMs('clock.now')} AS now_ms, false AS applied
FROM (SELECT ${NOW} AS now) AS clock LEFT JOIN ${table.quoted} AS pre ON pre.key = $1::text`,

    lockShared: lockedUpdate(table, 'SHARE', null, 'false'),
  };
}
