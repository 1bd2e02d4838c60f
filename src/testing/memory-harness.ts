/**
 * The memory store's harness for the shared suites: a manual store clock the tests advance, a ledger kept
 * in an array that fenced writes push to while the store holds the key's lock, and `expireNow` as a jump
 * of the clock to the grant's expires-at. Also the harness of the planted-bug stores, and an example of
 * the smallest harness a store author writes.
 */
import { createMemoryStore, type MemoryStore } from '../adapters/memory/index.js';
import { createManualClock, type ManualClock } from '../clock.js';
import { InvalidArgumentError } from '../errors.js';
import { describe } from '../validate.js';
import type { StoreHarness } from './harness.js';

/** The clock every memory harness starts at (a realistic epoch, so ISO dates in messages look right). */
export const MEMORY_EPOCH: number = Date.UTC(2026, 0, 1);

/** A store the memory harness can drive: a `MemoryStore` or a deliberately broken look-alike. */
export type MemoryLikeStore = Omit<MemoryStore, 'addItems' | 'removeItems' | 'claimNext' | 'acquirePermit'>;

/** Builds a harness around a memory(-like) store made on the harness's manual clock. */
export function createMemoryHarness<S extends MemoryLikeStore = MemoryStore>(
  makeStore: (clock: ManualClock) => S = (clock) => createMemoryStore({ clock }) as unknown as S,
): StoreHarness<S> & { readonly clock: ManualClock } {
  if (typeof makeStore !== 'function')
    throw new InvalidArgumentError(`makeStore must be a function of the harness clock returning a store, got ${describe(makeStore)}`);
  const clock = createManualClock(MEMORY_EPOCH);
  const store = makeStore(clock);
  const ledgers = new Map<string, string[]>();
  let keys = 0;
  const ledgerOf = (key: string): string[] => {
    const ledger = ledgers.get(key) ?? [];
    ledgers.set(key, ledger);
    return ledger;
  };
  return {
    store,
    clock,
    connect: async () => store,
    // NOTE: the push runs inside the store's fenced write, under the key's lock: applied iff the fence held.
    appendUnderFence: (leases, lease, entry, options) => leases.fencedWrite(lease, () => void ledgerOf(lease.key).push(entry), options),
    fencedAppend: (fence, entry, options, refuse) =>
      store.fencedWrite(
        fence,
        (context) => {
          const ledger = ledgerOf(fence.key);
          // NOTE: the memory store cannot undo the push, so a refusing write refuses before it (after reading).
          if (refuse !== undefined && ledger.length >= 0) context.refuse(refuse.code, refuse.detail);
          ledger.push(entry);
        },
        options,
      ),
    readLedger: async (key) => [...ledgerOf(key)],
    expireNow: async (key) => {
      const expiresAt = store.record(key)?.grant?.expiresAt ?? null;
      if (expiresAt !== null && expiresAt > clock()) clock.set(expiresAt);
    },
    advanceClock: (ms) => clock.advance(ms),
    // NOTE: the ledger is a JS array the callback pushes to: a callback that throws after pushing is not undone.
    rollsBackWrites: false,
    freshKey: (label = 'key') => `${label}:${++keys}`,
    close: async () => undefined,
  };
}
