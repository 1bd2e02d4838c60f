/**
 * The waiting claims of one `Leases` instance: a queue per key (see `key-waiters.ts`), created by the key's
 * first waiter and dropped with its last.
 */
import { KeyWaiters, type WaitingContext } from './key-waiters.js';
import type { WaitedClaimResult } from '../leases-types.js';
import { Waiter, type WaitRequest } from './waiter.js';

/** Waits in `key`'s queue until `request` is granted, its deadline passes or its signal aborts. */
export type WaitForClaim = (key: string, request: WaitRequest) => Promise<WaitedClaimResult>;

/** The waiting claims of one `Leases` instance. */
export function createWaitingClaims(context: WaitingContext): WaitForClaim {
  const queues = new Map<string, KeyWaiters>();
  return (key, request) => {
    const { signal } = request.settings;
    // NOTE: like every abortable API: an already aborted signal rejects with its reason, before any I/O.
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    return new Promise<WaitedClaimResult>((resolve, reject) => {
      let queue = queues.get(key);
      if (queue === undefined) {
        const created = new KeyWaiters(key, context, () => {
          if (queues.get(key) === created) queues.delete(key);
        });
        queues.set(key, created);
        queue = created;
      }
      queue.add(new Waiter(request, context.monotonic, resolve, reject));
    });
  };
}
