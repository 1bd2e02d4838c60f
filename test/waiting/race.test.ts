/**
 * The race "release between subscribe and claim" (and "release while the claim is in flight"), with
 * fast-check's scheduler ordering every step: each store operation is applied and answered at a moment
 * the scheduler picks, and so is each notification. Whatever the order, every waiter is granted without a
 * timer firing (the holder never expires and the re-check is far away), one grant at a time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryStore, type MemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases, type Store } from '../../src/index.js';

/** `inner` with every claim, release and subscription applied, and answered, when the scheduler says. */
function scheduledStore(s: fc.Scheduler, inner: MemoryStore): Store {
  const step =
    <A extends unknown[], R>(label: string, run: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await s.schedule(Promise.resolve(), `${label} applies`);
      const outcome = await run(...args);
      return s.schedule(Promise.resolve(outcome), `${label} answered`);
    };
  const watchFreed = inner.watchFreed as NonNullable<Store['watchFreed']>;
  return {
    ...inner,
    claim: step('claim', inner.claim),
    release: step('release', inner.release),
    watchFreed: step('subscribe', (key: string, onFreed: () => void) =>
      watchFreed(key, () => {
        void s.schedule(Promise.resolve(), `freed ${key} delivered`).then(onFreed);
      }),
    ),
  };
}

/**
 * Runs up to `steps` scheduled steps, one at a time; before each, every microtask chain reaches its next
 * scheduled step, so the scheduler chooses among all the steps that are ready (not only the first ones).
 */
async function run(s: fc.Scheduler, steps = Number.POSITIVE_INFINITY): Promise<void> {
  for (let step = 0; step < steps; step += 1) {
    await new Promise((resolve) => setImmediate(resolve));
    if (s.count() === 0) return;
    await s.waitOne();
  }
}

describe('waiting claims under every ordering of subscribe, claim, release and notification', () => {
  it('every waiter is granted by notifications alone, in token order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.integer({ min: 1, max: 3 }), fc.nat({ max: 6 }), async (s, waiters, releaseAfter) => {
        const inner = createMemoryStore();
        const held = await createLeases(inner, { holder: 'holder' }).claimOrThrow('k', { ttlMs: null });
        const store = scheduledStore(s, inner);
        const holder = createLeases(store, { holder: 'holder' });
        const waiting = createLeases(store, { holder: 'waiter' });
        const controller = new AbortController();
        const tokens: bigint[] = [];
        const results = Array.from({ length: waiters }, async () => {
          const result = await waiting.claim('k', {
            ttlMs: null,
            wait: { timeoutMs: 60_000, recheckMs: 600_000, signal: controller.signal },
          });
          if (!result.ok) return;
          tokens.push(result.lease.token);
          await waiting.release(result.lease);
        });
        // NOTE: the release starts after `releaseAfter` scheduled steps of the waiters: before they subscribe,
        // between subscribe and claim, while the claim is in flight, or after its answer.
        let released: Promise<unknown> = Promise.resolve();
        try {
          await run(s, releaseAfter);
          released = holder.release(held);
          await run(s);
          expect(tokens).toHaveLength(waiters);
          expect([...tokens].sort((a, b) => (a < b ? -1 : 1))).toEqual(tokens);
        } finally {
          controller.abort();
          await run(s);
          await Promise.allSettled([...results, released]);
        }
      }),
      { numRuns: 150 },
    );
  });
});
