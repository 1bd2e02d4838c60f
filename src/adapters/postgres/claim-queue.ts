/**
 * A key's queue of waiting claims (fence/queue.ts) on PostgreSQL: the lease row's `waiters` jsonb column, an array
 * of `{w, h, a, e}` (waiter id, holder, arrived at, expires at: epoch ms on the store's clock) in queue order, NULL
 * when nobody waits. Two places read and write it, each in the one statement of its operation:
 *
 * - the claim function (schema.ts) judges a claim against the queue (`queuedClaimBody`) when the claim waits or the
 *   row has a queue; the claim statement sends only those claims to it, so a plain claim of a key nobody waits for
 *   (the hot path) reads one NULL column more and writes nothing more;
 * - `dequeue` (`dequeueStatement`) takes waiters that left out of the queue, and notifies the key's watchers as a
 *   release does when the key is left to the next waiter.
 *
 * Expired entries stay stored until a claim or a dequeue rewrites the queue; every reader judges them at its now
 * (the pure core's `liveWaiters`), so they are gone however long they stay.
 *
 * NOTE: a waiting claim of a row another transaction holds locked (a fenced write in progress) waits for the lock,
 * where a plain claim is answered `held` from the committed version at once: its refusal writes the queue, which
 * needs the row. The wait is bounded by the fenced transaction's own bound (the grant's remaining time plus the
 * margin, statements.ts `transactionBound`), and costs one connection per waited key of a process (its waiters
 * share one attempt at a time).
 */
import type { ClaimCommand } from '../../fence/operations.js';
import { MAX_WAITERS } from '../../fence/queue.js';
import { freedNotify } from './freed-interest.js';
import { oneRow, type LeaseCommit } from './lease-commit.js';
import type { TableName } from './identifier.js';
import { epochMs, preImageJson } from './rows.js';
import { LOCKED_NOW, lockedRow } from './statements.js';

/**
 * A claim's queue parameters, after the claim's own: its waiter ids as JSON text (NULL: a claim that does not
 * wait), how long their entries live (ms, NULL: none) and `jumpQueue`.
 */
export function claimQueueParams(command: ClaimCommand): [string | null, number | null, boolean] {
  const { queue } = command;
  return [queue === undefined ? null : JSON.stringify(queue.waiterIds), queue?.ttlMs ?? null, command.jumpQueue === true];
}

/** The claim function's arguments for the queue, as declared after its other ones. */
export const QUEUE_FUNCTION_ARGUMENTS = 'p_waiters jsonb, p_queue_ttl_ms bigint, p_jump boolean';

/** The claim function's variables for the queue (`queuedClaimBody`). */
export const QUEUE_FUNCTION_VARIABLES = `v_now_ms bigint;
  v_live jsonb;
  v_queued jsonb;
  v_count integer;
  v_present text[];
  v_id text;
  v_expires bigint;
  v_refused boolean;`;

/** What `queuedClaimBody` needs of the claim function around it (SQL and plpgsql fragments). */
export interface QueuedClaimParts {
  /** The lease table, schema-qualified. */
  readonly table: string;
  /** The claim's `expect` holds on `pre` (claim-rule.ts `stateExpected`). */
  readonly stateExpected: string;
  /** The grant's SET list (claim-rule.ts `claimSet`). */
  readonly grantSet: string;
  /** The grant's condition on `pre` (claim-rule.ts `claimable`). */
  readonly claimable: string;
  /** The function's answer (the claim's pre-image) with `applied` (SQL boolean). */
  readonly answer: (applied: string) => string;
}

/**
 * The claim function's judgement of a claim that waits (`p_waiters`) or of a row with a queue, in plpgsql, on the
 * locked row `pre` at `now_at`, in `transitions.claim`'s order: `expect`; a live grant (the same secret: its
 * re-delivery, unchanged); the hold; a pending recovery; the queue. A waiting claim's `held`, `held-back` or
 * `queued` refusal writes the queue with its waiters appended (in the attempt's order, arrived now, while fewer
 * than `MAX_WAITERS`) or renewed (`queue.ts#enqueue`), the expired dropped; a grant drops the claimant's entry and
 * the expired ones, and queues the claim's other waiters as a refusal would. Every other refusal writes nothing. Returns the pre-image in every branch.
 */
export function queuedClaimBody(parts: QueuedClaimParts): string {
  const { table, answer } = parts;
  return `v_now_ms := ${epochMs('now_at')};
  v_live := COALESCE((SELECT jsonb_agg(e.w ORDER BY e.ord) FROM jsonb_array_elements(pre.waiters) WITH ORDINALITY AS e(w, ord)
    WHERE (e.w ->> 'e')::bigint > v_now_ms), '[]'::jsonb);
  v_queued := v_live;
  IF p_waiters IS NOT NULL THEN
    v_expires := v_now_ms + p_queue_ttl_ms;
    SELECT COALESCE(jsonb_agg(CASE WHEN p_waiters ? (e.w ->> 'w') THEN jsonb_set(e.w, '{e}', to_jsonb(v_expires)) ELSE e.w END ORDER BY e.ord), '[]'::jsonb),
      COALESCE(array_agg(e.w ->> 'w'), '{}'::text[]), count(*)
    INTO v_queued, v_present, v_count
    FROM jsonb_array_elements(v_live) WITH ORDINALITY AS e(w, ord);
    FOR v_id IN SELECT i.id FROM jsonb_array_elements_text(p_waiters) WITH ORDINALITY AS i(id, ord) ORDER BY i.ord LOOP
      EXIT WHEN v_count >= ${MAX_WAITERS};
      CONTINUE WHEN v_id = ANY (v_present);
      v_present := v_present || v_id;
      v_queued := v_queued || jsonb_build_array(jsonb_build_object('w', v_id, 'h', p_holder, 'a', v_now_ms, 'e', v_expires));
      v_count := v_count + 1;
    END LOOP;
  END IF;
  IF NOT (${parts.stateExpected}) THEN
    RETURN ${answer('false')};
  END IF;
  IF pre.holder IS NOT NULL AND (pre.expires_at IS NULL OR now_at < pre.expires_at) THEN
    IF pre.secret_hash = p_secret THEN
      RETURN ${answer('false')};
    END IF;
    v_refused := true;
  ELSIF pre.held_until IS NOT NULL AND now_at < pre.held_until THEN
    v_refused := true;
  ELSIF pre.recovery_required AND NOT p_recovering THEN
    RETURN ${answer('false')};
  ELSE
    -- NOTE: a recovering claim of a key awaiting recovery is never queued (the plain waiters cannot take it).
    v_refused := jsonb_array_length(v_queued) > 0 AND (v_queued -> 0 ->> 'w') IS DISTINCT FROM (p_waiters ->> 0)
      AND NOT p_jump AND NOT pre.recovery_required;
  END IF;
  IF v_refused THEN
    IF p_waiters IS NULL THEN
      RETURN ${answer('false')};
    END IF;
    UPDATE ${table} AS l SET waiters = NULLIF(v_queued, '[]'::jsonb) WHERE l.key = p_key;
    RETURN ${answer('true')};
  END IF;
  UPDATE ${table} AS l SET ${parts.grantSet},
    waiters = (SELECT jsonb_agg(e.w ORDER BY e.ord) FROM jsonb_array_elements(v_queued) WITH ORDINALITY AS e(w, ord)
      WHERE (e.w ->> 'w') IS DISTINCT FROM (p_waiters ->> 0))
  WHERE l.key = p_key AND ${parts.claimable};
  applied := FOUND;
  RETURN ${answer('applied')};`;
}

/**
 * After a key's first grant (the row just inserted): a waiting claim's other waiters (its process's, after the
 * claimant) take their places, in the attempt's order, arrived now (`transitions.claim` queues them on a grant).
 */
export function firstGrantQueue(table: string): string {
  const nowMs = epochMs('now_at');
  return `IF p_waiters IS NOT NULL AND jsonb_array_length(p_waiters) > 1 THEN
        UPDATE ${table} AS l SET waiters = (
          SELECT jsonb_agg(jsonb_build_object('w', i.id, 'h', p_holder, 'a', ${nowMs}, 'e', ${nowMs} + p_queue_ttl_ms) ORDER BY i.ord)
          FROM (SELECT DISTINCT ON (x.id) x.id, x.ord FROM jsonb_array_elements_text(p_waiters) WITH ORDINALITY AS x(id, ord)
            WHERE x.id IS DISTINCT FROM (p_waiters ->> 0) ORDER BY x.id, x.ord) AS i)
        WHERE l.key = p_key;
      END IF;`;
}

/**
 * `dequeue`: $1 key, $2 the waiter ids that leave (JSON text). ATOMICITY: one statement; `pre` locks the row
 * (`FOR NO KEY UPDATE`, as a claim does) and reads now after the lock; `queue` judges the live entries at that now
 * (`transitions.dequeue`): the ones kept, how many leave, whether the first live one leaves. The row is rewritten
 * only when one leaves (a placeholder row, state NULL, is no record and has no queue). When the first live waiter
 * left while the key is claimable (no live grant, no hold in force) and somebody still waits (`freed`), it
 * notifies the key's watchers exactly as a release does (`freedNotify`: when a waiter marked its interest), in
 * `RETURNING`, which runs only when the row was rewritten; `notify: false` is the same statement without it (a full
 * notification queue, postgres-store.ts); `commit` as the store's `leaseCommit` (lease-commit.ts).
 */
export function dequeueStatement(table: TableName, notify: boolean, commit: LeaseCommit = 'durable'): string {
  const named = `$2::text::jsonb OPERATOR(pg_catalog.?) (e.w OPERATOR(pg_catalog.->>) 'w')`;
  const claimable = `(pre.holder IS NULL OR (pre.expires_at IS NOT NULL AND pre.now OPERATOR(pg_catalog.>=) pre.expires_at))
      AND (pre.held_until IS NULL OR pre.now OPERATOR(pg_catalog.>=) pre.held_until)`;
  const freed = `queue.first_left AND queue.kept IS NOT NULL AND ${claimable}`;
  return `WITH pre AS MATERIALIZED (
  ${lockedRow(table, 'queue', 'NO KEY UPDATE', '$1')}
),
queue AS (
  SELECT pg_catalog.jsonb_agg(e.w ORDER BY e.ord) FILTER (WHERE NOT (${named})) AS kept,
    pg_catalog.count(*) FILTER (WHERE ${named}) AS removed,
    (pg_catalog.array_agg(${named} ORDER BY e.ord))[1] AS first_left
  FROM pre, pg_catalog.jsonb_array_elements(pre.waiters) WITH ORDINALITY AS e(w, ord)
  WHERE (e.w OPERATOR(pg_catalog.->>) 'e')::bigint OPERATOR(pg_catalog.>) ${epochMs('pre.now')}
),
applied AS (
  UPDATE ${table.quoted} AS l SET waiters = queue.kept
  FROM pre, queue
  WHERE l.key = pre.key AND pre.state IS NOT NULL AND queue.removed OPERATOR(pg_catalog.>) 0
  RETURNING ${notify ? `CASE WHEN ${freed} THEN ${freedNotify(table)} END` : '1'}
)
SELECT ${preImageJson('queue', 'pre.', LOCKED_NOW, 'EXISTS (SELECT 1 FROM applied)', null)} AS r
FROM ${oneRow(commit)} AS one LEFT JOIN pre ON true`;
}
