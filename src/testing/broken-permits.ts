/**
 * Deliberately broken semaphores, for the planted-bug checks of issue 25: a memory store (no other bug planted)
 * whose `acquirePermit` has one classic semaphore bug. The semaphore race checks must catch each of them, and
 * the conformance specs the one a single caller can hit.
 */
import { KeyLock } from '../adapters/memory/key-lock.js';
import type { ManualClock } from '../clock.js';
import { acquirePermit, permitOf, type AcquirePermitCommand, type AcquirePermitOutcome, type PermitCandidate } from '../fence/permits.js';
import * as transitions from '../fence/transitions.js';
import type { LeaseRecord, StoreTime } from '../fence/types.js';
import type { Store } from '../store.js';
import { assertSemaphore } from '../validate.js';
import { brokenMemoryStoreOver, type BrokenMemoryStore } from './broken-stores.js';

/** A classic semaphore bug, planted in a memory store's `acquirePermit`. */
export type PlantedPermitBug =
  /**
   * Counts the live permits in one step and grants in another, a round trip (a scheduled task) later, trusting the
   * count: as `SCARD`, then `SADD` of a free slot, or `SELECT count(*)` then `INSERT` outside one transaction.
   */
  | 'count-then-grant'
  /** Mints each permit's token from its own key only (as a plain claim does), not above every permit's. */
  | 'per-key-tokens';

/** Every planted semaphore bug. */
export const PLANTED_PERMIT_BUGS: readonly PlantedPermitBug[] = ['count-then-grant', 'per-key-tokens'];

/** A broken memory store that offers semaphores. */
export type BrokenPermitStore = BrokenMemoryStore & Required<Pick<Store, 'acquirePermit'>>;

/**
 * A memory store whose `acquirePermit` has `bug` planted. `roundTrip` is awaited between the count and the grant of
 * `count-then-grant` (the race passes a scheduled task, so other requests may land in between).
 */
export function createBrokenPermitStore(clock: ManualClock, bug: PlantedPermitBug, roundTrip: () => Promise<unknown>): BrokenPermitStore {
  const records = new Map<string, LeaseRecord>();
  const lock = new KeyLock();
  const { store, tokenFloor } = brokenMemoryStoreOver({ records, lock }, clock, null, roundTrip);

  /** Every permit record of `semaphore` (a scan: planted-bug runs have few records). */
  const candidatesOf = (semaphore: string): PermitCandidate[] =>
    [...records].flatMap(([key, record]) => {
      const permit = permitOf(key);
      return permit?.semaphore === semaphore ? [{ index: permit.index, record, busy: !lock.isIdle(key) }] : [];
    });
  const liveAt = (semaphore: string, now: StoreTime): number =>
    candidatesOf(semaphore).filter(({ record }) => {
      const expiresAt = record?.grant?.expiresAt;
      return expiresAt === null || (expiresAt !== undefined && now < expiresAt);
    }).length;
  /** The core's decision over the records as they are now with `limit`, stored; the answer shows the command's limit. */
  const decide = (command: AcquirePermitCommand, limit: number): AcquirePermitOutcome => {
    const now = clock();
    const { key, transition } = acquirePermit(candidatesOf(command.semaphore), { ...command, limit }, now, tokenFloor());
    let { outcome } = transition;
    if (key !== null && transition.changed && transition.record !== null && outcome.ok) {
      let record = transition.record;
      if (bug === 'per-key-tokens') {
        // NOTE: the bug: the token is the key's next (claim's own mint), not above every permit's.
        const { semaphore: _semaphore, limit: _limit, ...fields } = command;
        record = transitions.claim(records.get(key) ?? null, { ...fields, key }, now, tokenFloor()).record as LeaseRecord;
        outcome = { ...outcome, token: record.token };
      }
      records.set(key, record);
    }
    return { ...outcome, limit: command.limit };
  };

  const acquire = async (command: AcquirePermitCommand): Promise<AcquirePermitOutcome> => {
    assertSemaphore(command.semaphore, command.limit);
    if (bug !== 'count-then-grant') return decide(command, command.limit);
    const counted = acquirePermit(candidatesOf(command.semaphore), command, clock(), tokenFloor());
    // NOTE: full, or a re-delivery answered: nothing to grant.
    if (!counted.transition.outcome.ok || counted.key === null) return counted.transition.outcome;
    await roundTrip();
    // NOTE: the bug: the count said there was room, so the grant makes room for one more, whatever is live now.
    return decide(command, Math.max(command.limit, liveAt(command.semaphore, clock()) + 1));
  };
  return { ...store, id: `broken-permits:${bug}`, acquirePermit: acquire };
}
