/**
 * `withLease` when its own machinery fails: timers that throw when the renewal is armed still release the
 * lease and detach the caller's signal, and the error is the rejection; numeric options that are not
 * numbers are refused with InvalidArgumentError before the claim, whatever their `valueOf` does.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { WithLeaseOptions } from '../../src/leases-types.js';
import { spyOn } from '../leases/spy-store.js';

const KEY = 'job:faults';
const TTL_MS = 60_000;

describe('withLease faults', () => {
  it('timers whose setTimeout throws: the lease is released, the caller signal detached, the error is the rejection', async () => {
    const spy = spyOn(createMemoryStore());
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs: TTL_MS });
    const boom = new Error('setTimeout is broken');
    const timers = {
      setTimeout: (): never => {
        throw boom;
      },
      clearTimeout: (): void => undefined,
    };
    const controller = new AbortController();
    let ran = false;
    const outcome = leases.withLease(
      KEY,
      async () => {
        ran = true;
      },
      { timers, signal: controller.signal },
    );
    await expect(outcome).rejects.toBe(boom);
    expect(ran).toBe(false);
    expect(spy.calls).toEqual(['claim', 'release']);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const other = createLeases(spy.store, { holder: 'other', ttlMs: TTL_MS });
    expect(await other.claim(KEY)).toMatchObject({ ok: true });
  });

  it.each<[string, unknown]>([
    ['a numeric string', '0.3'],
    ['an object whose valueOf gives 0.3', { valueOf: () => 0.3 }],
    [
      'an object whose valueOf throws',
      {
        valueOf: () => {
          throw new Error('valueOf');
        },
        toString: () => {
          throw new Error('toString');
        },
      },
    ],
    ['a bigint', 1n],
  ])('refuses renewAfterFraction as %s with InvalidArgumentError before claiming', async (_name, renewAfterFraction) => {
    const spy = spyOn(createMemoryStore());
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs: TTL_MS });
    await expect(leases.withLease(KEY, async () => 1, { renewAfterFraction } as WithLeaseOptions)).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    const throwing = {
      valueOf: () => {
        throw new Error('valueOf');
      },
      toString: () => {
        throw new Error('toString');
      },
    };
    await expect(leases.withLease(KEY, async () => 1, { safetyMarginMs: throwing } as unknown as WithLeaseOptions)).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(leases.withLease(KEY, async () => 1, { retryDelayMs: throwing } as unknown as WithLeaseOptions)).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(spy.calls).toEqual([]);
  });
});
