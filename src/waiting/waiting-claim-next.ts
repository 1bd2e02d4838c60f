/**
 * A claim-next or an acquire that waits (`claimNext(set, { wait })`, `acquirePermit(name, { limit, wait })`): tries,
 * and on `idle` / `full` sleeps until the answer's `nextAt` (plus jitter) or `pollMs`, whichever comes first, until
 * granted or the wait's `timeoutMs` / `signal` ends it. An acquire listens (`listen`: the release notifications of
 * permits 1..limit), so a release wakes it early and it stops polling (then `recheckMs` when no expiry says when);
 * no set publishes release notifications, so a waiting claim-next polls: `pollMs` bounds how late it notices a
 * release or an added item. Its schedule is the waiting claim's (`nextAttemptDelay`).
 */
import type { Clock } from '../clock.js';
import type { StoreTime } from '../fence/types.js';
import { loggable } from '../loggable.js';
import { onAbort } from './abort-watch.js';
import { nextAttemptDelay } from './schedule.js';
import type { WaitSettings } from './wait-options.js';

/** A refusal a waiting attempt sleeps on: when one may be granted as far as the store knows, and its now. */
export interface RetryableRefusal {
  readonly ok: false;
  readonly nextAt: StoreTime | null;
  readonly now: StoreTime;
}

/** The last refusal a waiting attempt saw, with how long it waited and what ended the wait. */
export type Waited<R> = R & {
  /** Ms from the call to the end of the wait (the worker's monotonic clock). */
  readonly waitedMs: number;
  /** What ended the wait: its `timeoutMs` passed, or its `signal` aborted. */
  readonly waitEnded: 'timeout' | 'aborted';
};

/** What the waiting needs: one attempt of checked input, the worker's clock and randomness. */
export interface ClaimNextWaitContext<G, R extends RetryableRefusal> {
  readonly attempt: () => Promise<G | R>;
  readonly monotonic: Clock;
  readonly random: () => number;
  /**
   * Starts listening for what may make an attempt succeed (calls `wake`: the release notifications of the permit
   * keys), and resolves once listening, with the function that stops it. Called once, before the first attempt,
   * so a release between a refusal and the next attempt is not missed. Absent: the wait polls.
   */
  readonly listen?: (wake: () => void) => Promise<() => void>;
}

/** Sleeps `ms`, or less when `signal` aborts or `wake` is called; resolves `'slept'`, `'woken'` or `'aborted'`. */
function sleep(ms: number, signal: AbortSignal | null, woken: Promise<void>): Promise<'slept' | 'woken' | 'aborted'> {
  if (signal?.aborted === true) return Promise.resolve('aborted');
  return new Promise((resolve) => {
    let stop: (() => void) | null = null;
    const timer = setTimeout(() => {
      stop?.();
      resolve('slept');
    }, ms);
    const end = (how: 'woken' | 'aborted'): void => {
      clearTimeout(timer);
      stop?.();
      resolve(how);
    };
    if (signal !== null) stop = onAbort(signal, () => end('aborted'));
    void woken.then(() => end('woken'));
  });
}

/** Tries until granted, waiting as `settings` says; rejects before any I/O if the signal has aborted. */
export async function waitForNext<G extends { readonly ok: true }, R extends RetryableRefusal>(
  settings: WaitSettings,
  context: ClaimNextWaitContext<G, R>,
): Promise<G | Waited<R>> {
  const { signal } = settings;
  // NOTE: a function, not a narrowed property read: the signal can abort while an attempt is on its way.
  const aborted = (): boolean => signal?.aborted === true;
  // NOTE: like every abortable API (and a waiting claim): an aborted signal rejects with its reason, before any I/O.
  if (aborted()) throw (signal as AbortSignal).reason;
  const startedAt = context.monotonic();
  let wakeUp = (): void => {};
  let woken = NEVER;
  const renewWoken = (): void => {
    woken = new Promise<void>((resolve) => {
      wakeUp = resolve;
    });
  };
  let stopListening: (() => void) | null = null;
  if (context.listen !== undefined) {
    renewWoken();
    stopListening = await context.listen(() => wakeUp());
  }
  try {
    for (;;) {
      const result = await context.attempt();
      // NOTE: a grant is returned even when the signal aborted meanwhile: the caller holds it and releases it.
      if (result.ok) return result as G;
      const refusal = result as R;
      const ended = (waitEnded: 'timeout' | 'aborted'): Waited<R> =>
        loggable({ ...refusal, waitedMs: context.monotonic() - startedAt, waitEnded });
      if (aborted()) return ended('aborted');
      const repliedAt = context.monotonic();
      const delay = nextAttemptDelay({
        // NOTE: `nextAt === now` is a busy item or permit (a row another operation holds): it frees in a moment, but
        // trying again at once would spin on a store that answers at once (PostgreSQL's SKIP LOCKED does).
        untilExpiryMs: refusal.nextAt === null ? null : Math.max(BUSY_RETRY_MS, refusal.nextAt - refusal.now),
        sinceReplyMs: 0,
        remainingMs: settings.timeoutMs - (repliedAt - startedAt),
        watching: stopListening !== null,
        jitter: context.random(),
        jitterMs: settings.jitterMs,
        pollMs: settings.pollMs,
        recheckMs: settings.recheckMs,
      });
      // NOTE: no attempt falls before the deadline: wait it out (an immediate answer would make a caller's loop
      // spin), unless a release wakes the wait first.
      const how = await sleep(delay ?? Math.max(0, startedAt + settings.timeoutMs - repliedAt), signal, woken);
      if (how === 'aborted') return ended('aborted');
      if (how === 'slept' && delay === null) return ended('timeout');
      if (how === 'woken') renewWoken();
    }
  } finally {
    stopListening?.();
  }
}

const NEVER: Promise<void> = new Promise(() => {});

/** The least wait before trying again after an answer whose `nextAt` is its `now` (a busy key). */
const BUSY_RETRY_MS = 5;
