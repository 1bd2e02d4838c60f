/**
 * The names leasefence's OpenTelemetry instrumentation emits. OpenTelemetry has no semantic conventions
 * for leases or locks, so these follow its general naming guidelines: a `leasefence.` namespace, durations
 * as histograms in seconds (`s`), counts with UCUM annotations (`{claim}`), no `.total` suffix, and the
 * registry's `error.type` attribute for operations that threw. Keys (unbounded) go on spans only, never on
 * metrics.
 */

/** Metric names. */
export const METRIC = {
  /**
   * ObservableUpDownCounter `{lease}`: leases this process's workers hold, as far as they know (granted or
   * renewed here, not yet released, lost or past the expiry they announced; at most `maxHeldLeases`).
   */
  leasesHeld: 'leasefence.lease.held',
  /** Counter `{claim}`: claims by `leasefence.claim.outcome` (granted, held, recovery-required, held-back, state-mismatch, run-already-acquired). */
  claims: 'leasefence.claims',
  /** Counter `{refusal}`: fence refusals by `leasefence.operation` and `leasefence.refusal.reason`. */
  refusals: 'leasefence.fence.refusals',
  /** Histogram `s`: from the end of the previous grant (expiry, revoke, release) to the next grant, by `leasefence.previous.ending`. */
  takeoverDuration: 'leasefence.takeover.duration',
  /** Histogram `s`: how much of a grant was left when its renewal landed (small: the renew lagged behind). */
  renewMargin: 'leasefence.renew.margin',
  /** Counter `{write}`: fenced writes by `leasefence.outcome` (accepted, refused) and refusal reason. */
  fencedWrites: 'leasefence.fenced_writes',
  /** Counter `{lease}`: leases `withLease` lost, by `leasefence.lost.code` and `leasefence.refusal.reason`. */
  leasesLost: 'leasefence.lease.lost',
  /** Histogram `s`: each operation's duration, by `leasefence.operation`, `leasefence.outcome` and `error.type`. */
  operationDuration: 'leasefence.operation.duration',
} as const;

/** Attribute names. */
export const ATTRIBUTE = {
  operation: 'leasefence.operation',
  outcome: 'leasefence.outcome',
  claimOutcome: 'leasefence.claim.outcome',
  refusalReason: 'leasefence.refusal.reason',
  previousEnding: 'leasefence.previous.ending',
  lostCode: 'leasefence.lost.code',
  key: 'leasefence.lease.key',
  token: 'leasefence.lease.token',
  holder: 'leasefence.lease.holder',
  runId: 'leasefence.lease.run_id',
  /** The OpenTelemetry registry's attribute for the class of error an operation threw: a leasefence error code, or `_OTHER`. */
  errorType: 'error.type',
} as const;

/** The span of an operation: `leasefence <operation>` (low cardinality; the key is an attribute). */
export const spanName = (operation: string): string => `leasefence ${operation}`;
