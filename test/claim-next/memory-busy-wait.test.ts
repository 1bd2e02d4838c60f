/**
 * The memory store's claim-next waits for a busy claimable key (a fenced write's callback running) and decides
 * again under that key's lock. Deciding again may find another key busy and claimable: waiting for it while still
 * holding the first key's lock let two claim-next calls each hold the key the other waited for, and both (and every
 * later operation on either key) hung forever. Found while chasing a chaos queue run (memory) whose round stalled.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { ClaimNextCommand, ClaimNextGranted, ClaimNextOutcome } from '../../src/fence/claim-next.js';
import type { Fence } from '../../src/fence/types.js';

const SET = 'work';
const command = (holder: string, expect: Record<string, string>): ClaimNextCommand => ({
  set: SET,
  holder,
  runId: `${holder}-run`,
  secret: `${holder}-secret`,
  ttlMs: 100,
  attributes: {},
  onExpired: 'take-over',
  expect,
});

/** Settles with `promise`'s value, or `'hung'` after `ms` of real time. */
const within = <T>(promise: Promise<T>, ms: number): Promise<T | 'hung'> =>
  Promise.race([promise, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), ms))]);

describe('memory claim-next waiting for busy keys', () => {
  it('two calls that each wait for the key the other holds both settle', async () => {
    let now = 1_000;
    const store = createMemoryStore({ clock: () => now });
    await store.setKeyState({ key: 'a', values: { x: '1', y: '0' }, by: 'setup' });
    await store.setKeyState({ key: 'b', values: { x: '1', y: '1' }, by: 'setup' });
    await store.addItems({ set: SET, keys: ['a', 'b'] });
    // A fenced write held open on each key: both busy.
    const gates: Array<() => void> = [];
    const writes: Array<Promise<unknown>> = [];
    for (const key of ['a', 'b']) {
      const claim = command(`setup-${key}`, {});
      const granted = (await store.claimNext(claim)) as ClaimNextGranted;
      expect(granted.key).toBe(key);
      const fence: Fence = { key, token: granted.token, secret: claim.secret, holder: claim.holder, runId: claim.runId };
      writes.push(store.fencedWrite(fence, () => new Promise<void>((resolve) => gates.push(resolve))));
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(gates).toHaveLength(2);
    now += 500; // both grants expired: both keys claimable, and busy
    // Queued behind the writes: a changes so that it suits only the second call, b so that it suits only the first.
    const changes = [
      store.setKeyState({ key: 'a', values: { x: '0', y: '1' }, by: 'op' }),
      store.setKeyState({ key: 'b', values: { y: '0' }, by: 'op' }),
    ];
    // The first call (x=1) waits for a; the second (y=1: a does not suit it yet) waits for b.
    const first = store.claimNext(command('first', { x: '1' }));
    const second = store.claimNext(command('second', { y: '1' }));
    for (const open of gates) open();
    await Promise.all([...writes, ...changes]);
    // Under a's lock the first call finds a changed and b busy; under b's the second finds b changed and a busy.
    const outcomes = (await within(Promise.all([first, second]), 2_000)) as ClaimNextOutcome[] | 'hung';
    expect(outcomes).not.toBe('hung');
    expect((outcomes as ClaimNextOutcome[]).map((outcome) => (outcome.ok ? outcome.key : outcome.reason))).toEqual(['b', 'a']);
  });
});
