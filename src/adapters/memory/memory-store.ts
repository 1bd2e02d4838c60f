import { systemClock, type Clock } from '../../clock.js';
import type { ClaimCommand, StoreClaimOutcome, FencedWriteOutcome, StoreFencedWriteOptions } from '../../fence/operations.js';
import * as transitions from '../../fence/transitions.js';
import type { Transition } from '../../fence/transitions.js';
import type { Fence, LeaseRecord, StoreTime } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import type { Store } from '../../store.js';
import { InvalidArgumentError } from '../../errors.js';
import { describe, MAX_TOKEN, readOptions } from '../../validate.js';
import { WriteRefusedSignal, refuseWrite, writeRefused } from '../../write-refusal.js';
import { KeyLock } from './key-lock.js';
import { MemoryKeyIndex } from './memory-list.js';
import { FreedKeys } from './freed-keys.js';
import { createMemoryItems, type MemoryItemsMethods } from './memory-items.js';
import { createMemoryPermits, type MemoryPermits } from './memory-permits.js';

/** What a memory fenced write's callback receives. */
export interface MemoryWriteContext {
  /** The token of the grant the write runs under. */
  readonly token: bigint;
  /** The store's now when the fence was checked. */
  readonly now: StoreTime;
  /**
   * Refuses the write from inside the callback (after reading your own data): the store answers `write-refused`
   * with this code, and saves no checkpoint or submission. Refuse before changing your own data: the memory
   * store cannot roll back what the callback already did.
   */
  refuse(code: string, detail?: string): never;
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
   * derive from a clock. Every claim also mints above the last token of every record this store removed, so a
   * key removed and claimed again never reissues a token.
   * @default () => 0n
   */
  readonly tokenFloor?: () => bigint;
}

/** The in-memory store (with the optional claim-next and semaphore methods), with a test-only view of its records. */
export interface MemoryStore extends Store<MemoryWriteContext> {
  readonly addItems: MemoryItemsMethods['addItems'];
  readonly removeItems: MemoryItemsMethods['removeItems'];
  readonly claimNext: MemoryItemsMethods['claimNext'];
  readonly acquirePermit: MemoryPermits['acquirePermit'];
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
  /**
   * The highest token of any record this store removed: the floor that outlives a removed record. A store that
   * never removes mints the tokens it always did (each key from 1).
   */
  let highestRemoved = 0n;
  const lock = new KeyLock();
  const freed = new FreedKeys();
  const keyIndex = new MemoryKeyIndex(records, clock);

  /** Stores a key's record, telling the key index and the permit index of a key it creates. */
  const save = (key: string, record: LeaseRecord): void => {
    if (!records.has(key)) {
      keyIndex.added(key);
      permits.created(key);
    }
    records.set(key, record);
  };

  /** Applies `step` to the key's record at the store's now; `committed` sees the outcome once it is stored. */
  const applyNow = <C, O>(key: string, step: Step<C, O>, command: C, committed: Committed<O> | undefined): O => {
    const current = records.get(key) ?? null;
    const { record, changed, outcome } = step(current, command, clock());
    if (changed) {
      // NOTE: a key that had a record is no new key: one lookup of the map, not `save`'s two (at a million keys
      // each lookup is a likely cache miss).
      if (record !== null) {
        if (current === null) save(key, record);
        else records.set(key, record);
      } else if (current !== null) {
        if (current.token > highestRemoved) highestRemoved = current.token;
        records.delete(key);
        keyIndex.removed(key);
      }
    }
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

  /**
   * The floor of a claim's token: the option's, or one above the highest token of a removed record when that is
   * higher (`mintToken` may return the floor itself). Keys never removed keep counting 1, 2, 3 (the model's tokens).
   */
  const mintFloor = (): bigint => {
    const floor = tokenFloor();
    const aboveRemoved = highestRemoved + 1n;
    return floor > aboveRemoved ? floor : aboveRemoved;
  };
  const claimStep: Step<ClaimCommand, StoreClaimOutcome> = (record, command, now) => transitions.claim(record, command, now, mintFloor());
  const items = createMemoryItems({
    records,
    lock,
    clock,
    tokenFloor: mintFloor,
    save,
  });
  const permits = createMemoryPermits({ records, lock, clock, tokenFloor: mintFloor, save });

  return {
    id: `memory:${++storeCount}:${Math.random().toString(36).slice(2)}`,
    claim: (command) => apply(command.key, claimStep, command),
    renew: (command) => apply(command.fence.key, transitions.renew, command),
    checkpoint: (command) => apply(command.fence.key, transitions.checkpoint, command),
    release: (command) => apply(command.fence.key, transitions.release, command, freed.afterCommit),
    revoke: (command) => apply(command.key, transitions.revoke, command, freed.afterCommit),
    recover: (command) => apply(command.fence.key, transitions.recover, command),
    setKeyState: (command) => apply(command.key, transitions.setKeyState, command, freed.afterCommit),
    remove: (command) => apply(command.key, transitions.remove, command, freed.afterCommit),
    dequeue: (command) => apply(command.key, transitions.dequeue, command, freed.afterCommit),
    inspect: (key) => lock.run(key, () => transitions.inspect(records.get(key) ?? null, key, clock())),
    fencedWrite: <T>(fence: Fence, write: (context: MemoryWriteContext) => T | Promise<T>, writeOptions: StoreFencedWriteOptions = {}) =>
      // NOTE: the key stays locked while the callback runs, so no claim, renew or revoke can interleave
      // with it: the write is linearised at the moment the fence was checked.
      lock.run(fence.key, async (): Promise<FencedWriteOutcome<T>> => {
        const now = clock();
        const record = records.get(fence.key) ?? null;
        const { checkpointJson, submission } = writeOptions;
        const refused =
          submission === undefined
            ? checkFence(record, fence, now)
            : (transitions.checkSubmission(record, fence, submission, now) ?? { ok: true });
        if (!refused.ok) return refused;
        let value: T;
        try {
          value = await write({ token: fence.token, now, refuse: refuseWrite });
        } catch (error) {
          if (!(error instanceof WriteRefusedSignal)) throw error;
          return writeRefused(fence, error, now);
        }
        // NOTE: the same transitions at the same now: the key is still locked, the record unchanged.
        let next = record as LeaseRecord;
        let saved = null;
        if (checkpointJson !== undefined) {
          const { record: checkpointed, outcome } = transitions.checkpoint(next, { fence, json: checkpointJson }, now);
          if (!outcome.ok || checkpointed === null) return outcome as FencedWriteOutcome<T>;
          next = checkpointed;
          saved = outcome.checkpoint;
        }
        if (submission === undefined) {
          if (saved !== null) records.set(fence.key, next);
          return { ok: true, value, token: fence.token, checkpoint: saved, now };
        }
        const recorded = transitions.recordSubmission(next, fence, submission, now);
        records.set(fence.key, recorded.record);
        return { ok: true, value, token: fence.token, checkpoint: saved, submission: recorded.submission, now };
      }),
    list: keyIndex.list,
    watchFreed: freed.watch,
    // NOTE: the same in-process listeners: a revoke tells them (and a release, which a holder never hears
    // while it holds: its run stops listening before its release).
    watchRevoked: freed.watch,
    ...items,
    acquirePermit: permits.acquirePermit,
    record: (key) => records.get(key) ?? null,
  };
}
