/**
 * `leasefence`: for applications. Leases, their results and errors, `withLease`, waiting, the operator API
 * and the diagnostics channels. Store authors import `leasefence/store`, observability code `leasefence/diagnostics`, leader election `leasefence/election`; the stores are `leasefence/memory`,
 * `leasefence/postgres`, `leasefence/redis` and `leasefence/sqlite`. Re-exports only.
 */
export { createLeases } from './leases.js';
export type {
  ClaimOptions,
  ClaimResult,
  ClaimResultOf,
  FencedWriteOptions,
  FenceOptions,
  Granted,
  LeaseInspection,
  Leases,
  LeasesOptions,
  ReleaseOptions,
  RevokeOptions,
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
  ClaimRecoveryRequired,
  FencedWriteOutcome,
  GateOutcome,
  GateRefusal,
  GateRecord,
  RecoverOutcome,
  ReleaseOutcome,
  RenewOutcome,
  RevokeOutcome,
} from './fence/operations.js';
export type { Ending, FenceRefusal, LeaseAttributes } from './fence/types.js';
export { describeRefusal } from './describe.js';
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
