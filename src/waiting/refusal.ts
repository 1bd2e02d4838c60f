/**
 * What a waiting claim returns when it ends without a grant: the store's last refusal, with how long the
 * claim waited and what ended it.
 */
import type { ClaimHeld } from '../fence/operations.js';
import type { Lease } from '../lease.js';
import type { ClaimRefusal } from '../refusals.js';
import { loggable } from '../loggable.js';

export type { ClaimRefusal };

/** The last refusal a waiting claim saw, with how long it waited (`claim(key, { wait })` without a grant). */
export type WaitedRefusal = ClaimRefusal & {
  /** Ms from the call to the end of the wait (the worker's monotonic clock). */
  readonly waitedMs: number;
  /** What ended the wait: its `timeoutMs` passed, or its `signal` aborted. */
  readonly waitEnded: 'timeout' | 'aborted';
  /**
   * `true` when the wait heard no release notifications (the store was created without a notification
   * connection, or subscribing failed) and tried every `pollMs` instead: a release was noticed up to
   * `pollMs` late. See docs/waiting.md, "Wake-ups per store".
   */
  readonly polled: boolean;
};

/** Why a waiting claim stopped waiting. */
export type WaitEnded = WaitedRefusal['waitEnded'];

/** `refusal` as a waiting claim returns it (log-safe like every result of the shell). */
export function waitedRefusal(refusal: ClaimRefusal, waitedMs: number, waitEnded: WaitEnded, polled: boolean): WaitedRefusal {
  return loggable({ ...refusal, waitedMs, waitEnded, polled });
}

/**
 * The `held` refusal the store would give any other claim right after `lease` was granted: what the waiters
 * queued behind a grant in this process know without asking the store again.
 */
export function heldBy(lease: Lease): ClaimHeld {
  const acquiredAt = lease.acquiredAt ?? 0;
  return loggable({
    ok: false,
    reason: 'held',
    key: lease.key,
    token: lease.token,
    holder: lease.holder,
    runId: lease.runId,
    acquiredAt,
    expiresAt: lease.expiresAt,
    now: acquiredAt,
  });
}
