/**
 * Shared plumbing of the suites: one harness per `describe` block (opened before, closed after), and lease
 * APIs for simulated holders on it.
 */
import { afterAll, beforeAll } from 'vitest';
import { createLeases, type Leases, type LeasesOptions } from '../../src/leases.js';
import type { Lease } from '../../src/lease.js';
import type { Store } from '../../src/store.js';
import type { MakeStoreHarness, StoreHarness } from './harness.js';

/** The TTL of example-based specs: long enough that real servers never expire a grant on their own. */
export const SPEC_TTL_MS = 60_000;

export interface SuiteContext<S extends Store> {
  readonly harness: StoreHarness<S>;
  /** A lease API for `holder` on the harness's store. */
  leasesFor(holder: string, options?: Omit<LeasesOptions, 'holder'>): Leases<S>;
}

/** Opens a harness before the enclosing `describe` block's tests and closes it after them. */
export function useHarness<S extends Store>(makeHarness: MakeStoreHarness<S>): SuiteContext<S> {
  let harness: StoreHarness<S> | null = null;
  beforeAll(async () => {
    harness = await makeHarness();
  });
  afterAll(async () => {
    await harness?.close();
  });
  const context: SuiteContext<S> = {
    get harness() {
      if (harness === null) throw new Error('the harness is not open yet');
      return harness;
    },
    leasesFor: (holder, options = {}) => createLeases(context.harness.store, { ttlMs: SPEC_TTL_MS, ...options, holder }),
  };
  return context;
}

/** Claims `key` for `leases` and returns the handle; fails the test when the claim is refused. */
export async function mustClaim<S extends Store>(leases: Leases<S>, key: string, options?: Parameters<Leases<S>['claim']>[1]): Promise<Lease> {
  const result = await leases.claim(key, options);
  if (!result.ok) throw new Error(`expected ${leases.holder} to claim ${key}, got ${result.reason} (token ${result.token})`);
  return result.lease;
}

/** JSON text of any value with bigints, for "the secret appears nowhere" checks. */
export function textOf(value: unknown): string {
  return JSON.stringify(value, (_, item: unknown) => (typeof item === 'bigint' ? `${item}n` : item));
}
