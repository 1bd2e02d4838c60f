/**
 * `leasefence/store`: for store authors. Everything a `Store` adapter needs, and nothing an application
 * needs: the `Store` and `TokenGate` contracts, the commands a store receives and the outcomes it answers,
 * the pure transitions that decide them (as the `transitions` namespace, so that `transitions.claim` is
 * never confused with `leases.claim`), the fence checks, token minting, secret hashing, the errors a store
 * throws and the helpers leasefence's own adapters use. Every adapter in this package (memory, Postgres,
 * Redis, SQLite) imports only this entry's modules and the pure core; test/structure/imports.test.ts checks it.
 *
 * ```ts
 * import { transitions, type LeaseRecord, type Store } from 'leasefence/store';
 *
 * // inside your store's atomic step, with `record` as it is and `now` from the store's clock:
 * const { outcome, record: next } = transitions.claim(record, command, now);
 * ```
 */
export type { Store, WriteContextOf } from './store.js';
export { gateResetOutcome, readGateResetOptions, resetExpectationHolds, type GateResetExpectation, type TokenGate } from './gate.js';
export type * from './fence/types.js';
export type * from './fence/operations.js';
/** Claim-next's commands and outcomes (`addItems`, `removeItems`, `claimNext`: optional, all three or none). */
export type * from './fence/claim-next.js';
/**
 * Semaphores (`acquirePermit`: optional): the commands and outcomes, the decision over a semaphore's permit records
 * (a store applies the returned record atomically), and the permit keys.
 */
export type * from './fence/permits.js';
export { acquirePermit, MAX_PERMITS, permitKey, permitOf } from './fence/permits.js';
/**
 * The pure transitions, one per store operation: `(record, command, now) -> { record, changed, outcome }`.
 * A store applies the returned record atomically and answers the outcome.
 */
export * as transitions from './fence/transitions.js';
export type { Transition } from './fence/transitions.js';
export { checkFence, expiredEnding, isLive } from './fence/verdict.js';
export { mintToken } from './fence/token.js';
export type { ClaimQueue } from './fence/queue.js';
export { enqueue, liveWaiters, MAX_WAITER_IDS, MAX_WAITERS, positionOf } from './fence/queue.js';
export { SUBMISSION_RETENTION } from './fence/types.js';
export { refuseWrite, WriteRefusedSignal, writeRefused } from './write-refusal.js';
export { toListedInspection, type ListedCheckpoint, type ListedInspection, type StoreListPage, type StoreListQuery } from './list.js';
export { hashSecret } from './secret-hash.js';
export { newSecret } from './secret.js';
export { leaseFence, type Lease } from './lease.js';
export { monotonicClock, systemClock, type Clock } from './clock.js';
export {
  assertName,
  assertSemaphore,
  assertStorableText,
  describe as describeValue,
  MAX_ATTRIBUTES,
  MAX_NAME_BYTES,
  MAX_TOKEN,
  readOptions,
  toAttributes,
} from './validate.js';
export { loggableCause, redactText } from './redact.js';
export { unreadableCheckpoint } from './unreadable-checkpoint.js';
export {
  InvalidArgumentError,
  isLeaseError,
  isStoreFailure,
  LeaseError,
  OutcomeUnknownError,
  StoreUnavailableError,
  type LeaseErrorCode,
} from './errors.js';
