/**
 * Semaphores (issue 25, part 2): up to N live grants of one named semaphore at once, each a permit with a lease
 * of its own, as pure data and decisions.
 *
 * A permit is an ordinary lease record under the key `permitKey(semaphore, index)` (index 1, 2, ...), so renew,
 * checkpoint, fenced write, release, revoke and recover work on it as on any key, fenced by its own token. What is
 * particular to a semaphore is only the grant, `acquirePermit`, decided here in one atomic step over every permit
 * record of the semaphore that exists:
 * - **The limit is the acquirer's.** Each acquire says its `limit` (as redis-semaphore's do); it is granted only
 *   while fewer than `limit` permits of the semaphore (any index) hold a live grant, and only a permit with an
 *   index from 1 to `limit`. Lowering the limit revokes nothing: live permits above it run until they end, and no
 *   acquire with the lower limit is granted until fewer than that many are live. Raising it takes effect at once.
 * - **Tokens rise across the semaphore.** A permit's token is above every token of every permit of the semaphore
 *   (`1 + the highest`), so token order is grant order across all permits, and still above every earlier token
 *   of its own key (the fence of each permit is its own key's).
 * - **Which permit.** The free permit (index 1..limit) available longest (`availableSince`, a never-used permit
 *   first), then the lowest index. An expired permit is taken over as `claim` takes over (with its checkpoint).
 *   A permit blocked for recovery (a revoke with `requireRecovery`) is skipped by plain acquires and granted only
 *   to an acquire that says `recovering: true`; held back (`release` with `holdMs`) and busy permits are skipped.
 * - **Re-delivery.** An acquire delivered twice (same secret) answers the live grant it made.
 */
import { freeSince } from './claim-next.js';
import type { ClaimCommand, StoreClaimGranted } from './operations.js';
import { claim, type Transition } from './transitions.js';
import type { LeaseRecord, StoreTime } from './types.js';

/** The largest limit an acquire may give: an acquire reads every permit of its semaphore, so N stays small. */
export const MAX_PERMITS = 1000;

/** The key a permit's lease lives under: `{semaphore}:permit-<index>` (on Redis, every permit is in the semaphore's slot). */
export function permitKey(semaphore: string, index: number): string {
  return `{${semaphore}}:permit-${index}`;
}

const PERMIT_KEY = /^\{([^{}]+)\}:permit-([1-9][0-9]{0,3})$/;

/** The semaphore and index a key is a permit of, `null` when the key has not the shape of a permit key. */
export function permitOf(key: string): { readonly semaphore: string; readonly index: number } | null {
  const match = PERMIT_KEY.exec(key);
  if (match === null) return null;
  const index = Number(match[2]);
  return index > MAX_PERMITS ? null : { semaphore: match[1] as string, index };
}

/** What a store's `acquirePermit` receives: a claim's fields (no key, no `expect`), the semaphore and the limit. */
export interface AcquirePermitCommand extends Omit<ClaimCommand, 'key' | 'expect' | 'queue' | 'jumpQueue'> {
  /** The semaphore's name: non-empty, no braces (its `{name}` is the permit keys' hash tag on Redis). */
  readonly semaphore: string;
  /** At most this many live permits, this grant included: an integer from 1 to `MAX_PERMITS`. */
  readonly limit: number;
  /** True: grant only a permit blocked for recovery (index 1..limit), to resolve its checkpoint. */
  readonly recovering: boolean;
}

/** A permit of the semaphore with its record as it is now, as a store offers it to `acquirePermit`. */
export interface PermitCandidate {
  readonly index: number;
  readonly record: LeaseRecord | null;
  /** The permit's key is busy in another operation the store cannot interleave with: never granted in this call. */
  readonly busy: boolean;
}

/** A live permit, as a `full` refusal shows it. */
export interface PermitHolder {
  readonly key: string;
  readonly index: number;
  readonly token: bigint;
  readonly holder: string;
  readonly runId: string | null;
  readonly expiresAt: StoreTime | null;
}

/** A permit was granted: the grant (as `claim`'s, on the permit's key), which permit, and how many are live now. */
export interface PermitGranted extends StoreClaimGranted {
  readonly semaphore: string;
  readonly index: number;
  readonly limit: number;
  /** Live permits of the semaphore at `now`, this one included. */
  readonly live: number;
}

/** No permit can be granted now: `limit` or more are live, or every permit up to the limit that is not is unavailable. */
export interface SemaphoreFull {
  readonly ok: false;
  readonly reason: 'full';
  readonly semaphore: string;
  readonly limit: number;
  /** Every live permit of the semaphore (any index), by index. */
  readonly live: readonly PermitHolder[];
  /**
   * Indexes from 1 to `limit` neither live nor grantable to this acquire: blocked for recovery (or, with
   * `recovering`, not blocked), held back, or busy.
   */
  readonly unavailable: readonly number[];
  /**
   * The earliest time a permit may be granted as far as the store knows now (enough live grants expired, a hold
   * over, `now` for a busy permit), `null` when none is known (live grants without expiry, blocked permits).
   */
  readonly nextAt: StoreTime | null;
  readonly now: StoreTime;
}

/** What a store's `acquirePermit` answers. */
export type AcquirePermitOutcome = PermitGranted | SemaphoreFull;

/** The decision of `acquirePermit`: the permit key to write (`null`: nothing changes) and its record's transition. */
export interface AcquirePermitDecision {
  readonly key: string | null;
  readonly transition: Transition<AcquirePermitOutcome>;
}

function isLive(record: LeaseRecord | null, now: StoreTime): boolean {
  const expiresAt = record?.grant?.expiresAt;
  return expiresAt === null || (expiresAt !== undefined && now < expiresAt);
}

/**
 * Acquire over `permits` (every permit record of the semaphore that exists; a permit without a record may be left
 * out). `tokenFloor` is the store's floor for the permit's key (a clock floor, a removed record's); the token is
 * also above every permit's token.
 */
export function acquirePermit(
  permits: readonly PermitCandidate[],
  command: AcquirePermitCommand,
  now: StoreTime,
  tokenFloor = 0n,
): AcquirePermitDecision {
  const { semaphore, limit, recovering } = command;
  // NOTE: one pass, few allocations (every store runs this per acquire; the adapters of the server stores judge
  // their reply with it): the live permits in index order, the candidates up to the limit, the highest token.
  const live: PermitCandidate[] = [];
  const upToLimit: Array<PermitCandidate | undefined> = [];
  let highest = 0n;
  let repeated: PermitCandidate | null = null;
  for (const permit of permits) {
    const { record } = permit;
    if (record === null) continue;
    if (record.token > highest) highest = record.token;
    if (permit.index <= limit) upToLimit[permit.index] = permit;
    if (!isLive(record, now)) continue;
    live.push(permit);
    if (record.grant?.secret === command.secret && (repeated === null || permit.index < repeated.index)) repeated = permit;
  }
  live.sort(byIndex);
  if (repeated !== null) {
    // NOTE: the same acquire delivered twice: `claim` answers the grant it made, unchanged.
    const key = permitKey(semaphore, repeated.index);
    const again = claim(repeated.record, claimCommand(command, key), now);
    if (!again.outcome.ok) throw new Error(`acquirePermit: claim did not answer the repeated grant of ${key}`);
    return {
      key: null,
      transition: { record: repeated.record, changed: false, outcome: granted(again.outcome, command, repeated.index, live.length) },
    };
  }
  if (live.length >= limit) {
    // NOTE: a permit frees once live.length - limit + 1 of the live grants ended: the nextAt is that expiry.
    const ending: StoreTime[] = [];
    for (const { record } of live) {
      const expiresAt = record?.grant?.expiresAt ?? null;
      if (expiresAt !== null) ending.push(expiresAt);
    }
    ending.sort((a, b) => a - b);
    const needed = live.length - limit + 1;
    return full(command, live, [], ending.length >= needed ? (ending[needed - 1] as StoreTime) : null, now);
  }
  let chosen: { index: number; since: StoreTime; record: LeaseRecord | null } | null = null;
  const unavailable: number[] = [];
  let nextAt: StoreTime | null = null;
  for (let index = 1; index <= limit; index += 1) {
    const permit = upToLimit[index];
    const record = permit?.record ?? null;
    if (isLive(record, now)) {
      // NOTE: a live permit up to the limit frees its index when it expires.
      const expiresAt = record?.grant?.expiresAt ?? null;
      if (expiresAt !== null) nextAt = nextAt === null || expiresAt < nextAt ? expiresAt : nextAt;
      continue;
    }
    // NOTE: permits are always due (since 0): a never-used permit first. A blocked permit is grantable only to a
    // recovering acquire, and a recovering acquire takes only a blocked one.
    const blocked = record?.recoveryRequired === true;
    const free = blocked !== recovering ? null : record === null ? 0 : freeSince(record);
    const since = free === null ? null : Math.max(0, free);
    if (since === null || since > now || permit?.busy === true) {
      unavailable.push(index);
      if (since !== null) {
        const at = since > now ? since : now;
        nextAt = nextAt === null || at < nextAt ? at : nextAt;
      }
      continue;
    }
    if (chosen === null || since < chosen.since) chosen = { index, since, record };
  }
  if (chosen === null) return full(command, live, unavailable, nextAt, now);
  const key = permitKey(semaphore, chosen.index);
  const floor = highest + 1n > tokenFloor ? highest + 1n : tokenFloor;
  const claimed = claim(chosen.record, claimCommand(command, key), now, floor);
  if (!claimed.outcome.ok || claimed.record === null) {
    // NOTE: freeSince and claim disagree: a defect in one of them, never an answer a caller should get.
    throw new Error(`acquirePermit chose ${key} but claim answered ${claimed.outcome.ok ? 'no record' : claimed.outcome.reason}`);
  }
  return {
    key,
    transition: { record: claimed.record, changed: true, outcome: granted(claimed.outcome, command, chosen.index, live.length + 1) },
  };
}

const byIndex = (a: PermitCandidate, b: PermitCandidate): number => a.index - b.index;

/** The claim of permit `key` an acquire makes: its fields spelled out (an object rest is slow on this path). */
function claimCommand(command: AcquirePermitCommand, key: string): ClaimCommand {
  const { holder, runId, secret, ttlMs, attributes, recovering } = command;
  // NOTE: `jumpQueue`: an acquire does not consult a permit key's queue of waiting claims (fair permits: not built).
  return { key, holder, runId, secret, ttlMs, attributes, recovering, jumpQueue: true };
}

/** The acquire's grant: the claim's, plus which permit and how many are live. */
function granted(outcome: StoreClaimGranted, command: AcquirePermitCommand, index: number, live: number): PermitGranted {
  const { key, token, acquiredAt, expiresAt, previous, checkpoint, now } = outcome;
  return {
    ok: true,
    key,
    token,
    acquiredAt,
    expiresAt,
    previous,
    checkpoint,
    now,
    semaphore: command.semaphore,
    index,
    limit: command.limit,
    live,
  };
}

/** The `full` refusal: every live permit (in index order), the unavailable indexes, and `nextAt`. */
function full(
  command: AcquirePermitCommand,
  live: readonly PermitCandidate[],
  unavailable: number[],
  nextAt: StoreTime | null,
  now: StoreTime,
): AcquirePermitDecision {
  const { semaphore, limit } = command;
  const holders = live.map(({ index, record }) => holderOf(semaphore, index, record));
  return {
    key: null,
    transition: {
      record: null,
      changed: false,
      outcome: { ok: false, reason: 'full', semaphore, limit, live: holders, unavailable, nextAt, now },
    },
  };
}

function holderOf(semaphore: string, index: number, record: LeaseRecord | null): PermitHolder {
  const grant = (record as LeaseRecord).grant as NonNullable<LeaseRecord['grant']>;
  return {
    key: permitKey(semaphore, index),
    index,
    token: grant.token,
    holder: grant.holder,
    runId: grant.runId,
    expiresAt: grant.expiresAt,
  };
}
