/**
 * One waiting claim in a key's queue: its deadline timer, its abort listener and its promise. Whatever ends
 * it (a grant, the deadline, the signal, a store error) removes the timer and the listener first.
 */
import type { Clock } from '../clock.js';
import type { ClaimQueue } from '../fence/queue.js';
import { newSecret } from '../secret.js';
import type { ClaimResult, Granted, WaitedClaimResult } from '../leases-types.js';
import { waitedRefusal, type ClaimRefusal, type WaitEnded } from './refusal.js';
import { onAbort } from './abort-watch.js';
import type { WaitSettings } from './wait-options.js';

/** A waiting claim as the key's queue sees it. */
export interface WaitRequest {
  readonly settings: WaitSettings;
  /** Whether the claim says `recovering: true` (it can take a key awaiting recovery). */
  readonly recovering: boolean;
  /** How long this waiter's place in the store's queue lasts without another attempt (`queueTtlOf`). */
  readonly queueTtlMs: number;
  /** One claim with this request's options, without waiting, for the waiters `queue` names (this one first). */
  readonly attempt: (queue: ClaimQueue) => Promise<ClaimResult>;
}

/** One waiting claim: settles once, with a grant, the last refusal, or an error. */
export class Waiter {
  readonly startedAt: number;
  readonly deadline: number;
  /** Set once the waiter has its answer (or error); an attempt made for it then finds it gone. */
  settled = false;
  /** The deadline passed before the store had answered once: the waiter ends with the first answer. */
  overdue = false;
  /** Its id in the key's queue in the store (random, kept for the whole wait; not a secret). */
  readonly waiterId: string = newSecret();
  /** An attempt has named it: the store may have queued it (a waiter that leaves then asks to be dequeued). */
  named = false;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #stopWatching: (() => void) | null = null;

  constructor(
    readonly request: WaitRequest,
    private readonly monotonic: Clock,
    private readonly resolve: (result: WaitedClaimResult) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.startedAt = monotonic();
    this.deadline = this.startedAt + request.settings.timeoutMs;
  }

  /** Starts the deadline timer and the abort listener. */
  arm(onDeadline: () => void, onAborted: () => void): void {
    this.#timer = setTimeout(onDeadline, this.request.settings.timeoutMs);
    const { signal } = this.request.settings;
    if (signal !== null) this.#stopWatching = onAbort(signal, onAborted);
  }

  /** Ends the wait with `granted`. */
  grant(granted: Granted): void {
    if (this.#settle()) this.resolve(granted);
  }

  /** Ends the wait without a grant: `refusal` was the store's last answer; `polled`: no notifications were heard. */
  end(refusal: ClaimRefusal, ended: WaitEnded, polled: boolean): void {
    if (this.#settle()) this.resolve(waitedRefusal(refusal, this.monotonic() - this.startedAt, ended, polled));
  }

  /** Ends the wait with `error` (a store failure, or the signal's reason before any answer). */
  fail(error: unknown): void {
    if (this.#settle()) this.reject(error);
  }

  /** Removes the timer and the listener; `false` if the waiter had already settled. */
  #settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#stopWatching?.();
    this.#stopWatching = null;
    return true;
  }
}
