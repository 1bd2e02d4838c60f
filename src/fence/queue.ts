/**
 * PURE: a key's queue of waiting claims, kept in its record so that waiting is first come, first served across
 * processes (docs/design/fair-waiting.md). A waiting claim's every attempt names the waiters it stands for (its
 * own first, then the other waiters of the same process for the key, oldest first): the store appends the ones it
 * does not have, in that order, and renews the ones it has. The key goes to the first live waiter when it is
 * claimable; any other claim is refused `queued` (unless it says `jumpQueue`). A waiter that stops asking (its
 * process died, paused, lost the store) leaves the queue when its entry expires, `ttlMs` after its last attempt:
 * the queue never blocks the key after its waiters are gone.
 */
import type { QueuedWaiter, StoreTime } from './types.js';

export type { QueuedWaiter };

/**
 * What a waiting claim's attempt tells the store about its waiters: their ids, the claimant first, then the other
 * waiters of the same process for the key in arrival order; and how long their entries live without another
 * attempt.
 */
export interface ClaimQueue {
  readonly waiterIds: readonly string[];
  readonly ttlMs: number;
}

/**
 * The most waiters a key's queue holds. A waiter that arrives at a full queue is not queued (its claim is refused
 * as if it had not waited: `held`, or `queued` with `position: null`) and is queued by an attempt after a place
 * frees; so a record never grows without bound.
 */
export const MAX_WAITERS = 1000;

/** The most waiter ids one attempt may name (every store checks this before any I/O). */
export const MAX_WAITER_IDS = 100;

/** The waiters whose entries are live at `now`, in queue order. */
export function liveWaiters(waiters: readonly QueuedWaiter[], now: StoreTime): readonly QueuedWaiter[] {
  return waiters.every((waiter) => waiter.expiresAt > now) ? waiters : waiters.filter((waiter) => waiter.expiresAt > now);
}

/**
 * `live` (the live waiters, in order) with the attempt's waiters renewed to `now + ttlMs` and the ones missing
 * appended in the attempt's order (while the queue has room), `arrivedAt` now.
 */
export function enqueue(live: readonly QueuedWaiter[], queue: ClaimQueue, holder: string, now: StoreTime): readonly QueuedWaiter[] {
  const expiresAt = now + queue.ttlMs;
  const named = new Set(queue.waiterIds);
  const kept = live.map((waiter) => (named.has(waiter.waiterId) ? { ...waiter, expiresAt } : waiter));
  const present = new Set(live.map((waiter) => waiter.waiterId));
  for (const waiterId of queue.waiterIds) {
    if (kept.length >= MAX_WAITERS) break;
    if (present.has(waiterId)) continue;
    present.add(waiterId);
    kept.push({ waiterId, holder, arrivedAt: now, expiresAt });
  }
  return kept;
}

/** The 1-based place of `waiterId` in `waiters`, or `null` when it is not queued. */
export function positionOf(waiters: readonly QueuedWaiter[], waiterId: string | undefined): number | null {
  if (waiterId === undefined) return null;
  const index = waiters.findIndex((waiter) => waiter.waiterId === waiterId);
  return index < 0 ? null : index + 1;
}
