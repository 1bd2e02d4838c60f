/**
 * `withLease`'s claim (and `withPermit`'s acquire) when it waits: the run's `signal` (which stops the run) also
 * ends the wait, next to `wait.signal`, through one local signal whose listeners are removed once the attempt
 * settles.
 */
import { readWaitOptions, type WaitOptions } from './wait-options.js';

/**
 * Calls `attempt` with the wait to use (the options' own when there is no run signal to link); `null` when the
 * run's `signal` aborted before a grant (the run is stopped).
 */
export function attemptUnlessStopped<R extends { readonly ok: boolean }>(
  options: { readonly wait?: WaitOptions; readonly signal?: AbortSignal },
  attempt: (wait: WaitOptions | undefined) => Promise<R>,
): Promise<R | null> {
  const stop = options.signal;
  // NOTE: not an async function: the usual run (no wait, or no run signal) gets the attempt's own promise,
  // without one more promise and its turns around it.
  if (options.wait === undefined || stop === undefined) return attempt(options.wait);
  return attemptLinked(options.wait, stop, attempt);
}

/** `attemptUnlessStopped` with both a wait and a run signal: the wait's signal is linked to the run's. */
async function attemptLinked<R extends { readonly ok: boolean }>(
  given: WaitOptions,
  stop: AbortSignal,
  attempt: (wait: WaitOptions | undefined) => Promise<R>,
): Promise<R | null> {
  const settings = readWaitOptions(given);
  const sources = settings.signal === null ? [stop] : [stop, settings.signal];
  const linked = new AbortController();
  const onAbort = (): void => linked.abort(stop.aborted ? stop.reason : settings.signal?.reason);
  for (const source of sources) source.addEventListener('abort', onAbort, { once: true });
  if (sources.some((source) => source.aborted)) onAbort();
  const wait: WaitOptions = {
    timeoutMs: settings.timeoutMs,
    signal: linked.signal,
    pollMs: settings.pollMs,
    recheckMs: settings.recheckMs,
    jitterMs: settings.jitterMs,
    ...(settings.queueTtlMs === null ? {} : { queueTtlMs: settings.queueTtlMs }),
  };
  try {
    const attempted = await attempt(wait);
    return !attempted.ok && stop.aborted ? null : attempted;
  } catch (error) {
    if (stop.aborted && error === stop.reason) return null;
    throw error;
  } finally {
    for (const source of sources) source.removeEventListener('abort', onAbort);
  }
}
