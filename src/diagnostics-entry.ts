/**
 * `leasefence/diagnostics`: the names of the `node:diagnostics_channel` channels leasefence publishes on, and
 * the shape of what it publishes, for observability code (the `leasefence/otel` bridge is built on them).
 * Applications do not need them to use leases. Re-exports only.
 *
 * ```ts
 * import diagnostics_channel from 'node:diagnostics_channel';
 * import { LEASE_LOST_CHANNEL, type LeaseLostEvent } from 'leasefence/diagnostics';
 *
 * diagnostics_channel.subscribe(LEASE_LOST_CHANNEL, (message) => {
 *   const lost = message as LeaseLostEvent;
 *   console.warn(`lost ${lost.key}: ${lost.code}`);
 * });
 * ```
 */
export {
  type ClaimRefusalReason,
  LEASE_LOST_CHANNEL,
  LEASE_OPERATIONS,
  operationChannel,
  type LeaseLostEvent,
  type LeaseOperation,
  type OperationEvent,
  type OperationOutcome,
  type OperationTracingChannel,
  WAIT_POLLING_CHANNEL,
  type WaitPollingEvent,
} from './events.js';
