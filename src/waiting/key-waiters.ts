/**
 * The waiting claims of one `Leases` instance on one key. However many wait, the key costs the store one
 * subscription, one schedule and at most one claim in flight, made for the waiter at the head of a FIFO
 * queue; the others learn from its reply and keep waiting. A grant goes to that head; the rest then know the
 * key is held until the new grant's expiry without asking the store.
 *
 * First come, first served across processes (`fence/queue.ts`): every claim names the waiters it stands for, the
 * head first, then the others in arrival order, and the store queues the ones it has not seen. A waiter that
 * arrives while no claim is in flight is named at once by a claim of its own (so its place is taken when it
 * arrives, not at the next release); one that arrives during a claim, by a claim right after it. While any waiter
 * is queued the schedule makes an attempt at least every third of its `queueTtlMs` (its place would expire), and a
 * waiter that leaves without a grant asks the store to dequeue it.
 *
 * Every decision is a claim judged by the store: a notification only makes the next attempt earlier, and a
 * lost one delays it to the scheduled attempt (see `schedule.ts`). Notifications are hints anyone able to
 * notify can forge: after `WAKE_BURST` attempts that answered one were refused, the next answers come at most
 * one per `WAKE_INTERVAL_MS`, and a notification that arrives meanwhile is kept (`#wakePending`) and answered
 * when the interval ends. A grant resets that: a chain of releases in one process hands the key on at once.
 */
import type { Clock } from '../clock.js';
import type { Lease } from '../lease.js';
import { publishWaitPolling } from '../events.js';
import { MAX_WAITER_IDS, type ClaimQueue } from '../fence/queue.js';
import type { Store } from '../store.js';
import { heldBy, type ClaimRefusal } from './refusal.js';
import { nextAttemptDelay, WAKE_BURST, WAKE_INTERVAL_MS } from './schedule.js';
import type { Waiter } from './waiter.js';

/** What the queues of one `Leases` instance share. */
export interface WaitingContext {
  readonly watchFreed: NonNullable<Store['watchFreed']> | null;
  readonly monotonic: Clock;
  /** A random number in [0, 1), for the jitter. */
  readonly random: () => number;
  /** Releases a grant that arrived for a waiter that had stopped waiting. */
  readonly release: (lease: Lease) => Promise<unknown>;
  /** Takes waiters that stopped waiting out of the key's queue in the store (best effort: errors are ignored). */
  readonly dequeue: (key: string, waiterIds: readonly string[]) => void;
}

/** The last reply the queue had from the store, and when it arrived. */
interface LastReply {
  readonly refusal: ClaimRefusal;
  readonly at: number;
  readonly untilExpiryMs: number | null;
  readonly jitter: number;
}

/** The queue of one key's waiting claims in one `Leases` instance (see the file comment). */
export class KeyWaiters {
  readonly #queue: Waiter[] = [];
  #closed = false;
  /** Subscribing, or a claim in flight: a notification now is remembered, not acted on. */
  #busy = false;
  /** The last claim failed (a store error): the retry, `pollMs` after it, answers notifications and new waiters. */
  #retrying = false;
  /** A notification arrived that no attempt has answered yet (an attempt sent after it answers it). */
  #wakePending = false;
  /** Refused attempts that answered notifications since the last grant. */
  #refusedWakes = 0;
  /** When the last of them past the first `WAKE_BURST` was sent (monotonic ms): the interval runs from it. */
  #lastWakeAttempt = Number.NEGATIVE_INFINITY;
  #watching = false;
  /** No notifications: the store has none, or subscribing failed (the waiters' refusals say `polled`). */
  #polls = false;
  #unsubscribe: (() => void) | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #last: LastReply | null = null;
  /** While the first subscription is pending: stops waiting for it. */
  #stopSubscribing: (() => void) | null = null;

  constructor(
    readonly key: string,
    private readonly context: WaitingContext,
    private readonly onClosed: () => void,
  ) {}

  /** Queues `waiter`; the first one subscribes (if the store can notify) and then claims. */
  add(waiter: Waiter): void {
    this.#queue.push(waiter);
    waiter.arm(
      () => this.#deadline(waiter),
      () => this.#abort(waiter),
    );
    if (this.#queue.length === 1 && this.#last === null && !this.#busy) void this.#start();
    else if (!this.#busy && !this.#retrying) {
      // NOTE: its place in the store's queue is taken now, by a claim that names it (see the file comment);
      // while the store has failed every claim so far, the pending retry names it (a claim now would fail too).
      if (this.#last === null) this.#plan();
      else {
        this.#clearTimer();
        void this.#attempt();
      }
    }
  }

  async #start(): Promise<void> {
    this.#busy = true;
    const { watchFreed } = this.context;
    if (watchFreed !== null) {
      const watched = watchFreed(this.key, () => this.#freed()).then(
        (unsubscribe) => {
          if (this.#closed) unsubscribe();
          else {
            this.#unsubscribe = unsubscribe;
            this.#watching = true;
          }
        },
        // NOTE: notifications are best effort: without a subscription the waiters poll (`pollMs`), and say so.
        () => this.#polling('subscribe-failed'),
      );
      // NOTE: a deadline that passes while the subscription is pending (a half-open notification connection
      // answers only after subscribeTimeoutMs) ends the wait for it: the overdue waiter gets its one answer
      // from the store now, and a subscription that still comes serves the waiters left.
      const overdue = new Promise<void>((resolve) => (this.#stopSubscribing = resolve));
      await Promise.race([watched, overdue]);
      this.#stopSubscribing = null;
    } else this.#polling('no-notification-connection');
    if (!this.#closed) await this.#attempt();
    else this.#busy = false;
  }

  /** Marks this queue as polling and announces it (`leasefence:wait-polling`). */
  #polling(reason: 'no-notification-connection' | 'subscribe-failed'): void {
    this.#polls = true;
    const head = this.#queue[0];
    if (head !== undefined) publishWaitPolling(this.key, reason, head.request.settings.pollMs);
  }

  #freed(): void {
    if (this.#closed) return;
    // NOTE: a notification while one is pending is answered with it (the timer is already planned for it).
    const pending = this.#wakePending;
    this.#wakePending = true;
    if (!this.#busy && !this.#retrying && !pending) this.#answerWake();
  }

  /** Answers a pending notification: at once, or when `WAKE_INTERVAL_MS` since the last answer ends (`#plan`). */
  #answerWake(): void {
    if (this.context.monotonic() - this.#lastWakeAttempt >= WAKE_INTERVAL_MS) {
      this.#clearTimer();
      void this.#attempt();
    } else this.#plan();
  }

  /** The waiter a claim is made for: the head, or the first recovering one when the key awaits recovery. */
  #next(): Waiter | undefined {
    if (this.#last?.refusal.reason === 'recovery-required')
      return this.#queue.find((waiter) => waiter.request.recovering) ?? this.#queue[0];
    return this.#queue[0];
  }

  async #attempt(): Promise<void> {
    const waiter = this.#next();
    if (waiter === undefined) {
      this.#busy = false;
      return;
    }
    this.#busy = true;
    this.#retrying = false;
    // NOTE: a notification that arrived before this claim is sent is answered by the claim itself.
    const answersWake = this.#wakePending;
    const sentAt = this.context.monotonic();
    this.#wakePending = false;
    let result;
    try {
      result = await waiter.request.attempt(this.#queueFor(waiter));
    } catch (error) {
      // NOTE: until the retry, a notification (its own dequeue's, for one) or a new waiter is answered by the
      // retry, not by a claim now against a store that has just failed.
      this.#retrying = true;
      this.#busy = false;
      this.#leave(waiter, () => waiter.fail(error));
      if (!this.#closed) this.#retryAfter(waiter.request.settings.pollMs);
      return;
    }
    const repliedAt = this.context.monotonic();
    // NOTE: only refused answers to notifications spend the interval, and the first WAKE_BURST of them since
    // the last grant do not (a notification that arrives after the grant it led to, then the grantee's own
    // release); a grant resets both, so a chain of releases in one process hands the key on at once.
    if (result.ok) {
      this.#refusedWakes = 0;
      this.#lastWakeAttempt = Number.NEGATIVE_INFINITY;
    } else if (answersWake && !keyMoved(this.#last?.refusal, result)) {
      // NOTE: an answer that shows the key moved since the last one (another grant holds it, or the queue's first
      // waiter changed) says the notification was true: a waiter ahead of this one took the key, and the release
      // that frees it for this waiter must be answered at once, not after the interval. An answer that shows
      // nothing moved (a forged notification) spends it.
      this.#refusedWakes += 1;
      if (this.#refusedWakes >= WAKE_BURST) this.#lastWakeAttempt = sentAt;
    }
    if (result.ok) {
      // NOTE: a notification heard while this claim was in flight told of the release it was granted after.
      this.#wakePending = false;
      if (waiter.settled) {
        // NOTE: the waiter stopped while its claim was in flight: give the key back, then try for the next.
        await this.context.release(result.lease).catch(() => undefined);
        this.#busy = false;
        if (!this.#closed) void this.#attempt();
        return;
      }
      this.#busy = false;
      this.#leave(waiter, () => waiter.grant(result), true);
      const held = heldBy(result.lease);
      this.#remember(held, repliedAt);
      // NOTE: waiters whose deadline passed before this first answer end with it: the key is held by the grant.
      for (const overdue of this.#queue.filter((queued) => queued.overdue))
        this.#leave(overdue, () => overdue.end(held, 'timeout', this.#polls));
      if (this.#closed) return;
      if (this.#unnamed()) void this.#attempt();
      else this.#plan();
      return;
    }
    this.#busy = false;
    this.#remember(result, repliedAt);
    for (const overdue of this.#queue.filter((queued) => queued.overdue))
      this.#leave(overdue, () => overdue.end(result, 'timeout', this.#polls));
    if (this.#closed) return;
    const recoverer =
      result.reason === 'recovery-required' && !waiter.request.recovering && this.#queue.some((queued) => queued.request.recovering);
    if (recoverer || this.#unnamed()) void this.#attempt();
    else if (this.#wakePending) this.#answerWake();
    else this.#plan();
  }

  /** The waiters a claim for `waiter` names: it first, then the others in arrival order, `MAX_WAITER_IDS` in all. */
  #namedBy(waiter: Waiter): Waiter[] {
    return [waiter, ...this.#queue.filter((queued) => queued !== waiter).slice(0, MAX_WAITER_IDS - 1)];
  }

  /** The queue a claim for `waiter` carries; its waiters are marked as named. */
  #queueFor(waiter: Waiter): ClaimQueue {
    const named = this.#namedBy(waiter);
    for (const each of named) each.named = true;
    return { waiterIds: named.map((each) => each.waiterId), ttlMs: waiter.request.queueTtlMs };
  }

  /**
   * Whether the next claim would name a waiter no claim has named yet. NOTE: only those it would name: a waiter
   * past the first `MAX_WAITER_IDS` is named once others leave, not by claims in a loop.
   */
  #unnamed(): boolean {
    const next = this.#next();
    return next !== undefined && this.#namedBy(next).some((queued) => !queued.named);
  }

  /** The longest gap between attempts that keeps the named waiters' places (a third of the shortest TTL). */
  #refreshMs(): number | null {
    let shortest = Number.POSITIVE_INFINITY;
    for (const queued of this.#queue) if (queued.named) shortest = Math.min(shortest, queued.request.queueTtlMs);
    return shortest === Number.POSITIVE_INFINITY ? null : shortest / 3;
  }

  #remember(refusal: ClaimRefusal, at: number): void {
    this.#last = { refusal, at, untilExpiryMs: untilFreeMs(refusal), jitter: this.context.random() };
  }

  /** Sets the timer of the next attempt from the last reply. */
  #plan(): void {
    const last = this.#last;
    const head = this.#queue[0];
    if (head === undefined) {
      this.#clearTimer();
      return;
    }
    if (last === null) {
      // NOTE: the store has failed every claim so far (or not answered yet): keep the pending retry, or
      // start one. Clearing it here left waiters with no timer and no claim in flight, hung for good.
      if (this.#timer === null) this.#retryAfter(head.request.settings.pollMs);
      return;
    }
    this.#clearTimer();
    const now = this.context.monotonic();
    const remainingMs = Math.max(...this.#queue.map((waiter) => waiter.deadline)) - now;
    const { jitterMs, pollMs, recheckMs } = head.request.settings;
    const untilWakeMs = this.#wakePending ? this.#lastWakeAttempt + WAKE_INTERVAL_MS - now : null;
    const delay = nextAttemptDelay({
      untilExpiryMs: last.untilExpiryMs,
      sinceReplyMs: now - last.at,
      remainingMs,
      watching: this.#watching,
      jitter: last.jitter,
      jitterMs,
      pollMs,
      recheckMs,
      untilWakeMs,
      refreshMs: this.#refreshMs(),
    });
    if (delay !== null) this.#retryAfter(delay);
  }

  #retryAfter(delay: number): void {
    this.#clearTimer();
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#attempt();
    }, delay);
  }

  #deadline(waiter: Waiter): void {
    const last = this.#last;
    // NOTE: a waiter always gets one answer from the store: with none yet, it ends with the first.
    if (last === null) {
      waiter.overdue = true;
      this.#stopSubscribing?.();
    } else this.#leave(waiter, () => waiter.end(last.refusal, 'timeout', this.#polls));
  }

  #abort(waiter: Waiter): void {
    const last = this.#last;
    const reason = waiter.request.settings.signal?.reason;
    this.#leave(waiter, () => (last === null ? waiter.fail(reason) : waiter.end(last.refusal, 'aborted', this.#polls)));
  }

  /**
   * Takes `waiter` out of the queue, settles it, and closes the queue when it was the last one. A waiter leaving
   * without a grant (`granted` false) that a claim named is dequeued in the store too (its grant dequeued it).
   */
  #leave(waiter: Waiter, settle: () => void, granted = false): void {
    const index = this.#queue.indexOf(waiter);
    if (index >= 0) this.#queue.splice(index, 1);
    if (!granted && waiter.named && !waiter.settled) this.context.dequeue(this.key, [waiter.waiterId]);
    settle();
    if (this.#queue.length === 0) this.#close();
    else if (!this.#busy && !this.#retrying) this.#plan();
  }

  /** Drops the timer and the subscription: nothing of this queue is left once its last waiter is gone. */
  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearTimer();
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.onClosed();
  }

  #clearTimer(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }
}

/**
 * Whether the key moved between two refusals: `held` by another grant (a new token) than `before` named, `held`
 * after `queued` (the first waiter took it), `queued` after anything else, or `queued` behind another first waiter.
 * Nobody able only to notify can make the key move, so a flood of forged notifications never counts as moved.
 */
function keyMoved(before: ClaimRefusal | undefined, now: ClaimRefusal): boolean {
  if (now.reason === 'held') return before?.reason === 'queued' || (before?.reason === 'held' && before.token !== now.token);
  if (now.reason !== 'queued') return false;
  if (before?.reason !== 'queued') return true;
  return before.first.holder !== now.first.holder || before.first.arrivedAt !== now.first.arrivedAt;
}

/**
 * Store ms until the refusal may no longer hold: the holder's expiry (`held`, `run-already-acquired`), the end
 * of a hold (`held-back`: the wait sleeps until then instead of polling), the first waiter's place (`queued`), or
 * `null` when no time says when to
 * try (`recovery-required`, `state-mismatch`: rechecked every `recheckMs` / `pollMs`).
 */
function untilFreeMs(refusal: ClaimRefusal): number | null {
  switch (refusal.reason) {
    case 'held':
    case 'run-already-acquired':
      return refusal.expiresAt === null ? null : refusal.expiresAt - refusal.now;
    case 'held-back':
      return refusal.heldUntil - refusal.now;
    case 'queued':
      // NOTE: the first waiter leaves when its place expires, if it stopped asking; a grant to it is heard from
      // the store at the next attempt (a refresh), its release by notification.
      return refusal.first.expiresAt - refusal.now;
    default:
      return null;
  }
}
