/**
 * A claim-next that waits (`claimNext(set, { wait })`): claims, and on `idle` sleeps until the answer's `nextAt`
 * (plus jitter) or `pollMs`, whichever comes first, until granted or the wait's `timeoutMs` / `signal` ends it.
 * No set publishes release notifications (a release, a recovery or an added item may make an item claimable
 * before `nextAt`), so a waiting claim-next polls: `pollMs` bounds how late it notices one. Its schedule is the
 * waiting claim's (`nextAttemptDelay`, without notifications).
 */
import type { Clock } from '../clock.js';
import type { ClaimNextIdle } from '../fence/claim-next.js';
import type { GrantedNext, WaitedIdle } from '../leases-types.js';
import { loggable } from '../loggable.js';
import { onAbort } from './abort-watch.js';
import { nextAttemptDelay } from './schedule.js';
import type { WaitSettings } from './wait-options.js';

/** What the waiting needs: one claim-next of checked input, the worker's clock and randomness. */
export interface ClaimNextWaitContext {
  readonly attempt: () => Promise<GrantedNext | ClaimNextIdle>;
  readonly monotonic: Clock;
  readonly random: () => number;
}

/** Sleeps `ms`, or less when `signal` aborts; resolves `true` when it slept the whole time. */
function sleep(ms: number, signal: AbortSignal | null): Promise<boolean> {
  if (signal?.aborted === true) return Promise.resolve(false);
  return new Promise((resolve) => {
    let stop: (() => void) | null = null;
    const timer = setTimeout(() => {
      stop?.();
      resolve(true);
    }, ms);
    if (signal !== null)
      stop = onAbort(signal, () => {
        clearTimeout(timer);
        resolve(false);
      });
  });
}

/** Claims the next item of the set, waiting as `settings` says; rejects before any I/O if the signal has aborted. */
export async function waitForNext(settings: WaitSettings, context: ClaimNextWaitContext): Promise<GrantedNext | WaitedIdle> {
  const { signal } = settings;
  // NOTE: a function, not a narrowed property read: the signal can abort while a claim-next is on its way.
  const aborted = (): boolean => signal?.aborted === true;
  // NOTE: like every abortable API (and a waiting claim): an aborted signal rejects with its reason, before any I/O.
  if (aborted()) throw (signal as AbortSignal).reason;
  const startedAt = context.monotonic();
  for (;;) {
    const result = await context.attempt();
    // NOTE: a grant is returned even when the signal aborted meanwhile: the caller holds it and releases it.
    if (result.ok) return result;
    const repliedAt = context.monotonic();
    const ended = (waitEnded: WaitedIdle['waitEnded']): WaitedIdle =>
      loggable({ ...result, waitedMs: context.monotonic() - startedAt, waitEnded });
    if (aborted()) return ended('aborted');
    const delay = nextAttemptDelay({
      untilExpiryMs: result.nextAt === null ? null : result.nextAt - result.now,
      sinceReplyMs: 0,
      remainingMs: settings.timeoutMs - (repliedAt - startedAt),
      watching: false,
      jitter: context.random(),
      jitterMs: settings.jitterMs,
      pollMs: settings.pollMs,
      recheckMs: settings.recheckMs,
    });
    // NOTE: no attempt falls before the deadline: wait it out (an immediate answer would make a caller's loop spin).
    if (delay === null)
      return (await sleep(Math.max(0, startedAt + settings.timeoutMs - repliedAt), signal)) ? ended('timeout') : ended('aborted');
    if (!(await sleep(delay, signal))) return ended('aborted');
  }
}
