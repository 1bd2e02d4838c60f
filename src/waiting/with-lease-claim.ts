/**
 * `withLease`'s claim when it waits: the run's `signal` (which stops the run) also ends the wait, next to
 * `wait.signal`, through one local signal whose listeners are removed once the claim settles.
 */
import type { ClaimOptions, ClaimResult, Leases, WaitedClaimResult, WithLeaseOptions } from '../leases-types.js';
import { readWaitOptions, type WaitOptions } from './wait-options.js';

/** Claims for `withLease`; `null` when the run's `signal` aborted before a grant (the run is stopped). */
export async function claimUnlessStopped(
  leases: Leases,
  key: string,
  options: WithLeaseOptions,
): Promise<ClaimResult | WaitedClaimResult | null> {
  const stop = options.signal;
  if (options.wait === undefined || stop === undefined) return leases.claim<ClaimOptions>(key, options);
  const settings = readWaitOptions(options.wait);
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
  };
  try {
    const claimed = await leases.claim<ClaimOptions>(key, { ...options, wait });
    return !claimed.ok && stop.aborted ? null : claimed;
  } catch (error) {
    if (stop.aborted && error === stop.reason) return null;
    throw error;
  } finally {
    for (const source of sources) source.removeEventListener('abort', onAbort);
  }
}
