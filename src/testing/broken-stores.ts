/**
 * Deliberately broken memory stores, for the planted-bug checks (`planted-bugs.ts`): each plants one
 * classic lease bug, and the race checkers must catch every one of them.
 */
import type { ManualClock } from '../clock.js';
import type { MemoryStore, MemoryWriteContext } from '../adapters/memory/index.js';
import { KeyLock } from '../adapters/memory/key-lock.js';
import type { FencedWriteOutcome, StoreFencedWriteOptions } from '../fence/operations.js';
import * as transitions from '../fence/transitions.js';
import type { Transition } from '../fence/transitions.js';
import type { Fence, LeaseRecord, StoreTime } from '../fence/types.js';
import { checkFence } from '../fence/verdict.js';
import { refuseWrite, WriteRefusedSignal, writeRefused } from '../write-refusal.js';

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
  | 'lenient-expiry'
  /** Key state that does not fence: `setKeyState` sets the values but leaves the grant running. */
  | 'ignores-key-state'
  /** A counter that dies with the record: a key removed and claimed again is granted its old tokens again. */
  | 'reissues-after-remove';

/** Every planted bug. */
export const PLANTED_BUGS: readonly PlantedBug[] = [
  'unfenced-write',
  'blind-renew',
  'non-atomic-claim',
  'check-then-write',
  'lenient-expiry',
  'ignores-key-state',
  'reissues-after-remove',
];

/** A memory store with one planted bug; it offers no sets and no semaphores (each has planted bugs of its own). */
export type BrokenMemoryStore = Omit<MemoryStore, 'addItems' | 'removeItems' | 'claimNext' | 'acquirePermit'>;

/**
 * A memory store with `bug` planted. `roundTrip` is awaited between the read and the write of the
 * non-atomic claim (the race suite passes a scheduled task, so other requests may land in between).
 */
export function createBrokenMemoryStore(clock: ManualClock, bug: PlantedBug, roundTrip: () => Promise<unknown>): BrokenMemoryStore {
  return brokenMemoryStoreOver({ records: new Map(), lock: new KeyLock() }, clock, bug, roundTrip).store;
}

/** The records and key lock a broken memory store runs on (the broken semaphores of `broken-permits.ts` share them). */
export interface BrokenMemoryState {
  readonly records: Map<string, LeaseRecord>;
  readonly lock: KeyLock;
}

/**
 * A memory store over `state` with `bug` planted (`null`: none), and its token floor (one above the highest token
 * of a removed record, as the memory store's).
 */
export function brokenMemoryStoreOver(
  state: BrokenMemoryState,
  clock: ManualClock,
  bug: PlantedBug | null,
  roundTrip: () => Promise<unknown>,
): { readonly store: BrokenMemoryStore; readonly tokenFloor: () => bigint } {
  const { records, lock } = state;
  /** As the memory store: tokens stay above those of removed records (unless `reissues-after-remove`). */
  let highestRemoved = 0n;
  const keep = (key: string, record: LeaseRecord | null): void => {
    if (record !== null) return void records.set(key, record);
    const removed = records.get(key);
    if (removed !== undefined && removed.token > highestRemoved) highestRemoved = removed.token;
    records.delete(key);
  };
  const apply = <O>(key: string, step: (record: LeaseRecord | null, now: StoreTime) => Transition<O>): Promise<O> =>
    lock.run(key, () => {
      const { record, changed, outcome } = step(records.get(key) ?? null, clock());
      if (changed) keep(key, record);
      return outcome;
    });
  const floor = (): bigint => (bug === 'reissues-after-remove' ? 0n : highestRemoved + 1n);

  /** The write, its refusal, then the checkpoint and submission, as the memory store applies them after the fence. */
  const applyWrite = async <T>(
    fence: Fence,
    write: (context: MemoryWriteContext) => T | Promise<T>,
    options: StoreFencedWriteOptions,
    record: LeaseRecord | null,
    now: StoreTime,
  ): Promise<FencedWriteOutcome<T>> => {
    let value: T;
    try {
      value = await write({ token: fence.token, now, refuse: refuseWrite });
    } catch (error) {
      if (!(error instanceof WriteRefusedSignal)) throw error;
      return writeRefused(fence, error, now);
    }
    let next = record;
    let checkpoint = null;
    if (options.checkpointJson !== undefined) {
      const saved = transitions.checkpoint(next, { fence, json: options.checkpointJson }, now);
      if (saved.outcome.ok && saved.record !== null) {
        next = saved.record;
        checkpoint = saved.outcome.checkpoint;
      }
    }
    if (options.submission === undefined || next === null) {
      if (next !== null && next !== record) records.set(fence.key, next);
      return { ok: true, value, token: fence.token, checkpoint, now };
    }
    const recorded = transitions.recordSubmission(next, fence, options.submission, now);
    records.set(fence.key, recorded.record);
    return { ok: true, value, token: fence.token, checkpoint, submission: recorded.submission, now };
  };

  const store: BrokenMemoryStore = {
    id: `broken:${bug}`,
    claim: (command) => apply(command.key, (record, now) => transitions.claim(record, command, now, floor())),
    renew: (command) => apply(command.fence.key, (record, now) => transitions.renew(record, command, now)),
    checkpoint: (command) => apply(command.fence.key, (record, now) => transitions.checkpoint(record, command, now)),
    release: (command) => apply(command.fence.key, (record, now) => transitions.release(record, command, now)),
    revoke: (command) => apply(command.key, (record, now) => transitions.revoke(record, command, now)),
    recover: (command) => apply(command.fence.key, (record, now) => transitions.recover(record, command, now)),
    setKeyState: (command) => apply(command.key, (record, now) => transitions.setKeyState(record, command, now)),
    remove: (command) => apply(command.key, (record, now) => transitions.remove(record, command, now)),
    dequeue: (command) => apply(command.key, (record, now) => transitions.dequeue(record, command, now)),
    inspect: (key) => lock.run(key, () => transitions.inspect(records.get(key) ?? null, key, clock())),
    fencedWrite: <T>(fence: Fence, write: (context: MemoryWriteContext) => T | Promise<T>, options: StoreFencedWriteOptions = {}) =>
      lock.run(fence.key, async (): Promise<FencedWriteOutcome<T>> => {
        const now = clock();
        const judged = bug === 'lenient-expiry' ? now - 1 : now;
        const record = records.get(fence.key) ?? null;
        const { submission } = options;
        const refused =
          submission === undefined
            ? checkFence(record, fence, judged)
            : (transitions.checkSubmission(record, fence, submission, judged) ?? { ok: true });
        if (!refused.ok && bug !== 'unfenced-write') return refused;
        return applyWrite(fence, write, options, record, now);
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
      return applyWrite(fence, write, {}, records.get(fence.key) ?? null, now);
    };
  }
  if (bug === 'ignores-key-state') {
    store.setKeyState = (command) =>
      apply(command.key, (record, now) => {
        const { record: next, changed, outcome } = transitions.setKeyState(record, command, now);
        // NOTE: the values are stored, but the grant runs on as if nothing had changed.
        if (!changed || next === null || record === null) return { record: next, changed, outcome };
        return { record: { ...next, grant: record.grant, ending: record.ending }, changed, outcome: { ...outcome, ended: null } };
      });
  }
  return { store, tokenFloor: floor };
}
