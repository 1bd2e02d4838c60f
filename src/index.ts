export { createLeases } from './leases.js';
export type {
  ClaimOptions,
  ClaimResult,
  FenceOptions,
  FencedWriteOptions,
  Granted,
  LeaseInspection,
  Leases,
  LeasesOptions,
  ReleaseOptions,
  RevokeOptions,
} from './leases.js';
export { Lease, type Checkpoint, type LeaseJson } from './lease.js';
export type { Timers, WithLeaseCompleted, WithLeaseOptions, WithLeaseOutcome } from './with-lease.js';
export type { Store, WriteContextOf } from './store.js';
export type { TokenGate } from './gate.js';
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
} from './errors.js';
export { createManualClock, systemClock, type Clock, type ManualClock } from './clock.js';
export { DEFAULT_MAX_CHECKPOINT_BYTES, MAX_TTL_MS } from './validate.js';
export { assertName } from './validate.js';
export { loggableCause } from './redact.js';
export * from './fence/index.js';
