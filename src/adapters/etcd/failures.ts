/**
 * What an etcd failure means for the caller. A read (range) applies nothing, so any failure of one is
 * `StoreUnavailableError`. A transaction that etcd refused as a whole (an invalid request: too large,
 * too many operations, a key twice, a permission) applied nothing and is rethrown as etcd's error. Any
 * other transaction failure may have applied (the request may have been committed before its reply was
 * lost, and the etcd3 client re-sends calls that failed on the network): `OutcomeUnknownError`.
 */
import { OutcomeUnknownError, StoreUnavailableError } from '../../errors.js';
import { loggableCause } from '../../redact.js';

/** The etcd3 client's error classes (and gRPC status names) for a request the server refused before applying it. */
const REFUSED = new Set([
  'GRPCInvalidArgumentError',
  'GRPCFailedPreconditionError',
  'GRPCOutOfRangeError',
  'GRPCUnauthenticatedError',
  'EtcdPermissionDeniedError',
  'EtcdAuthenticationFailedError',
  'EtcdInvalidAuthTokenError',
]);

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** A failure of a read: nothing was applied. */
export function readFailure(error: unknown, operation: string): StoreUnavailableError {
  return new StoreUnavailableError(`etcd ${operation}: reading the lease record failed: ${messageOf(error)}`, {
    cause: loggableCause(error),
  });
}

/** A failure of a transaction: etcd's own refusal as it is, else `OutcomeUnknownError`. */
export function txnFailure(error: unknown, operation: string): unknown {
  let name = '';
  try {
    name = typeof error === 'object' && error !== null ? String(error.constructor.name) : '';
  } catch {
    // NOTE: a Proxy or getter that throws is not one of etcd's refusals.
  }
  if (REFUSED.has(name)) return error;
  return new OutcomeUnknownError(
    `etcd ${operation}: the transaction was sent but its reply was lost (it may have been applied): ${messageOf(error)}`,
    {
      cause: loggableCause(error),
    },
  );
}
