import { systemClock, type Clock } from '../../clock.js';
import type { ClaimCommand, StoreClaimOutcome, FencedWriteOutcome, StoreFencedWriteOptions } from '../../fence/operations.js';
import * as transitions from '../../fence/transitions.js';
import type { Transition } from '../../fence/transitions.js';
import type { Fence, LeaseRecord, StoreTime } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import type { Store } from '../../store.js';
import { InvalidArgumentError } from '../../errors.js';
import { describe, MAX_TOKEN, readOptions } from '../../validate.js';
import { KeyLock } from './key-lock.js';
import { createMemoryList } from './memory-list.js';
import { FreedKeys } from './freed-keys.js';

/** What a memory fenced write's callback receives. */
export interface MemoryWriteContext {
  /** The token of the grant the write runs under. */
  readonly token: bigint;
  /** The store's now when the fence was checked. */
  readonly now: StoreTime;
}

/** Options of `createMemoryStore`. */
export interface MemoryStoreOptions {
  /**
   * The store's clock, in epoch milliseconds. Inject a manual clock to control expiry in tests and demos.
   * @default Date.now
   */
  readonly clock?: Clock;
  /**
   * A floor for new tokens, read at each claim (see `mintToken`). Useful to simulate stores whose tokens
   * derive from a clock.
   * @default () => 0n
   */
  readonly tokenFloor?: () => bigint;
}

/** The in-memory store, with a test-only view of its records. */
export interface MemoryStore extends Store<MemoryWriteContext> {
  /** The raw record of a key (including the secret): for tests and simulations only. */
  record(key: string): LeaseRecord | null;
}

let storeCount = 0;

/** The `clock` option, checked: a function, whose every reading must be finite epoch ms (else no operation applies). */
function checkedClock(clock: unknown): Clock {
  if (typeof clock !== 'function')
    throw new InvalidArgumentError(`clock must be a function returning epoch milliseconds, got ${describe(clock)}`);
  return () => {
    const now: unknown = clock();
    if (typeof now !== 'number' || !Number.isFinite(now))
      throw new InvalidArgumentError(`the memory store's clock returned ${describe(now)}, not finite epoch milliseconds`);
    return now;
  };
}

/** The `tokenFloor` option, checked: a function, whose every reading must be a bigint a token can grow from. */
function checkedTokenFloor(tokenFloor: unknown): () => bigint {
  if (typeof tokenFloor !== 'function')
    throw new InvalidArgumentError(`tokenFloor must be a function returning a bigint, got ${describe(tokenFloor)}`);
  return () => {
    const floor: unknown = tokenFloor();
    // NOTE: a number would mix with bigint tokens (a TypeError at the next claim), and a floor past
    // MAX_TOKEN would grant a token no handle can present.
    if (typeof floor !== 'bigint' || floor < 0n || floor > MAX_TOKEN)
      throw new InvalidArgumentError(`tokenFloor returned ${describe(floor)}, not a bigint from 0 to 2^63-1`);
    return floor;
  };
}

/** One of the pure transitions, as the store applies it to a key's record. */
type Step<C, O> = (record: LeaseRecord | null, command: C, now: StoreTime) => Transition<O>;
/** What runs once an outcome is stored (telling release watchers). */
type Committed<O> = (key: string, outcome: O) => O;

/**
 * Creates a lease store that lives in this process: every operation applies the pure transitions of
 * `fence/` atomically. Use it for tests, demos and single-process apps; data is lost when the process ends.
 *
 * ```ts
 * import { createLeases } from 'leasefence';
 * import { createMemoryStore } from 'leasefence/memory';
 *
 * const leases = createLeases(createMemoryStore(), { holder: 'worker-1' });
 * ```
 */
export function createMemoryStore(options?: MemoryStoreOptions): MemoryStore {
  const given = readOptions('createMemoryStore options', options, ['clock', 'tokenFloor']);
  const clock = given.clock === undefined ? systemClock : checkedClock(given.clock);
  const tokenFloor = given.tokenFloor === undefined ? () => 0n : checkedTokenFloor(given.tokenFloor);
  const records = new Map<string, LeaseRecord>();
  const lock = new KeyLock();
  const freed = new FreedKeys();

  /** Applies `step` to the key's record at the store's now; `committed` sees the outcome once it is stored. */
  const applyNow = <C, O>(key: string, step: Step<C, O>, command: C, committed: Committed<O> | undefined): O => {
    const { record, changed, outcome } = step(records.get(key) ?? null, command, clock());
    if (changed && record !== null) records.set(key, record);
    // NOTE: in the same task (not a `.then` on its promise): telling watchers costs no extra promise.
    return committed === undefined ? outcome : committed(key, outcome);
  };

  /** Runs `step` on the key's record atomically: now when nothing on the key is pending, else behind it. */
  const apply = <C, O>(key: string, step: Step<C, O>, command: C, committed?: Committed<O>): Promise<O> => {
    // NOTE: the usual case, a key nothing is pending on, runs at once without a closure for the lock (what
    // `lock.run` does for it too, after one more allocation).
    if (!lock.isIdle(key)) return lock.run(key, () => applyNow(key, step, command, committed));
    try {
      return Promise.resolve(applyNow(key, step, command, committed));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  };

  const claimStep: Step<ClaimCommand, StoreClaimOutcome> = (record, command, now) => transitions.claim(record, command, now, tokenFloor());

  return {
    id: `memory:${++storeCount}:${Math.random().toString(36).slice(2)}`,
    claim: (command) => apply(command.key, claimStep, command),
    renew: (command) => apply(command.fence.key, transitions.renew, command),
    checkpoint: (command) => apply(command.fence.key, transitions.checkpoint, command),
    release: (command) => apply(command.fence.key, transitions.release, command, freed.afterCommit),
    revoke: (command) => apply(command.key, transitions.revoke, command, freed.afterCommit),
    recover: (command) => apply(command.fence.key, transitions.recover, command),
    inspect: (key) => lock.run(key, () => transitions.inspect(records.get(key) ?? null, key, clock())),
    fencedWrite: <T>(fence: Fence, write: (context: MemoryWriteContext) => T | Promise<T>, writeOptions: StoreFencedWriteOptions = {}) =>
      // NOTE: the key stays locked while the callback runs, so no claim, renew or revoke can interleave
      // with it: the write is linearised at the moment the fence was checked.
      lock.run(fence.key, async (): Promise<FencedWriteOutcome<T>> => {
        const now = clock();
        const record = records.get(fence.key) ?? null;
        const verdict = checkFence(record, fence, now);
        if (!verdict.ok) return verdict;
        const value = await write({ token: fence.token, now });
        const { checkpointJson } = writeOptions;
        if (checkpointJson === undefined) return { ok: true, value, token: fence.token, checkpoint: null, now };
        // NOTE: the same checkpoint transition at the same now: the key is still locked, the record unchanged.
        const { record: next, outcome } = transitions.checkpoint(record, { fence, json: checkpointJson }, now);
        if (!outcome.ok || next === null) return outcome as FencedWriteOutcome<T>;
        records.set(fence.key, next);
        return { ok: true, value, token: fence.token, checkpoint: outcome.checkpoint, now };
      }),
    list: createMemoryList(records, clock),
    watchFreed: freed.watch,
    record: (key) => records.get(key) ?? null,
  };
}
