/**
 * `leasefence`: for applications. Leases, their results and errors, `withLease`, waiting, the operator API
 * and the diagnostics channels. Store authors import `leasefence/store`, observability code `leasefence/diagnostics`, leader election `leasefence/election`; the stores are `leasefence/memory`,
 * `leasefence/postgres`, `leasefence/redis` and `leasefence/sqlite`. Re-exports only.
 */
export { createLeases } from './leases.js';
export type {
  AcquirePermitOptions,
  AcquirePermitResult,
  AcquirePermitResultOf,
  GrantedPermit,
  WaitedAcquirePermitResult,
  WaitedFull,
  WithPermitOptions,
  WithPermitOutcome,
  AddItemsOptions,
  ClaimNextOptions,
  ClaimNextResult,
  ClaimNextResultOf,
  WaitedClaimNextResult,
  WaitedIdle,
  GrantedNext,
  CheckOptions,
  CheckOutcome,
  CheckPassed,
  CheckTtlInsufficient,
  ClaimOptions,
  ClaimRefusal,
  ClaimResult,
  ClaimResultOf,
  ClaimRunAlreadyAcquired,
  FencedWriteOptions,
  FenceOptions,
  Granted,
  LeaseInspection,
  Leases,
  LeasesOptions,
  ReleaseOptions,
  RemoveOptions,
  RevokeOptions,
  SetKeyStateOptions,
  Submission,
  RunningLease,
  WaitedClaimResult,
  WithLeaseCompleted,
  WithLeaseLost,
  WithLeaseOptions,
  WithLeaseOutcome,
  WithLeaseStopped,
} from './leases-types.js';
export type { Timers } from './timers.js';
export type { WaitOptions } from './waiting/wait-options.js';
export type { WaitedRefusal } from './waiting/refusal.js';
export { Lease, type Checkpoint, type LeaseJson } from './lease.js';
export type {
  CheckpointOutcome,
  ClaimHeld,
  ClaimHeldBack,
  ClaimRecoveryRequired,
  ClaimStateMismatch,
  FencedWriteOutcome,
  GateOutcome,
  GateRefusal,
  GateRecord,
  RecoverOutcome,
  ReleaseOutcome,
  RemoveOutcome,
  RenewOutcome,
  ReplayConflict,
  RevokeOutcome,
  SetKeyStateOutcome,
  SubmissionReplayed,
  WriteRefusal,
} from './fence/operations.js';
export type { Ending, FenceRefusal, KeyState, LeaseAttributes, StateChange, SubmissionRecord } from './fence/types.js';
export { describeRefusal, type AddItemsRefusal, type DescribableRefusal } from './describe.js';
export type {
  AbandonedRun,
  AddItemsOutcome,
  ClaimNextIdle,
  OnExpired,
  RemoveItemsOutcome,
} from './fence/claim-next.js';
export { MAX_PERMITS, permitKey, type PermitHolder, type SemaphoreFull } from './fence/permits.js';
export { MAX_ITEMS_PER_CALL } from './validate.js';
export { refuseWrite } from './write-refusal.js';
export type { Store, WriteContextOf } from './store.js';
export type { TokenGate } from './gate.js';
export {
  createOperator,
  type ListedLease,
  type ListPage,
  type ListQuery,
  type Operator,
  type OperatorGate,
  type OperatorOptions,
} from './operator.js';
export type { LeaseState, ListState } from './list.js';
export {
  GateRefusedError,
  InvalidArgumentError,
  isLeaseError,
  isLeaseLostError,
  isStoreFailure,
  KeyHeldBackError,
  KeyQueuedError,
  LeaseBusyError,
  LeaseError,
  LeaseLostError,
  LeaseUnconfirmedError,
  OutcomeUnknownError,
  RecoveryRequiredError,
  ReplayConflictError,
  RunAlreadyAcquiredError,
  SemaphoreFullError,
  StateMismatchError,
  StoreUnavailableError,
  SubmissionReplayedError,
  TtlInsufficientError,
  UnsupportedOperationError,
  WriteRefusedError,
  type LeaseErrorCode,
  type LeaseErrorJson,
} from './errors.js';
