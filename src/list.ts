/**
 * Listing leases for operators: what a store's optional `list` takes and returns, the state of a listed
 * lease, and the checks on a list query (run before any I/O).
 *
 * A page is bounded by the records it EXAMINES, not by the ones it returns: a store reads at most `limit`
 * records per call (keyset paging on the key for memory and Postgres, one `SCAN` step per call on Redis)
 * and the state filter applies to those. So a call costs O(limit) whatever the filter, and a page may
 * hold fewer leases than `limit` (even none) while its `cursor` is not `null`: keep paging until it is.
 */
import { InvalidArgumentError } from './errors.js';
import type { StoreInspection } from './fence/operations.js';
import type { StoreTime } from './fence/types.js';
import { assertStorableText, describe, MAX_NAME_BYTES, utf8Length } from './validate.js';

/** What a store's `list` takes (already validated). */
export interface StoreListQuery {
  /** Only keys that start with this text (`''`: every key). */
  readonly prefix: string;
  /** Examine at most this many records. */
  readonly limit: number;
  /** Where the previous page stopped (`null`: from the start). Opaque: each store has its own format. */
  readonly cursor: string | null;
}

/**
 * A checkpoint as a listing shows it: who wrote it, when, and how large it is; never its JSON, which stays
 * in the store (a listing of many keys would otherwise carry every checkpoint, up to its size limit each).
 */
export interface ListedCheckpoint {
  /** The token of the grant that wrote (or adopted) it. */
  readonly token: bigint;
  /** When it was written, on the store's clock. */
  readonly writtenAt: StoreTime;
  /** The size of its JSON text, in UTF-8 bytes. */
  readonly bytes: number;
}

/** A record as a store's `list` returns it: what `inspect` answers, with the checkpoint summarized. */
export interface ListedInspection extends Omit<StoreInspection, 'checkpoint'> {
  readonly checkpoint: ListedCheckpoint | null;
}

/** `inspection` as a listing returns it, for a store that holds the checkpoint's JSON at hand anyway (memory). */
export function toListedInspection(inspection: StoreInspection): ListedInspection {
  const { checkpoint } = inspection;
  return {
    ...inspection,
    checkpoint:
      checkpoint === null ? null : { token: checkpoint.token, writtenAt: checkpoint.writtenAt, bytes: utf8Length(checkpoint.json) },
  };
}

/** A page of a store's `list`. */
export interface StoreListPage {
  /** The examined records that exist and match the prefix, each as `inspect` would answer for it (checkpoint summarized). */
  readonly leases: readonly ListedInspection[];
  /** Pass it back to continue after this page; `null` when the listing is complete. */
  readonly cursor: string | null;
}

/** Where a lease stands at the store's now. */
export type LeaseState = 'live' | 'expired' | 'released' | 'revoked';

/**
 * The states a listing can be filtered by: a `LeaseState`, `recovery-required` (a pending recovery) or
 * `held-back` (claims refused until a time that has not passed).
 */
export type ListState = LeaseState | 'recovery-required' | 'held-back';

/** Every `ListState`, in display order. */
export const LIST_STATES: readonly ListState[] = ['live', 'expired', 'released', 'revoked', 'recovery-required', 'held-back'];

/**
 * The state of an inspected lease at its `now`: its grant live or expired, else how its last grant ended.
 * (An expiry is recorded as an ending only when the next claim takes over, so a record without a grant
 * ended by release or revoke.)
 */
export function leaseState(inspection: Pick<StoreInspection, 'grant' | 'ending'>): LeaseState {
  if (inspection.grant !== null) return inspection.grant.live ? 'live' : 'expired';
  return inspection.ending?.kind === 'revoked' ? 'revoked' : 'released';
}

/**
 * Whether a lease matches a state filter: its state is listed, or it has a pending recovery and
 * `recovery-required` is, or it is held back at its `now` and `held-back` is.
 */
export function matchesStates(
  inspection: Pick<StoreInspection, 'grant' | 'ending' | 'recoveryRequired' | 'heldUntil' | 'now'>,
  states: ReadonlySet<ListState> | null,
): boolean {
  if (states === null) return true;
  if (states.has(leaseState(inspection)) || (inspection.recoveryRequired && states.has('recovery-required'))) return true;
  // NOTE: a store not yet keeping holds lists no `heldUntil`: read as none.
  const heldUntil = inspection.heldUntil ?? null;
  return states.has('held-back') && heldUntil !== null && inspection.now < heldUntil;
}

/** The largest page: a bound on what one call reads. */
export const MAX_LIST_LIMIT = 1000;

/** The default page size. */
export const DEFAULT_LIST_LIMIT = 100;

/** Checks a list query's prefix, limit and cursor. */
export function toStoreListQuery(prefix: unknown, limit: unknown, cursor: unknown): StoreListQuery {
  if (typeof prefix !== 'string' || prefix.length > MAX_NAME_BYTES) {
    throw new InvalidArgumentError(`prefix must be a string of at most ${MAX_NAME_BYTES} characters`);
  }
  assertStorableText('prefix', prefix);
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new InvalidArgumentError(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${describe(limit)}`);
  }
  if (cursor !== null && (typeof cursor !== 'string' || cursor.length === 0)) {
    throw new InvalidArgumentError('cursor must be a cursor a previous page returned, or null');
  }
  if (cursor !== null) assertStorableText('cursor', cursor);
  return { prefix, limit, cursor };
}

/** Checks a state filter; `null` (no filter) when absent or empty. */
export function toStateFilter(states: unknown): ReadonlySet<ListState> | null {
  if (states === undefined || states === null) return null;
  if (!Array.isArray(states)) throw new InvalidArgumentError(`states must be an array of ${LIST_STATES.join(', ')}`);
  let copy: unknown[];
  try {
    copy = Array.from(states as unknown[]);
  } catch {
    throw new InvalidArgumentError('states could not be read (a getter or Proxy threw)');
  }
  for (const state of copy) {
    // NOTE: `describe`, not JSON.stringify: a bigint or a throwing toJSON must get this refusal, not a TypeError.
    if (!LIST_STATES.includes(state as ListState))
      throw new InvalidArgumentError(`unknown lease state ${describe(state)}; expected one of ${LIST_STATES.join(', ')}`);
  }
  return copy.length === 0 ? null : new Set(copy as ListState[]);
}
