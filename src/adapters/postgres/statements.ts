/**
 * Every statement the lease store sends, one per operation. Each returns exactly one row whose column `r`
 * holds the store's now, whether the statement `applied` its change, and the PRE-IMAGE of the lease row
 * (rows.ts). The adapter then runs the pure transition on the pre-image (so it never re-decides) and checks
 * that SQL applied the change iff the core says it changed.
 *
 * ATOMICITY of the CTE statements: `pre` locks the row (`FOR NO KEY UPDATE`, the lock their UPDATE takes
 * anyway, or `FOR SHARE` for fenced writes, which conflicts with it) and returns its newest committed
 * version; `clock` reads `clock_timestamp()` only after `pre` is fully read (it aggregates over it), so
 * `now` is taken after any lock wait; `applied` updates that same row under exactly the conditions of the
 * pure transition. At READ COMMITTED, if the row changed after the statement's snapshot, the UPDATE
 * re-checks its WHERE on the newest version (EvalPlanQual), which is the version `pre` holds locked, so the
 * decision and the change concern the same version. NOTE: the UPDATE finds its row by key, not by `pre`'s
 * ctid: a version newer than the snapshot is invisible to a TID scan, and would not be updated. NOTE: its
 * WHERE reads `pre`, not its own row `l`: on `l` it would test the snapshot's version and skip the row when
 * that one fails, before EvalPlanQual could test the newest (both rewrites fail the EvalPlanQual test in
 * test/adapters/postgres-concurrency.ts and the race suite).
 *
 * The lease statements (`lockedUpdate`, the claim, a fenced write's first statement) fold `clock` into `pre`: `pre` is the locking query as
 * a subquery, whose outer projection adds `now`. PostgreSQL never flattens a subquery with a locking clause,
 * so that projection runs on the row its LockRows node returned, after any lock wait. NOTE: two plan nodes
 * fewer than a separate `clock`, whose initialisation at every execution was a measurable part of the
 * statement's server CPU (docs/history/benchmarks.md, "PostgreSQL, round two"). With no row, `now` is read in the final
 * SELECT (`LOCKED_NOW`).
 *
 * Bind parameters of fence-checking statements: $1 key, $2 token, $3 secret, $4 holder, $5 run id,
 * $6 required attributes (JSON text); operation parameters follow from $7. The secret travels as its hash
 * (secret-hash.ts); the pre-image says only whether it matched.
 */
import type { Fence } from '../../fence/types.js';
import { claimable, claimFunction, claimSet, type ClaimTerms } from './claim-rule.js';
import { availableAtSet } from './availability.js';
import { oneRow, type LeaseCommit } from './lease-commit.js';
import { removeCall } from './remove.js';
import { setKeyStateCall } from './key-state.js';
import { recordSubmissionStatement, submissionLookup } from './submissions.js';
import { freedNotify, revokedNotify } from './freed-interest.js';
import { secretHash } from './secret-hash.js';
import type { TableName } from './identifier.js';
import { claimPreImageJson, epochMs, NOW, preImageColumns, preImageJson, type PreImageWidth } from './rows.js';

/**
 * The fence check of `verdict.ts#checkFence`, as SQL over `pre` at `now` (an SQL expression): true iff the verdict is ok.
 * `param(i)` names the i-th fence parameter (1 key, 2 token, 3 secret, 4 holder, 5 run id, 6 attributes).
 * NOTE: the token is compared as numeric, so a forged token beyond bigint is refused, not an SQL error.
 */
export function fenceHolds(param: (index: number) => string, now = 'clock.now'): string {
  return `pre.holder IS NOT NULL
    AND pre.token::numeric OPERATOR(pg_catalog.=) ${param(2)}::numeric
    AND pre.secret_hash OPERATOR(pg_catalog.=) ${param(3)}::text
    AND pre.holder = ${param(4)}::text
    AND pre.run_id IS NOT DISTINCT FROM ${param(5)}::text
    AND pre.attributes OPERATOR(pg_catalog.@>) ${param(6)}::text::jsonb
    AND (pre.expires_at IS NULL OR ${now} OPERATOR(pg_catalog.<) pre.expires_at)`;
}

const NO_ATTRIBUTES = '{}';

/** The bind parameters of a fence, in the order `fenceHolds` numbers them (the secret as its hash). */
export function fenceParams(fence: Fence): unknown[] {
  const { attributes } = fence;
  // NOTE: most fences require no attributes; skip JSON.stringify for them (this runs on every operation).
  const required = attributes === undefined ? NO_ATTRIBUTES : JSON.stringify(attributes);
  return [fence.key, fence.token.toString(), secretHash(fence.secret), fence.holder, fence.runId, required];
}

/** `fenceHolds` with the fence parameters at $1..$6, in a lease statement (`lockedPre`). */
const FENCE_HOLDS: string = fenceHolds((index) => `$${index}`, 'pre.now');

/**
 * The `pre` CTE of a lease statement: the key's row locked (`lock`, optionally `SKIP LOCKED`), with `now`
 * read after the lock (see the file's comment).
 */
function lockedPre(table: TableName, width: PreImageWidth, lock: string): string {
  return `pre AS MATERIALIZED (
  ${lockedRow(table, width, lock, '$1')}
)`;
}

/**
 * The query of a `pre` CTE: the row of key `key` (an SQL expression) locked (`lock`), with the store's now
 * as column `now`, read after the lock (see the file's comment), and `extra` columns (`, expression AS
 * name`) computed after it too. Also the first CTE of a fenced statement and of a gated upsert.
 */
export function lockedRow(table: TableName, width: PreImageWidth, lock: string, key: string, extra = ''): string {
  return `SELECT locked.*, ${NOW} AS now${extra} FROM (
    SELECT ${preImageColumns(width)} FROM ${table.quoted} WHERE key = ${key}::text FOR ${lock}
  ) AS locked`;
}

/** The store's now in a statement's final SELECT: read after the lock (`pre.now`), or now when there was no row. */
export const LOCKED_NOW: string = `COALESCE(pre.now, ${NOW})`;

/** The columns an ending grant clears. */
const CLEAR_GRANT = `holder = NULL, run_id = NULL, secret_hash = NULL, acquired_at = NULL, expires_at = NULL, attributes = NULL`;

/**
 * Locks the row (`lock`), reads now after the lock, applies `set` where `condition`, returns the pre-image
 * (`presented`: the SQL of the presented secret's hash, `null` when the operation presents none).
 * `returning` is evaluated once per updated row, so only when the change applies (`FREED_NOTIFY`).
 */
function lockedUpdate(
  table: TableName,
  width: PreImageWidth,
  lock: 'NO KEY UPDATE' | 'SHARE',
  set: string | null,
  condition: string,
  presented: string | null = '$3::text',
  returning = '1',
  commit: LeaseCommit = 'durable',
): string {
  const applied =
    set === null
      ? ''
      : `,
applied AS (
  UPDATE ${table.quoted} AS l SET ${set}
  FROM pre
  WHERE l.key = pre.key AND ${condition}
  RETURNING ${returning}
)`;
  return `WITH ${lockedPre(table, width, lock)}${applied}
SELECT ${preImageJson(width, 'pre.', LOCKED_NOW, set === null ? 'false' : 'EXISTS (SELECT 1 FROM applied)', presented)} AS r
FROM ${oneRow(commit)} AS one LEFT JOIN pre ON true`;
}

/** The claim statement's parameters, as `claim-rule.ts` terms. */
const STATEMENT_TERMS: ClaimTerms = {
  now: 'pre.now',
  holder: '$2::text',
  runId: '$3::text',
  secret: '$4::text',
  ttlMs: '$5::bigint',
  attributes: '$6::text::jsonb',
  recovering: '$7::boolean',
  expectValues: '$8::text::jsonb',
  expectAbsent: '$9::text::text[]',
};

/**
 * The claim: for a row that exists, has a token and is not locked, a locked update under the claim rule, in
 * plain SQL. When the snapshot has no row for the key, or another transaction holds it locked (`SKIP
 * LOCKED`: a fenced write in progress, or a concurrent claim or renew), or its row has no token yet (a
 * placeholder of waiter interest, or a record of key state only, whose first grant mints above the
 * removed-token floor: token-floor.ts), the same statement calls the claim function instead (schema.ts),
 * which answers from the row as committed when it shows a live grant (`held`, with no lock wait), and
 * otherwise inserts the row or locks (this transaction may already hold the lock) and decides on the newest
 * version. So does a claim that waits ($10) or of a row with a queue of waiting claims (claim-queue.ts): the
 * statement judges only plain claims of keys nobody waits for. NOTE: the function is called in a CASE branch,
 * which Postgres evaluates only when taken, so a plain claim of a key that has a token and no queue never enters plpgsql, and never reads the floor (no subquery, whose plan
 * nodes would be initialised at every claim); its UPDATE CTE matches no row when the function is called
 * (`pre` is empty, or its token is 0).
 */
function claimStatement(table: TableName, commit: LeaseCommit): string {
  return `WITH ${lockedPre(table, PRE_IMAGE_WIDTH.claim, 'NO KEY UPDATE SKIP LOCKED')},
applied AS (
  UPDATE ${table.quoted} AS l SET ${claimSet(STATEMENT_TERMS, 'NULL::bigint')}
  FROM pre
  WHERE l.key = pre.key AND pre.token OPERATOR(pg_catalog.<>) 0::bigint AND pre.waiters IS NULL AND $10::text IS NULL
    AND ${claimable(STATEMENT_TERMS)}
  RETURNING 1
)
SELECT CASE WHEN pre.key IS NULL OR pre.token OPERATOR(pg_catalog.=) 0::bigint OR pre.waiters IS NOT NULL OR $10::text IS NOT NULL
  THEN ${claimFunction(table)}(${CLAIM_ARGUMENTS})
  ELSE ${claimPreImageJson('pre.', 'pre.now', 'EXISTS (SELECT 1 FROM applied)', '$4::text', 'NULL::bigint')}
END AS r
FROM ${oneRow(commit)} AS one LEFT JOIN pre ON true`;
}

/**
 * How much of the row each statement returns: all of it where the outcome reads the acquired-at or the
 * checkpoint (claim, revoke, recover, inspect), what a fence check reads elsewhere. NOTE: a renew, release
 * or checkpoint then never carries the checkpoint (up to the size limit) back to the client; a property
 * test checks that each transition decides the same on the narrow pre-image as on the whole row.
 */
export const PRE_IMAGE_WIDTH: Readonly<Record<keyof LeaseStatements, PreImageWidth>> = {
  claim: 'record',
  claimCall: 'record',
  renew: 'fence',
  checkpoint: 'fence',
  release: 'fence',
  releaseQuiet: 'fence',
  releaseHold: 'fence',
  releaseHoldQuiet: 'fence',
  revoke: 'record',
  revokeQuiet: 'record',
  recover: 'record',
  inspect: 'record',
  lockShared: 'fence',
  lockForCheckpoint: 'fence',
  lockForSubmission: 'fence',
  saveCheckpoint: 'fence',
  recordSubmission: 'fence',
  setKeyState: 'grant',
  setKeyStateQuiet: 'grant',
  remove: 'grant',
  removeQuiet: 'grant',
};

/** The claim function's arguments, from the claim's bind parameters. */
const CLAIM_ARGUMENTS =
  '$1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text::jsonb, $7::boolean, $8::text::jsonb, $9::text::text[], $10::text::jsonb, $11::bigint, $12::boolean';

/** The statements of one lease table. */
export interface LeaseStatements {
  /**
   * $1 key, $2 holder, $3 run id, $4 secret hash, $5 ttl ms (NULL: no expiry), $6 attributes JSON, $7 recovering,
   * $8 the key-state values `expect` requires (JSON text, NULL: none), $9 the names it requires absent (a text[] literal, NULL: none),
   * $10 a waiting claim's waiter ids (JSON text, NULL: the claim does not wait), $11 their entries' TTL ms, $12 jump the queue
   * (claim-queue.ts `claimQueueParams`).
   */
  readonly claim: string;
  /** The claim as a call of the claim function (same parameters), for stores whose statements are not prepared. */
  readonly claimCall: string;
  /** Fence params, $7 ttl ms (NULL: no expiry). */
  readonly renew: string;
  /** Fence params, $7 checkpoint JSON text. */
  readonly checkpoint: string;
  /** Fence params, $7 'keep' | 'clear' | 'replace', $8 checkpoint JSON text (for 'replace'). */
  readonly release: string;
  /** `release` with a hold: $9 hold ms. */
  readonly releaseHold: string;
  /** `releaseHold` without its notification. */
  readonly releaseHoldQuiet: string;
  /** $1 key, $2 reason, $3 by, $4 require recovery, $5 expected token (NULL: any). */
  readonly revoke: string;
  /** `release` without its notification: for when the server cannot queue one (postgres-store.ts). */
  readonly releaseQuiet: string;
  /** `revoke` without its notification. */
  readonly revokeQuiet: string;
  /** Fence params, $7 'resume' | 'discard'. */
  readonly recover: string;
  /** $1 key. */
  readonly inspect: string;
  /**
   * $1 key, $2 margin ms, $3 the presented secret's hash: a fenced write's first statement. Locks the row FOR SHARE, returns it with now,
   * and bounds the transaction by the grant (`transactionBound`).
   */
  readonly lockShared: string;
  /** As `lockShared`, but FOR NO KEY UPDATE: the first statement of a fenced write that saves a checkpoint. */
  readonly lockForCheckpoint: string;
  /**
   * As `lockForCheckpoint`, plus $4 a submission's run id: the first statement of a fenced write with a
   * submission; its column `submission` is the run id's lookup after the lock (submissions.ts).
   */
  readonly lockForSubmission: string;
  /** Records a submission after the write (submissions.ts, `recordSubmissionStatement`). */
  readonly recordSubmission: string;
  /** $1 key, $2 values JSON ([[name, value], ...] in code-unit order), $3 by, $4 'keep' | 'clear' | 'set', $5 hold ms (key-state.ts). */
  readonly setKeyState: string;
  /** `setKeyState` without its notification. */
  readonly setKeyStateQuiet: string;
  /** $1 key, $2 force, $3 expected token (NULL: any) (remove.ts). */
  readonly remove: string;
  /** `remove` without its notification. */
  readonly removeQuiet: string;
  /**
   * $1 key, $2 token, $3 checkpoint JSON text, $4 written-at (epoch ms): the last statement of a fenced
   * write with a checkpoint, on the row `lockForCheckpoint` locked; returns one row iff it saved.
   */
  readonly saveCheckpoint: string;
}

/**
 * Bounds the fenced transaction by the grant, on the server: when the locked row has a live expiry, sets
 * the transaction's `statement_timeout` and `idle_in_transaction_session_timeout` (`set_config(..., true)`
 * is SET LOCAL) to the grant's remaining time on the store clock plus $2 ms, or leaves a lower one the
 * session already has. A holder that freezes (GC, SIGSTOP) mid-transaction then loses its session when the
 * bound runs out, which ends the transaction and unlocks the row, instead of blocking takeover until the
 * pool's own timeouts (if any). NOTE: the idle timeout restarts after each statement; a holder that froze
 * after statements it sent later than the fence check is bounded from its last statement (see
 * RELIABILITY.md); a live one is stopped by the write context, which refuses statements after the grant's
 * local deadline.
 */
export function transactionBound(setting: string, margin = '$2::bigint', now = 'clock.now'): string {
  const remaining = `(${epochMs('pre.expires_at')} OPERATOR(pg_catalog.-) ${epochMs(now)} OPERATOR(pg_catalog.+) ${margin})`;
  const current = `pg_catalog.round(pg_catalog.date_part('epoch', pg_catalog.current_setting('${setting}')::interval) OPERATOR(pg_catalog.*) 1000::float8)::bigint`;
  return `pg_catalog.set_config('${setting}', (CASE WHEN ${current} OPERATOR(pg_catalog.>) 0::bigint
      THEN LEAST(${remaining}, ${current}) ELSE ${remaining} END)::text, true)`;
}

/**
 * A fenced write's first statement: locks the row (`lock`), returns its pre-image, bounds the transaction;
 * with `submission`, also the lookup of the run id $4 after the lock (column `submission`).
 */
function fencedWriteBegin(table: TableName, lock: 'NO KEY UPDATE' | 'SHARE', submission = false): string {
  const bound = (setting: string) => transactionBound(setting, '$2::bigint', 'pre.now');
  const lookup = submission ? `, ${submissionLookup(table, 'locked.key', '$4')} AS submission` : '';
  return `WITH pre AS MATERIALIZED (
  ${lockedRow(table, PRE_IMAGE_WIDTH.lockShared, lock, '$1', lookup)}
)
SELECT ${preImageJson(PRE_IMAGE_WIDTH.lockShared, 'pre.', LOCKED_NOW, 'false', '$3::text')} AS r,
  CASE WHEN pre.holder IS NOT NULL AND pre.expires_at OPERATOR(pg_catalog.>) pre.now
    THEN ${bound('statement_timeout')} OPERATOR(pg_catalog.||) ${bound('idle_in_transaction_session_timeout')}
  END AS bounded${submission ? ', pre.submission AS submission' : ''}
FROM (SELECT) AS one LEFT JOIN pre ON true`;
}

/**
 * The SET list of a release ($7 'keep' | 'clear' | 'replace', $8 checkpoint JSON text), with the key's new hold
 * (`held`, SQL; `l.held_until`: kept). An explicit checkpoint decision resolves a pending recovery.
 */
const releaseSet = (held: string): string => `${CLEAR_GRANT},
    ending_kind = 'released', ending_token = pre.token, ending_holder = pre.holder, ending_run_id = pre.run_id,
    ending_at = pre.now, ending_reason = NULL, ending_by = NULL,
    checkpoint_json = CASE $7::text WHEN 'keep' THEN l.checkpoint_json WHEN 'clear' THEN NULL ELSE $8::text END,
    checkpoint_token = CASE $7::text WHEN 'keep' THEN l.checkpoint_token WHEN 'clear' THEN NULL ELSE pre.token END,
    checkpoint_written_at = CASE $7::text WHEN 'keep' THEN l.checkpoint_written_at WHEN 'clear' THEN NULL ELSE pre.now END,
    recovery_required = CASE $7::text WHEN 'keep' THEN l.recovery_required ELSE false END,
    ${availableAtSet({ blocked: `$7::text = 'keep' AND l.recovery_required`, end: 'pre.now', held })}`;

/** The SET list of a release. */
const RELEASE_SET = releaseSet('l.held_until');

/** The hold of a release with `holdMs` ($9): the key is held back until the store's now plus it. */
const RELEASE_HOLD = `pre.now OPERATOR(pg_catalog.+) ($9::bigint::float8 OPERATOR(pg_catalog.*) '1 millisecond'::interval)`;

/** The SET list of a release with a hold ($9 hold ms). */
const RELEASE_HOLD_SET = `${releaseSet(RELEASE_HOLD)},
    held_until = ${RELEASE_HOLD}`;

/** The SET list of a revoke ($2 reason, $3 by, $4 require recovery). */
const REVOKE_SET = `token = pre.token OPERATOR(pg_catalog.+) 1::bigint, ${CLEAR_GRANT},
    ending_kind = 'revoked', ending_token = pre.token, ending_holder = pre.holder, ending_run_id = pre.run_id,
    ending_at = pre.now, ending_reason = $2::text, ending_by = $3::text,
    recovery_required = ($4::boolean AND pre.checkpoint_json IS NOT NULL),
    ${availableAtSet({ blocked: '$4::boolean AND pre.checkpoint_json IS NOT NULL', end: 'pre.now', held: 'l.held_until' })}`;

/** Which grant a revoke ends: any held one, or the one of $5 (the expected token). */
const REVOKE_CONDITION = `pre.holder IS NOT NULL AND ($5::numeric IS NULL OR pre.token::numeric OPERATOR(pg_catalog.=) $5::numeric)`;

/** A renew's new expiry ($7 ttl ms, NULL: none). */
const RENEWED_EXPIRY = `pre.now OPERATOR(pg_catalog.+) ($7::bigint::float8 OPERATOR(pg_catalog.*) '1 millisecond'::interval)`;

/** The availability of a held row whose grant stays (checkpoint, recover, a fenced write's checkpoint: recovery resolved). */
const HELD_AVAILABLE_AT = availableAtSet({ blocked: 'l.expires_at IS NULL', end: 'l.expires_at', held: 'l.held_until' });

/** The statements `leaseCommit` applies to: the lease-only ones (lease-commit.ts). */
export type LeaseOnlyStatements = Pick<
  LeaseStatements,
  'claim' | 'claimCall' | 'renew' | 'release' | 'releaseQuiet' | 'releaseHold' | 'releaseHoldQuiet'
>;

/**
 * The lease-only statements of a (validated, quoted) lease table, committing as `commit` says. NOTE: the
 * releases run in either mode, but the store sends the fast ones only for a release that keeps the
 * checkpoint ($7 'keep'): one that replaces or clears it saves the holder's progress, durably.
 */
export function commitOf(table: TableName, commit: LeaseCommit): LeaseOnlyStatements {
  const release = (set: string, returning?: string) =>
    lockedUpdate(table, PRE_IMAGE_WIDTH.release, 'NO KEY UPDATE', set, FENCE_HOLDS, '$3::text', returning, commit);
  return {
    claim: claimStatement(table, commit),

    claimCall: `SELECT ${claimFunction(table)}(${CLAIM_ARGUMENTS}) AS r${commit === 'durable' ? '' : ` FROM ${oneRow(commit)} AS one`}`,

    renew: lockedUpdate(
      table,
      PRE_IMAGE_WIDTH.renew,
      'NO KEY UPDATE',
      `expires_at = ${RENEWED_EXPIRY},
    ${availableAtSet({ blocked: 'l.recovery_required OR $7::bigint IS NULL', end: RENEWED_EXPIRY, held: 'l.held_until' })}`,
      FENCE_HOLDS,
      '$3::text',
      '1',
      commit,
    ),

    // NOTE: the kept checkpoint is read from `l`, the row being updated (the version `pre` locked), so that
    // the pre-image need not carry it back to the client. An explicit checkpoint decision (clear or replace)
    // resolves a pending recovery, as `transitions.release` does; keep leaves it pending.
    release: release(RELEASE_SET, freedNotify(table)),

    releaseQuiet: release(RELEASE_SET),

    // NOTE: a release with a hold is a statement of its own, so the common release plans no hold arithmetic.
    releaseHold: release(RELEASE_HOLD_SET, freedNotify(table)),

    releaseHoldQuiet: release(RELEASE_HOLD_SET),
  };
}

/** Builds the statements of a (validated, quoted) lease table. */
export function leaseStatements(table: TableName): LeaseStatements {
  return {
    ...commitOf(table, 'durable'),

    checkpoint: lockedUpdate(
      table,
      PRE_IMAGE_WIDTH.checkpoint,
      'NO KEY UPDATE',
      `checkpoint_json = $7::text, checkpoint_token = pre.token, checkpoint_written_at = pre.now, recovery_required = false,
    ${HELD_AVAILABLE_AT}`,
      FENCE_HOLDS,
    ),

    revoke: lockedUpdate(table, PRE_IMAGE_WIDTH.revoke, 'NO KEY UPDATE', REVOKE_SET, REVOKE_CONDITION, null, revokedNotify(table)),

    revokeQuiet: lockedUpdate(table, PRE_IMAGE_WIDTH.revoke, 'NO KEY UPDATE', REVOKE_SET, REVOKE_CONDITION, null),

    recover: lockedUpdate(
      table,
      PRE_IMAGE_WIDTH.recover,
      'NO KEY UPDATE',
      `recovery_required = false,
    checkpoint_json = CASE WHEN $7::text = 'discard' THEN NULL ELSE pre.checkpoint_json END,
    checkpoint_token = CASE WHEN $7::text = 'discard' OR pre.checkpoint_json IS NULL THEN NULL ELSE pre.token END,
    checkpoint_written_at = CASE WHEN $7::text = 'discard' OR pre.checkpoint_json IS NULL THEN NULL ELSE pre.now END,
    ${HELD_AVAILABLE_AT}`,
      FENCE_HOLDS,
    ),

    // NOTE: a plain read (no lock): an inspection is linearised at its snapshot and judges liveness at its now.
    inspect: `SELECT ${preImageJson(PRE_IMAGE_WIDTH.inspect, 'pre.', 'clock.now', 'false', null)} AS r
FROM (SELECT ${NOW} AS now) AS clock LEFT JOIN ${table.quoted} AS pre ON pre.key = $1::text`,

    lockShared: fencedWriteBegin(table, 'SHARE'),

    lockForCheckpoint: fencedWriteBegin(table, 'NO KEY UPDATE'),

    lockForSubmission: fencedWriteBegin(table, 'NO KEY UPDATE', true),

    recordSubmission: recordSubmissionStatement(table),

    setKeyState: setKeyStateCall(table, true),

    setKeyStateQuiet: setKeyStateCall(table, false),

    remove: removeCall(table, true),

    removeQuiet: removeCall(table, false),

    // NOTE: the row is locked FOR NO KEY UPDATE by this transaction since the fence check, so it is the
    // version the check read; the token condition only guards against a misuse of the statement.
    saveCheckpoint: `UPDATE ${table.quoted} AS l SET checkpoint_json = $3::text, checkpoint_token = token,
  checkpoint_written_at = pg_catalog.to_timestamp($4::float8 OPERATOR(pg_catalog./) 1000::float8), recovery_required = false,
  ${HELD_AVAILABLE_AT}
WHERE key = $1::text AND token = $2::bigint AND holder IS NOT NULL
RETURNING 1 AS saved`,
  };
}
