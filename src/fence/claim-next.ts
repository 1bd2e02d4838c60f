/**
 * Claim the next free key of a set (issue 24, capability 1), as pure data and decisions.
 *
 * A set is a named collection of items; an item is a key (the lease key it is claimed under) with the time it is
 * due. A key is an item of at most one set. `claimNext` grants, in one atomic step, the claimable item that has
 * been available longest: its order key is `availableSince(record, item)`, a pure function of the key's record
 * and the item, so a store's index of it is right exactly when the store recomputes it wherever a record or an
 * item changes (expiry needs no write: an expired grant's availability is its `expiresAt`, already known).
 * Whether a candidate is claimable is decided here, and the grant itself is `transitions.claim`'s.
 */
import type { ClaimCommand, StoreClaimGranted } from './operations.js';
import { claim, type Transition } from './transitions.js';
import { stateValue, type LeaseRecord, type StoreTime } from './types.js';

/** An item of a set: the key it is claimed under and when it is due (claim-next skips it before then). */
export interface SetItem {
  readonly set: string;
  readonly key: string;
  /** The store's now when it was added, plus its not-before delay. */
  readonly dueAt: StoreTime;
}

/** What a store's `addItems` receives: keys to add to `set`, due `notBeforeMs` after the store's now. */
export interface AddItemsCommand {
  readonly set: string;
  /** At least one key; a key already in `set` is left as it is (its due time too): adding is idempotent. */
  readonly keys: readonly string[];
  /**
   * Claim-next skips the new items until this many ms after the store's now (a first-attempt delay).
   * @default 0
   */
  readonly notBeforeMs?: number;
}

/** What `addItems` answers: the keys it added (not those already in the set), or the key that is in another set. */
export type AddItemsOutcome =
  | { readonly ok: true; readonly set: string; readonly added: readonly string[]; readonly dueAt: StoreTime; readonly now: StoreTime }
  | {
      readonly ok: false;
      readonly reason: 'in-another-set';
      readonly set: string;
      /** The first key (in the command's order) that is an item of another set: nothing was added. */
      readonly key: string;
      readonly otherSet: string;
      readonly now: StoreTime;
    };

/** What a store's `removeItems` receives: keys to take out of `set` (their records, grants and state stay). */
export interface RemoveItemsCommand {
  readonly set: string;
  readonly keys: readonly string[];
}

/** What `removeItems` answers: the keys that were items of `set` and no longer are. */
export interface RemoveItemsOutcome {
  readonly ok: true;
  readonly set: string;
  readonly removed: readonly string[];
  readonly now: StoreTime;
}

/**
 * What claim-next does with an item whose last grant expired without a release (an abandoned run):
 * - `take-over`: grant it at once, as `claim` does (the grant carries `previous`, the expired run, and its
 *   checkpoint; `abandoned` names the run).
 * - `record-first`: grant it the same way, but the key now requires recovery: nobody else takes the key over
 *   until this holder resolves it with a checkpoint decision (a fenced write or checkpoint with a checkpoint,
 *   `recover`, or a release with `checkpointJson`). Its first fenced write can record "run r7 abandoned" as a
 *   submission under the old run id together with that checkpoint; if this holder dies first, claim-next skips
 *   the key (blocked for recovery) instead of losing the abandoned run's record.
 */
export type OnExpired = 'take-over' | 'record-first';

/** What a store's `claimNext` receives: the set, the would-be holder and the grant's secret and TTL. */
export interface ClaimNextCommand extends Omit<ClaimCommand, 'key' | 'recovering' | 'queue' | 'jumpQueue'> {
  readonly set: string;
  /** See `OnExpired`. */
  readonly onExpired: OnExpired;
}

/** A run that expired without a release, which a claim-next grant took over. */
export interface AbandonedRun {
  readonly token: bigint;
  readonly holder: string;
  readonly runId: string | null;
  /** When it expired, on the store's clock. */
  readonly expiredAt: StoreTime;
}

/** Claim-next granted an item: the grant (as `claim`'s), the set, and since when the item had been available. */
export interface ClaimNextGranted extends StoreClaimGranted {
  readonly set: string;
  /** The item's `availableSince` when it was granted (the order it was granted in). */
  readonly availableSince: StoreTime;
  /** The previous run, when it expired without a release (also in `previous`); `null` otherwise. */
  readonly abandoned: AbandonedRun | null;
  /** True when the key requires recovery (`record-first` with an abandoned run): resolve it with a checkpoint decision. */
  readonly recoveryRequired: boolean;
}

/** No item of the set is claimable now. */
export interface ClaimNextIdle {
  readonly ok: false;
  readonly reason: 'idle';
  readonly set: string;
  /**
   * The earliest time an item of the set becomes claimable as far as the store knows now (a live grant's expiry,
   * a hold, a due time; `now` when a claimable item was busy in another operation), `null` when none is known
   * (an empty set, or only grants without expiry, keys blocked for recovery and keys whose state does not match
   * `expect`). Something else (a release, a recovery, an added item) may make one claimable sooner.
   */
  readonly nextAt: StoreTime | null;
  readonly now: StoreTime;
}

/** What a store's `claimNext` answers. */
export type ClaimNextOutcome = ClaimNextGranted | ClaimNextIdle;

/**
 * Since when the item has been claimable by claim-next (ignoring `expect`), or will be: the latest of its due
 * time, the end of its last grant (a live or expired grant's `expiresAt`; a release, revoke or state change's
 * `ending.at`) and its hold. `null` when it will not become claimable by time alone: a grant without expiry, or a
 * key blocked for recovery (also a recovering holder's live grant, which blocks the key if it expires unresolved).
 * The item is claimable at `now` exactly when this is non-null and at most `now` (`transitions.claim` grants then).
 */
export function availableSince(record: LeaseRecord | null, item: SetItem): StoreTime | null {
  if (record === null) return item.dueAt;
  if (record.recoveryRequired) return null;
  const since = freeSince(record);
  return since === null ? null : Math.max(item.dueAt, since);
}

/**
 * Since when the key is free by time alone, whether or not it is blocked for recovery: the end of its last grant
 * (a live or expired grant's `expiresAt`; an ending's `at`; `-Infinity` when none: free since ever) or its hold,
 * whichever is later; `null` for a grant without expiry. (Semaphores judge a permit blocked for recovery with it:
 * only a recovering acquire takes such a permit.)
 */
export function freeSince(record: LeaseRecord): StoreTime | null {
  let since = Number.NEGATIVE_INFINITY;
  if (record.grant !== null) {
    if (record.grant.expiresAt === null) return null;
    since = record.grant.expiresAt;
  } else if (record.ending !== null) since = record.ending.at;
  return record.heldUntil === null ? since : Math.max(since, record.heldUntil);
}

/** Whether the key's state has every value `expect` requires (`null`: the name is absent). */
export function stateMatches(record: LeaseRecord | null, expect: ClaimCommand['expect']): boolean {
  if (expect === undefined) return true;
  const state = record?.state ?? {};
  return Object.keys(expect).every((name) => stateValue(expect, name) === stateValue(state, name));
}

/** Orders by availability, then by key in code-unit order (every store breaks ties the same way). */
export function byAvailability(a: { since: StoreTime; key: string }, b: { since: StoreTime; key: string }): number {
  return a.since - b.since || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/** An item a store offers to `claimNext`, with its key's record as it is now. */
export interface ItemCandidate {
  readonly item: SetItem;
  readonly record: LeaseRecord | null;
  /**
   * The key is busy in another operation the store cannot interleave with (a row lock held: `SKIP LOCKED`; the
   * memory store's key lock during a fenced write's callback): never granted in this call.
   */
  readonly busy: boolean;
}

/** The decision of `claimNext`: the key to write (`null`: nothing changes) and the transition of its record. */
export interface ClaimNextDecision {
  readonly key: string | null;
  readonly transition: Transition<ClaimNextOutcome>;
}

/**
 * Claim-next over `candidates` (the set's items, or a store's prefix of them in index order that contains every
 * item claimable now): a live grant made with this command's secret is answered again (a claim-next delivered
 * twice grants one item); otherwise the claimable, not busy candidate whose state matches `expect` with the
 * smallest `availableSince` (then key) is granted with `transitions.claim`; none: `idle`.
 */
export function claimNext(
  candidates: readonly ItemCandidate[],
  command: ClaimNextCommand,
  now: StoreTime,
  tokenFloor = 0n,
): ClaimNextDecision {
  const { set, onExpired, ...claimFields } = command;
  const repeated = candidates.find(({ record }) => record?.grant?.secret === command.secret && isLiveGrant(record, now));
  if (repeated !== undefined) {
    const { record, item } = repeated;
    const grant = (record as LeaseRecord).grant as NonNullable<LeaseRecord['grant']>;
    const previous = (record as LeaseRecord).ending;
    const outcome: ClaimNextGranted = {
      ok: true,
      key: item.key,
      token: grant.token,
      acquiredAt: grant.acquiredAt,
      expiresAt: grant.expiresAt,
      previous,
      checkpoint: (record as LeaseRecord).checkpoint,
      now,
      set,
      // NOTE: the item was available from when it was granted: the order it was granted in is not kept.
      availableSince: grant.acquiredAt,
      abandoned: abandonedRun(previous),
      recoveryRequired: (record as LeaseRecord).recoveryRequired,
    };
    return { key: null, transition: { record, changed: false, outcome } };
  }
  let chosen: { candidate: ItemCandidate; since: StoreTime; key: string } | null = null;
  let nextAt: StoreTime | null = null;
  for (const candidate of candidates) {
    if (!stateMatches(candidate.record, command.expect)) continue;
    const since = availableSince(candidate.record, candidate.item);
    if (since === null) continue;
    if (since > now || candidate.busy) {
      const at = since > now ? since : now;
      nextAt = nextAt === null || at < nextAt ? at : nextAt;
      continue;
    }
    const entry = { candidate, since, key: candidate.item.key };
    if (chosen === null || byAvailability(entry, chosen) < 0) chosen = entry;
  }
  if (chosen === null) {
    return { key: null, transition: { record: null, changed: false, outcome: { ok: false, reason: 'idle', set, nextAt, now } } };
  }
  const { candidate, since } = chosen;
  const key = candidate.item.key;
  // NOTE: `jumpQueue`: claim-next does not consult a key's queue of waiting claims (the pool is its fairness).
  const granted = claim(candidate.record, { ...claimFields, key, recovering: false, jumpQueue: true }, now, tokenFloor);
  if (!granted.outcome.ok || granted.record === null) {
    // NOTE: availableSince and claim disagree: a defect in one of them, never an answer a caller should get.
    throw new Error(
      `claim-next chose ${key} (available since ${since}) but claim answered ${granted.outcome.ok ? 'no record' : granted.outcome.reason}`,
    );
  }
  const abandoned = abandonedRun(granted.outcome.previous);
  const recoveryRequired = abandoned !== null && onExpired === 'record-first';
  const record: LeaseRecord = recoveryRequired ? { ...granted.record, recoveryRequired } : granted.record;
  const outcome: ClaimNextGranted = { ...granted.outcome, set, availableSince: since, abandoned, recoveryRequired };
  return { key, transition: { record, changed: true, outcome } };
}

function isLiveGrant(record: LeaseRecord | null, now: StoreTime): boolean {
  const expiresAt = record?.grant?.expiresAt;
  return expiresAt === null || (expiresAt !== undefined && now < expiresAt);
}

/** The run `previous` names when it expired without a release. */
function abandonedRun(previous: LeaseRecord['ending']): AbandonedRun | null {
  if (previous === null || previous.kind !== 'expired') return null;
  return { token: previous.token, holder: previous.holder, runId: previous.runId, expiredAt: previous.at };
}
