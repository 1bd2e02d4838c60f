/**
 * The benchmark loops that call into a tree, bundled INTO each tree's library by library.ts (entry `cycles`),
 * so that every tree runs its own copy of them. NOTE: V8 keeps one set of inline caches per function
 * literal, shared by every closure made from it: one loop shared by two trees would see both trees' object
 * shapes (polymorphic property loads and calls) where a user's code sees one. (Not measured on its own:
 * the bias that an identical copy showed came from the slice order, see slices.ts.) Only plain code here: no import from `src/` (types aside).
 */
import type { Leases } from '../src/leases-types.js';
import type { Store } from '../src/store.js';
import type { RunningLease } from '../src/leases-types.js';

/** One claim + release of `key`; throws when the claim is refused (no contender may fail silently). */
export function claimRelease(leases: Leases, key: string, label: string): () => Promise<void> {
  return async () => {
    const claimed = await leases.claim(key);
    if (!claimed.ok) throw new Error(`${label}: not granted`);
    await leases.release(claimed.lease);
  };
}

/** `n` claim + release cycles of `key`, one after another (bench/memory-breakdown.ts). */
export function claimReleaseLoop(leases: Leases, key: string): (n: number) => Promise<void> {
  return async (n) => {
    for (let i = 0; i < n; i++) {
      const claimed = await leases.claim(key);
      if (!claimed.ok) throw new Error('not granted');
      await leases.release(claimed.lease);
    }
  };
}

/** withLease's usual `fn`: one parameter (no AbortSignal is made for it), returns the token. */
export const returnToken = async (lease: RunningLease): Promise<bigint> => lease.token;

/** A `fn` that takes the signal, so the run makes one. */
export const readSignal = async (_lease: RunningLease, signal: AbortSignal): Promise<boolean> => signal.aborted;

/** One withLease run of `work` on `key`; throws unless it completed. */
export function withLease(
  leases: Leases,
  key: string,
  work: (lease: RunningLease, signal: AbortSignal) => Promise<unknown>,
  label: string,
): () => Promise<void> {
  return async () => {
    const outcome = await leases.withLease(key, work);
    if (!outcome.ok) throw new Error(`${label}: withLease ${outcome.reason}`);
  };
}

const SECRET = '0123456789abcdef0123456789abcdef';

/** One claim + release of the store alone on `key`: its commands, without validation, secrets or handles. */
export function storeCycle(store: Store, key: string): () => Promise<void> {
  return async () => {
    const claimed = await store.claim({
      key,
      holder: 'bench',
      runId: null,
      secret: SECRET,
      ttlMs: 30_000,
      attributes: {},
      recovering: false,
    });
    if (!claimed.ok) throw new Error('store: not granted');
    await store.release({ fence: { key, token: claimed.token, secret: SECRET, holder: 'bench', runId: null, attributes: {} } });
  };
}

/** `n` cycles of the store alone on `key`, one after another (bench/memory-breakdown.ts). */
export function storeLoop(store: Store, key: string): (n: number) => Promise<void> {
  return async (n) => {
    for (let i = 0; i < n; i++) {
      const claimed = await store.claim({
        key,
        holder: 'bench',
        runId: null,
        secret: SECRET,
        ttlMs: 30_000,
        attributes: {},
        recovering: false,
      });
      if (!claimed.ok) throw new Error('store: not granted');
      await store.release({ fence: { key, token: claimed.token, secret: SECRET, holder: 'bench', runId: null, attributes: {} } });
    }
  };
}
