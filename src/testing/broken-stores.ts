/**
 * Deliberately broken memory stores, for the planted-bug checks (`planted-bugs.ts`): each plants one
 * classic lease bug, and the race checkers must catch every one of them.
 */
import type { ManualClock } from '../clock.js';
import type { MemoryStore, MemoryWriteContext } from '../adapters/memory/index.js';
import { KeyLock } from '../adapters/memory/key-lock.js';
import type { FencedWriteOutcome } from '../fence/operations.js';
import * as transitions from '../fence/transitions.js';
import type { Transition } from '../fence/transitions.js';
import type { Fence, LeaseRecord, StoreTime } from '../fence/types.js';
import { checkFence } from '../fence/verdict.js';
import { refuseWrite } from '../write-refusal.js';

/** A classic lease bug, planted in a memory store. */
export type PlantedBug =
  /** The fenced write trusts the caller: it runs the write without checking the fence. */
  | 'unfenced-write'
  /** Renew without compare: the renewer (re)installs itself as the grant, like `SET key me PX ttl`. */
  | 'blind-renew'
  /** Claim reads the record, waits for a round trip (a scheduled task), then writes what it decided. */
  | 'non-atomic-claim'
  /** The fenced write checks the fence, then applies the write after a round trip (read-compare-write). */
  | 'check-then-write'
  /** Off by one: the fenced write treats `now === expiresAt` as still live. */
  | 'lenient-expiry';

/** Every planted bug. */
export const PLANTED_BUGS: readonly PlantedBug[] = [
  'unfenced-write',
  'blind-renew',
  'non-atomic-claim',
  'check-then-write',
  'lenient-expiry',
];

/**
 * A memory store with `bug` planted. `roundTrip` is awaited between the read and the write of the
 * non-atomic claim (the race suite passes a scheduled task, so other requests may land in between).
 */
export function createBrokenMemoryStore(clock: ManualClock, bug: PlantedBug, roundTrip: () => Promise<unknown>): MemoryStore {
  const records = new Map<string, LeaseRecord>();
  const lock = new KeyLock();
  const apply = <O>(key: string, step: (record: LeaseRecord | null, now: StoreTime) => Transition<O>): Promise<O> =>
    lock.run(key, () => {
      const { record, changed, outcome } = step(records.get(key) ?? null, clock());
      if (changed && record !== null) records.set(key, record);
      if (changed && record === null) records.delete(key);
      return outcome;
    });

  const store: MemoryStore = {
    id: `broken:${bug}`,
    claim: (command) => apply(command.key, (record, now) => transitions.claim(record, command, now)),
    renew: (command) => apply(command.fence.key, (record, now) => transitions.renew(record, command, now)),
    checkpoint: (command) => apply(command.fence.key, (record, now) => transitions.checkpoint(record, command, now)),
    release: (command) => apply(command.fence.key, (record, now) => transitions.release(record, command, now)),
    revoke: (command) => apply(command.key, (record, now) => transitions.revoke(record, command, now)),
    recover: (command) => apply(command.fence.key, (record, now) => transitions.recover(record, command, now)),
    setKeyState: (command) => apply(command.key, (record, now) => transitions.setKeyState(record, command, now)),
    remove: (command) => apply(command.key, (record, now) => transitions.remove(record, command, now)),
    inspect: (key) => lock.run(key, () => transitions.inspect(records.get(key) ?? null, key, clock())),
    fencedWrite: <T>(fence: Fence, write: (context: MemoryWriteContext) => T | Promise<T>) =>
      lock.run(fence.key, async (): Promise<FencedWriteOutcome<T>> => {
        const now = clock();
        const verdict = checkFence(records.get(fence.key) ?? null, fence, bug === 'lenient-expiry' ? now - 1 : now);
        if (!verdict.ok && bug !== 'unfenced-write') return verdict;
        const value = await write({ token: fence.token, now, refuse: refuseWrite });
        return { ok: true, value, token: fence.token, checkpoint: null, now };
      }),
    record: (key) => records.get(key) ?? null,
  };

  if (bug === 'blind-renew') {
    store.renew = (command) =>
      apply(command.fence.key, (record, now) => {
        const { fence, ttlMs } = command;
        if (record === null) return transitions.renew(record, command, now);
        const expiresAt = ttlMs === null ? null : now + ttlMs;
        const grant = {
          token: fence.token,
          holder: fence.holder,
          runId: fence.runId,
          secret: fence.secret,
          acquiredAt: record.grant?.acquiredAt ?? now,
          expiresAt,
          attributes: record.grant?.attributes ?? {},
        };
        return { record: { ...record, grant }, changed: true, outcome: { ok: true, key: record.key, token: fence.token, expiresAt, now } };
      });
  }
  if (bug === 'non-atomic-claim') {
    store.claim = async (command) => {
      const seen = records.get(command.key) ?? null;
      await roundTrip();
      const { record, changed, outcome } = transitions.claim(seen, command, clock());
      if (changed && record !== null) records.set(command.key, record);
      return outcome;
    };
  }
  if (bug === 'check-then-write') {
    store.fencedWrite = async <T>(fence: Fence, write: (context: MemoryWriteContext) => T | Promise<T>): Promise<FencedWriteOutcome<T>> => {
      const now = clock();
      const verdict = await lock.run(fence.key, () => checkFence(records.get(fence.key) ?? null, fence, now));
      if (!verdict.ok) return verdict;
      await roundTrip();
      const value = await write({ token: fence.token, now, refuse: refuseWrite });
      return { ok: true, value, token: fence.token, checkpoint: null, now };
    };
  }
  return store;
}
