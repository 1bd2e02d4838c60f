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
import { availableSince } from './claim-next.js';
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
export interface AcquirePermitCommand extends Omit<ClaimCommand, 'key' | 'expect'> {
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
  const { semaphore, limit, recovering, ...claimFields } = command;
  const byIndex = new Map(permits.map((permit) => [permit.index, permit]));
  const live = permits.filter(({ record }) => isLive(record, now)).sort((a, b) => a.index - b.index);
  const repeated = live.find(({ record }) => record?.grant?.secret === command.secret);
  if (repeated !== undefined) {
    // NOTE: the same acquire delivered twice: `claim` answers the grant it made, unchanged.
    const key = permitKey(semaphore, repeated.index);
    const again = claim(repeated.record, { ...claimFields, key, recovering }, now);
    if (!again.outcome.ok) throw new Error(`acquirePermit: claim did not answer the repeated grant of ${key}`);
    const outcome: PermitGranted = { ...again.outcome, semaphore, index: repeated.index, limit, live: live.length };
    return { key: null, transition: { record: repeated.record, changed: false, outcome } };
  }
  const full = (unavailable: number[], nextAt: StoreTime | null): AcquirePermitDecision => ({
    key: null,
    transition: {
      record: null,
      changed: false,
      outcome: {
        ok: false,
        reason: 'full',
        semaphore,
        limit,
        live: live.map(({ index, record }) => holderOf(semaphore, index, record)),
        unavailable,
        nextAt,
        now,
      },
    },
  });
  if (live.length >= limit) {
    // NOTE: a permit frees once live.length - limit + 1 of the live grants ended: the nextAt is that expiry.
    const expiries = live.map(({ record }) => record?.grant?.expiresAt ?? null);
    const ending = expiries.filter((at): at is StoreTime => at !== null).sort((a, b) => a - b);
    const needed = live.length - limit + 1;
    return full([], ending.length >= needed ? (ending[needed - 1] as StoreTime) : null);
  }
  let chosen: { index: number; since: StoreTime; record: LeaseRecord | null } | null = null;
  const unavailable: number[] = [];
  let nextAt: StoreTime | null = null;
  for (let index = 1; index <= limit; index += 1) {
    const permit = byIndex.get(index);
    const record = permit?.record ?? null;
    if (isLive(record, now)) {
      // NOTE: a live permit up to the limit frees its index when it expires.
      const expiresAt = record?.grant?.expiresAt ?? null;
      if (expiresAt !== null) nextAt = nextAt === null || expiresAt < nextAt ? expiresAt : nextAt;
      continue;
    }
    const blocked = record?.recoveryRequired === true;
    const since = blocked === recovering ? availableSince(record === null ? null : { ...record, recoveryRequired: false }, ITEM) : null;
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
  if (chosen === null) return full(unavailable, nextAt);
  const key = permitKey(semaphore, chosen.index);
  const highest = permits.reduce((top, { record }) => (record !== null && record.token > top ? record.token : top), 0n);
  const floor = highest + 1n > tokenFloor ? highest + 1n : tokenFloor;
  const granted = claim(chosen.record, { ...claimFields, key, recovering }, now, floor);
  if (!granted.outcome.ok || granted.record === null) {
    // NOTE: availableSince and claim disagree: a defect in one of them, never an answer a caller should get.
    throw new Error(`acquirePermit chose ${key} but claim answered ${granted.outcome.ok ? 'no record' : granted.outcome.reason}`);
  }
  const outcome: PermitGranted = { ...granted.outcome, semaphore, index: chosen.index, limit, live: live.length + 1 };
  return { key, transition: { record: granted.record, changed: true, outcome } };
}

/** Permits are always due: `availableSince` reads only the record (its grant's end, its hold). */
const ITEM = { set: '', key: '', dueAt: 0 } as const;

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
