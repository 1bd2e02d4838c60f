/**
 * PURE: when a waiting claim tries again, from the last reply of the store. Time is an argument.
 *
 * - A holder with an expiry: at that expiry (the reply's `expiresAt - now`, store time, counted from when the
 *   reply arrived, so never before it in store time) plus up to `jitterMs` of jitter. With release
 *   notifications that is the only scheduled attempt; without them, never more than `pollMs` apart.
 * - No expiry known (a lease without expiry, a key awaiting recovery): `recheckMs` with notifications (a
 *   bounded fallback for a lost message), `pollMs` without.
 * - Never past the deadline: an attempt that would fall at or after the last waiter's deadline is not made.
 */

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
}

/** Ms from now until the next attempt (`>= 0`), or `null` when no attempt falls before the deadline. */
export function nextAttemptDelay(plan: AttemptPlan): number | null {
  const atExpiry = plan.untilExpiryMs === null ? Number.POSITIVE_INFINITY : Math.max(0, plan.untilExpiryMs) + plan.jitter * plan.jitterMs;
  const fallback = plan.watching ? (plan.untilExpiryMs === null ? plan.recheckMs : Number.POSITIVE_INFINITY) : plan.pollMs;
  const delay = Math.max(0, Math.min(atExpiry, fallback) - Math.max(0, plan.sinceReplyMs));
  return delay < plan.remainingMs ? delay : null;
}
