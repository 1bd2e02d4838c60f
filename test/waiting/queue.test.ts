/**
 * The waiting claims of a `Leases` instance and the key's queue in the store (`fence/queue.ts`): a waiter's place is
 * taken when it arrives (not at the next release), so waiters of several instances are granted in arrival order even
 * when one instance's waiters arrive around another's; a waiter that gives up is dequeued at once; however many
 * wait in one instance, the claims stay bounded.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { MAX_WAITER_IDS } from '../../src/fence/queue.js';
import { createLeases } from '../../src/index.js';
import { countingStore } from './support/counting-store.js';

/** Resolves once the store's view satisfies `condition` (checked every 2 ms), failing after 5 s. */
async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const started = performance.now();
  while (!(await condition())) {
    if (performance.now() - started > 5_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const WAIT = { timeoutMs: 10_000 } as const;
const holdersOf = (waiters: readonly { readonly holder: string }[]): string[] => waiters.map((waiter) => waiter.holder);

describe('waiting claims and the key queue', () => {
  it("grants waiters of two instances in arrival order, an instance's later waiter after the other's earlier one", async () => {
    const store = createMemoryStore();
    const holder = createLeases(store, { holder: 'holder' });
    const a = createLeases(store, { holder: 'a' });
    const b = createLeases(store, { holder: 'b' });
    const held = await holder.claimOrThrow('job:1');
    const order: string[] = [];
    const waitFor = (leases: typeof a, label: string) =>
      leases.claim('job:1', { wait: WAIT }).then(async (result) => {
        if (!result.ok) throw new Error(`${label}: ${result.reason}`);
        order.push(label);
        await leases.release(result.lease);
      });
    const a1 = waitFor(a, 'a1');
    await until(async () => (await store.inspect('job:1')).waiters.length === 1, 'a1 queued');
    const b1 = waitFor(b, 'b1');
    await until(async () => (await store.inspect('job:1')).waiters.length === 2, 'b1 queued');
    const a2 = waitFor(a, 'a2');
    await until(async () => (await store.inspect('job:1')).waiters.length === 3, 'a2 queued');
    expect(holdersOf((await store.inspect('job:1')).waiters)).toEqual(['a', 'b', 'a']);
    await holder.release(held);
    await Promise.all([a1, b1, a2]);
    expect(order).toEqual(['a1', 'b1', 'a2']);
    expect((await store.inspect('job:1')).waiters).toEqual([]);
  });

  it('a waiter that times out or aborts is dequeued at once; a plain claim is granted when none waits', async () => {
    const store = createMemoryStore();
    const holder = createLeases(store, { holder: 'holder' });
    const waiting = createLeases(store, { holder: 'waiter' });
    const held = await holder.claimOrThrow('job:2');
    const abort = new AbortController();
    const timingOut = waiting.claim('job:2', { wait: { timeoutMs: 100 } });
    const aborted = waiting.claim('job:2', { wait: { timeoutMs: 10_000, signal: abort.signal } });
    await until(async () => (await store.inspect('job:2')).waiters.length === 2, 'both queued');
    abort.abort();
    expect(await aborted).toMatchObject({ ok: false, reason: 'held', waitEnded: 'aborted' });
    expect(await timingOut).toMatchObject({ ok: false, reason: 'held', waitEnded: 'timeout' });
    await until(async () => (await store.inspect('job:2')).waiters.length === 0, 'both dequeued');
    await holder.release(held);
    expect((await createLeases(store, { holder: 'plain' }).claim('job:2')).ok).toBe(true);
  });

  it(`${MAX_WAITER_IDS + 50} waiters in one instance: the claims stay bounded, the first ${MAX_WAITER_IDS} take places, all are granted in order`, async () => {
    const counting = countingStore(createMemoryStore());
    const holder = createLeases(counting.store, { holder: 'holder' });
    const waiting = createLeases(counting.store, { holder: 'waiter' });
    const held = await holder.claimOrThrow('job:3');
    const order: number[] = [];
    const total = MAX_WAITER_IDS + 50;
    const waits = Array.from({ length: total }, (_, i) =>
      waiting.claim('job:3', { runId: `r${i}`, wait: WAIT }).then(async (result) => {
        if (!result.ok) throw new Error(`waiter ${i}: ${result.reason}`);
        order.push(i);
        await waiting.release(result.lease);
      }),
    );
    await until(async () => (await counting.store.inspect('job:3')).waiters.length === MAX_WAITER_IDS, 'the first places taken');
    const before = counting.claims();
    await new Promise((resolve) => setTimeout(resolve, 200));
    // NOTE: no claim in a loop for the waiters past the first MAX_WAITER_IDS: they are named once places free.
    expect(counting.claims() - before).toBeLessThanOrEqual(1);
    await holder.release(held);
    await Promise.all(waits);
    expect(order).toEqual(Array.from({ length: total }, (_, i) => i));
  });
});
