/**
 * Sets of items on the memory store (claim-next, issue 24 capability 1): which keys are items of which set and
 * when each is due, and the three optional Store methods over them. A key busy in another operation is skipped
 * (as `SKIP LOCKED` skips a locked row); when only busy keys are claimable, claim-next waits for the first one. The memory store keeps no index of
 * availability: it computes `availableSince` from each item's record at every claim-next (O(items of the set)),
 * which is the definition a server store's index must keep equal to.
 */
import {
  availableSince,
  claimNext,
  stateMatches,
  type AddItemsCommand,
  type AddItemsOutcome,
  type ClaimNextCommand,
  type ClaimNextOutcome,
  type ItemCandidate,
  type RemoveItemsCommand,
  type RemoveItemsOutcome,
  type SetItem,
} from '../../fence/claim-next.js';
import type { LeaseRecord, StoreTime } from '../../fence/types.js';
import { InvalidArgumentError } from '../../errors.js';
import { assertName, checkedItemKeys, checkedNotBefore, describe } from '../../validate.js';
import { decideWaitingForBusy, type Decided, type KeyLock } from './key-lock.js';

/** What the item methods need of the memory store they belong to. */
export interface MemoryItemsHost {
  readonly records: ReadonlyMap<string, LeaseRecord>;
  readonly lock: KeyLock;
  /** The store's clock (checked: finite epoch ms, or it throws `InvalidArgumentError`). */
  readonly clock: () => StoreTime;
  /** The token floor a claim mints above (the store's option and its store-wide highest token). */
  readonly tokenFloor: () => bigint;
  /** Stores a record a claim-next granted (and keeps the store-wide highest token). */
  readonly save: (key: string, record: LeaseRecord) => void;
}

/** The optional Store methods of claim-next, on the memory store. */
export interface MemoryItemsMethods {
  addItems(command: AddItemsCommand): Promise<AddItemsOutcome>;
  removeItems(command: RemoveItemsCommand): Promise<RemoveItemsOutcome>;
  claimNext(command: ClaimNextCommand): Promise<ClaimNextOutcome>;
}

/** Runs `step` now, turning a throw (a bad command, a bad clock reading) into a rejected promise. */
export function settle<T>(step: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(step());
  } catch (error) {
    return Promise.reject(error as Error);
  }
}

/** Creates the item methods of one memory store. Each applies in one synchronous step: atomic in this process. */
export function createMemoryItems(host: MemoryItemsHost): MemoryItemsMethods {
  /** The items of each set, by key. */
  const sets = new Map<string, Map<string, SetItem>>();
  /** The set each item key belongs to (a key is an item of at most one set). */
  const setOf = new Map<string, string>();

  const addItems = (command: AddItemsCommand): AddItemsOutcome => {
    const keys = checkedItemKeys(command.set, command.keys);
    const delay = checkedNotBefore(command.notBeforeMs);
    const { set } = command;
    const now = host.clock();
    for (const key of keys) {
      const other = setOf.get(key);
      if (other !== undefined && other !== set) return { ok: false, reason: 'in-another-set', set, key, otherSet: other, now };
    }
    const dueAt = now + delay;
    const items = sets.get(set) ?? new Map<string, SetItem>();
    sets.set(set, items);
    const added: string[] = [];
    for (const key of keys) {
      if (items.has(key)) continue;
      items.set(key, { set, key, dueAt });
      setOf.set(key, set);
      added.push(key);
    }
    return { ok: true, set, added, dueAt, now };
  };

  const removeItems = (command: RemoveItemsCommand): RemoveItemsOutcome => {
    const keys = checkedItemKeys(command.set, command.keys);
    const { set } = command;
    const now = host.clock();
    const items = sets.get(set);
    const removed: string[] = [];
    for (const key of keys) {
      if (items?.delete(key) !== true) continue;
      setOf.delete(key);
      removed.push(key);
    }
    if (items?.size === 0) sets.delete(set);
    return { ok: true, set, removed, now };
  };

  /**
   * Claim-next at the store's now: the outcome, or the busy claimable key to wait for before deciding again.
   * `owned`: the key whose lock this call runs under (its earlier operations have settled), which is therefore not
   * busy for it.
   */
  const decide = (command: ClaimNextCommand, owned: string | null): Decided<ClaimNextOutcome> => {
    const now = host.clock();
    const candidates: ItemCandidate[] = [];
    for (const item of sets.get(command.set)?.values() ?? []) {
      // NOTE: a key with an operation pending (a fenced write's callback running) is busy, as a row lock is to
      // `SKIP LOCKED`: granting it now would let that write's checkpoint overwrite the new grant.
      const busy = item.key !== owned && !host.lock.isIdle(item.key);
      candidates.push({ item, record: host.records.get(item.key) ?? null, busy });
    }
    const { key, transition } = claimNext(candidates, command, now, host.tokenFloor());
    if (key !== null && transition.changed && transition.record !== null) host.save(key, transition.record);
    const { outcome } = transition;
    if (outcome.ok) return outcome;
    // NOTE: only busy keys are claimable: wait for the first one's pending operation and decide again, rather
    // than answer idle (a key stays busy for a few microtasks after a fenced write answered, so "write, release,
    // claim-next" would otherwise miss the item it just released).
    const waitFor = candidates.find(
      ({ item, record, busy }) =>
        busy && stateMatches(record, command.expect) && (availableSince(record, item) ?? Number.POSITIVE_INFINITY) <= now,
    );
    return waitFor === undefined ? outcome : { waitFor: waitFor.item.key };
  };

  const claimNextNow = (command: ClaimNextCommand): ClaimNextOutcome | Promise<ClaimNextOutcome> =>
    decideWaitingForBusy(host.lock, (owned) => decide(command, owned));

  const checkedClaimNext = (command: ClaimNextCommand): ClaimNextOutcome | Promise<ClaimNextOutcome> => {
    assertName('set', command.set);
    if (command.onExpired !== 'take-over' && command.onExpired !== 'record-first')
      throw new InvalidArgumentError(`onExpired must be 'take-over' or 'record-first', got ${describe(command.onExpired)}`);
    return claimNextNow(command);
  };

  return {
    addItems: (command) => settle(() => addItems(command)),
    removeItems: (command) => settle(() => removeItems(command)),
    claimNext: (command) => settle(() => checkedClaimNext(command)),
  };
}
