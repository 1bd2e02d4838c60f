/**
 * PURE: when a waiting claim tries again, from the last reply of the store. Time is an argument.
 *
 * - A holder with an expiry: at that expiry (the reply's `expiresAt - now`, store time, counted from when the
 *   reply arrived, so never before it in store time) plus up to `jitterMs` of jitter. With release
 *   notifications that is the only scheduled attempt; without them, never more than `pollMs` apart.
 * - No expiry known (a lease without expiry, a key awaiting recovery): `recheckMs` with notifications (a
 *   bounded fallback for a lost message), `pollMs` without.
 * - A wake-up (a release or revoke notification) is a hint anyone able to notify can send: it is answered by
 *   an attempt at once, unless (past the first `WAKE_BURST` since the last grant) an attempt that answered
 *   one was refused less than `WAKE_INTERVAL_MS` ago;
 *   those that arrive meanwhile are answered together by one attempt when the interval ends (`untilWakeMs`),
 *   so the last one is never lost.
 * - A waiting claim queued in the store (`refreshMs`): at least every `refreshMs`, so that its place in the key's
 *   queue (see `fence/queue.ts`) does not expire while it waits.
 * - Never past the deadline: an attempt that would fall at or after the last waiter's deadline is not made.
 */

/**
 * The least gap after a refused attempt that answered a wake-up before the next one, per key and `Leases`
 * instance: a flood of forged notifications (PostgreSQL's NOTIFY needs no privilege on the lease table) costs
 * the store at most one claim per key per this many ms from each waiting process, and delays a genuine release
 * by at most as much (plus a round trip). A wake-up answered by a grant spends nothing, and resets the count.
 */
export const WAKE_INTERVAL_MS = 100;

/**
 * How many refused answers to wake-ups since the last grant are free of the interval: a notification that
 * arrives after the claim it led to (it travels on another connection than the reply), then a real release.
 */
export const WAKE_BURST = 2;

/** What the next attempt is scheduled from. */
export interface AttemptPlan {
  /** `expiresAt - now` of the holder in the last reply (store time), or `null` when no expiry says when to try. */
  readonly untilExpiryMs: number | null;
  /** Ms since that reply arrived (the worker's monotonic clock). */
  readonly sinceReplyMs: number;
  /** Ms until the deadline of the waiter that waits longest. */
  readonly remainingMs: number;
  /** Whether releases and revokes notify the waiters (`Store.watchFreed`). */
  readonly watching: boolean;
  /** A random number in [0, 1), drawn once per reply. */
  readonly jitter: number;
  readonly jitterMs: number;
  readonly pollMs: number;
  readonly recheckMs: number;
  /**
   * Ms until a pending wake-up may be answered (`WAKE_INTERVAL_MS` after the last attempt that answered
   * one; `<= 0`: now), or `null` / absent when no wake-up is pending.
   */
  readonly untilWakeMs?: number | null;
  /** The longest gap between attempts that keeps the waiters' places in the store's queue, or `null` / absent. */
  readonly refreshMs?: number | null;
}

/** Ms from now until the next attempt (`>= 0`), or `null` when no attempt falls before the deadline. */
export function nextAttemptDelay(plan: AttemptPlan): number | null {
  const atExpiry = plan.untilExpiryMs === null ? Number.POSITIVE_INFINITY : Math.max(0, plan.untilExpiryMs) + plan.jitter * plan.jitterMs;
  const fallback = plan.watching ? (plan.untilExpiryMs === null ? plan.recheckMs : Number.POSITIVE_INFINITY) : plan.pollMs;
  const refresh = plan.refreshMs === undefined || plan.refreshMs === null ? Number.POSITIVE_INFINITY : plan.refreshMs;
  const scheduled = Math.max(0, Math.min(atExpiry, fallback, refresh) - Math.max(0, plan.sinceReplyMs));
  const woken = plan.untilWakeMs === undefined || plan.untilWakeMs === null ? Number.POSITIVE_INFINITY : Math.max(0, plan.untilWakeMs);
  const delay = Math.min(scheduled, woken);
  return delay < plan.remainingMs ? delay : null;
}
