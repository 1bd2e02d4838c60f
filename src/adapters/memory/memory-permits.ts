/**
 * Semaphores on the memory store (issue 25): `acquirePermit` over the records of a semaphore's permit keys, decided
 * by `fence/permits.ts#acquirePermit` in one synchronous step (atomic in this process). The store tells this index
 * of every permit key it creates, so an acquire reads the permits that exist (O(permits)), never every record.
 */
import {
  acquirePermit,
  permitKey,
  permitOf,
  type AcquirePermitCommand,
  type AcquirePermitOutcome,
  type PermitCandidate,
} from '../../fence/permits.js';
import type { LeaseRecord, StoreTime } from '../../fence/types.js';
import { assertSemaphore } from '../../validate.js';
import { decideWaitingForBusy, type Decided, type KeyLock } from './key-lock.js';
import { settle } from './memory-items.js';

/** What the permit methods need of the memory store they belong to. */
export interface MemoryPermitsHost {
  readonly records: ReadonlyMap<string, LeaseRecord>;
  readonly lock: KeyLock;
  readonly clock: () => StoreTime;
  readonly tokenFloor: () => bigint;
  readonly save: (key: string, record: LeaseRecord) => void;
}

/** The memory store's semaphores: the acquire, and the index of permit keys the store keeps it told of. */
export interface MemoryPermits {
  acquirePermit(command: AcquirePermitCommand): Promise<AcquirePermitOutcome>;
  /** A key the store just created: remembered when it is a permit key. */
  created(key: string): void;
}

/** Creates the semaphores of one memory store. */
export function createMemoryPermits(host: MemoryPermitsHost): MemoryPermits {
  /** The indexes of each semaphore's permit keys that have (or had) a record. */
  const indexes = new Map<string, Set<number>>();

  const created = (key: string): void => {
    const permit = permitOf(key);
    if (permit === null) return;
    const known = indexes.get(permit.semaphore) ?? new Set<number>();
    indexes.set(permit.semaphore, known);
    known.add(permit.index);
  };

  /**
   * The acquire at the store's now: the outcome, or a busy permit to wait for before deciding again. `owned`: the
   * permit key whose lock this call runs under (its earlier operations have settled), which is not busy for it.
   */
  const decide = (command: AcquirePermitCommand, owned: string | null): Decided<AcquirePermitOutcome> => {
    const now = host.clock();
    const candidates: PermitCandidate[] = [];
    for (const index of indexes.get(command.semaphore) ?? []) {
      const key = permitKey(command.semaphore, index);
      const record = host.records.get(key) ?? null;
      // NOTE: a permit whose fenced write's callback is running is busy: granting it would let that write's
      // checkpoint overwrite the new grant (as `SKIP LOCKED` skips a locked row).
      if (record !== null) candidates.push({ index, record, busy: key !== owned && !host.lock.isIdle(key) });
    }
    const { key, transition } = acquirePermit(candidates, command, now, host.tokenFloor());
    if (key !== null && transition.changed && transition.record !== null) host.save(key, transition.record);
    const { outcome } = transition;
    if (outcome.ok) return outcome;
    // NOTE: a permit stays busy for a few microtasks after its fenced write answered, so "write, release, acquire"
    // would answer full for the permit it just released: wait for the busy one and decide again.
    const busy = candidates.find((candidate) => candidate.busy && outcome.unavailable.includes(candidate.index) && outcome.nextAt === now);
    return busy === undefined ? outcome : { waitFor: permitKey(command.semaphore, busy.index) };
  };

  const acquireNow = (command: AcquirePermitCommand): AcquirePermitOutcome | Promise<AcquirePermitOutcome> => {
    assertSemaphore(command.semaphore, command.limit);
    return decideWaitingForBusy(host.lock, (owned) => decide(command, owned));
  };

  return {
    acquirePermit: (command) => settle(() => acquireNow(command)),
    created,
  };
}
