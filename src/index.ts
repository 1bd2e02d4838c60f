export { createLeases } from './leases.js';
export type {
  ClaimOptions,
  ClaimResult,
  ClaimResultOf,
  FenceOptions,
  FencedWriteOptions,
  Granted,
  LeaseInspection,
  Leases,
  LeasesOptions,
  NoExtraOptions,
  ReleaseOptions,
  RevokeOptions,
  WaitedClaimResult,
} from './leases-types.js';
export type { WaitOptions } from './waiting/wait-options.js';
export type { ClaimRefusal, WaitedRefusal, WaitEnded } from './waiting/refusal.js';
export { Lease, type Checkpoint, type LeaseJson, type LoggableLease } from './lease.js';
export type { RunningLease, WithLeaseCompleted, WithLeaseLost, WithLeaseOptions, WithLeaseOutcome, WithLeaseStopped } from './leases-types.js';
export type { Timers } from './timers.js';
export type { Store, WriteContextOf } from './store.js';
export type { TokenGate } from './gate.js';
export { createOperator } from './operator.js';
export { LEASE_LOST_CHANNEL, LEASE_OPERATIONS, operationChannel } from './events.js';
export type { LeaseLostEvent, LeaseOperation, OperationEvent, OperationOutcome } from './events.js';
export type { GateInspection, LeasePage, ListedLease, ListQuery, Operator, OperatorGate, OperatorOptions } from './operator.js';
export { LIST_STATES, type LeaseState, type ListState, type StoreListPage, type StoreListQuery } from './list.js';
export {
  GateRefusedError,
  InvalidArgumentError,
  isLeaseError,
  isLeaseLostError,
  isStoreFailure,
  LeaseBusyError,
  LeaseError,
  LeaseLostError,
  LeaseUnconfirmedError,
  OutcomeUnknownError,
  RecoveryRequiredError,
  StoreUnavailableError,
  type LeaseErrorCode,
  type LeaseErrorJson,
} from './errors.js';
export { createManualClock, systemClock, type Clock, type ManualClock } from './clock.js';
export { DEFAULT_MAX_CHECKPOINT_BYTES, MAX_ATTRIBUTES, MAX_NAME_BYTES, MAX_TOKEN, MAX_TTL_MS } from './validate.js';
export { toLoggable } from './loggable.js';
export { assertName } from './validate.js';
export { loggableCause } from './redact.js';
export { hashSecret } from './secret-hash.js';
export * from './fence/index.js';
export { describeRefusal } from './describe.js';
