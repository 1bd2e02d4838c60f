/**
 * Shared plumbing of the suites: one harness per `describe` block (opened before, closed after), and lease
 * APIs for simulated holders on it.
 */
import { createLeases } from '../leases.js';
import type { Leases, LeasesOptions } from '../leases-types.js';
import type { Lease } from '../lease.js';
import type { Store } from '../store.js';
import type { MakeStoreHarness, StoreHarness } from './harness.js';
import type { TestRunner } from './runner.js';

/** The TTL of example-based specs: long enough that real servers never expire a grant on their own. */
export const SPEC_TTL_MS = 60_000;

/** What the specs of one suite share: the runner, the open harness, lease APIs on its store. */
export interface SuiteContext<S extends Store> {
  readonly runner: TestRunner;
  readonly harness: StoreHarness<S>;
  /** A lease API for `holder` on the harness's store. */
  leasesFor(holder: string, options?: Omit<LeasesOptions, 'holder'>): Leases<S>;
}

/** Opens a harness before the enclosing `describe` block's tests and closes it after them. */
export function useHarness<S extends Store>(runner: TestRunner, makeHarness: MakeStoreHarness<S>): SuiteContext<S> {
  let harness: StoreHarness<S> | null = null;
  runner.beforeAll(async () => {
    harness = await makeHarness();
  });
  runner.afterAll(async () => {
    await harness?.close();
  });
  const context: SuiteContext<S> = {
    runner,
    get harness() {
      if (harness === null) throw new Error('the harness is not open yet');
      return harness;
    },
    leasesFor: (holder, options = {}) => createLeases(context.harness.store, { ttlMs: SPEC_TTL_MS, ...options, holder }),
  };
  return context;
}

/** Claims `key` for `leases` and returns the handle; fails the test when the claim is refused. */
export async function mustClaim<S extends Store>(
  leases: Leases<S>,
  key: string,
  options?: Parameters<Leases<S>['claim']>[1],
): Promise<Lease> {
  const result = await leases.claim(key, options);
  if (!result.ok)
    throw new Error(`expected ${leases.holder} to claim ${key}, got ${result.reason} (token ${'token' in result ? result.token : 'none'})`);
  return result.lease;
}

/** JSON text of any value with bigints, for "the secret appears nowhere" checks. */
export function textOf(value: unknown): string {
  return JSON.stringify(value, (_, item: unknown) => (typeof item === 'bigint' ? `${item}n` : item));
}
