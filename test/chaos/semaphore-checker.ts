/**
 * The checker of the semaphore workload (`Store.acquirePermit`, test/chaos/semaphore.ts): reads the run's history
 * (every grant with the limit it was made under, every fenced write attempt and release with the store's true
 * answer, even when the worker never got it, every operator revoke) and the final ledgers of the permit keys, and
 * lists every violation of:
 *
 * - `over-limit`: at each grant's instant, the grants of the semaphore live just before it (granted earlier, i.e.
 *   with a lower token, and not ended by then) number fewer than the limit that grant was made under;
 * - `tokens`: tokens are distinct across the semaphore and rise with acquiredAt, and each permit key has one live
 *   grant at a time;
 * - `stale-write`: every fenced write the store applied ran within its own grant at the store's now (granted at or
 *   before, before its expiry, not after its release or revoke, not after a newer grant of its key), and each
 *   permit key's ledger holds, in token order, only writes the store applied (or whose outcome is unknown) under
 *   grants the history knows;
 * - `lost-write`: a write the store answered applied is in its key's ledger.
 *
 * (The workload adds `stuck`: once every grant has ended, `limit` acquires in a row are each granted.)
 *
 * Sound: all times are the store's (`now` of its answers), and a grant ends only at what is KNOWN to end it (a
 * release or revoke the store answered, its expiry). A release or revoke whose outcome is unknown (a driver error)
 * may have ended its grant at any store time after the last one known under that grant (`unsureEndAfter`): rule 1
 * counts the grant live only until then (it may have freed its permit), the other rules ignore it.
 */

/** A grant the store made (the worker may never have learned it: a lost reply). Tokens are decimal strings. */
export interface PermitGrant {
  readonly key: string;
  readonly token: string;
  readonly runId: string;
  /** The limit the acquire asked for. */
  readonly limit: number;
  readonly acquiredAt: number;
  /** `null`: never expires (the workload always sets a TTL). */
  readonly expiresAt: number | null;
}

/** A fenced write (one ledger entry, `writeId`) and what the store answered it. */
export interface PermitWriteAttempt {
  readonly key: string;
  readonly token: string;
  readonly writeId: string;
  /** `applied`, a refusal reason, or `error` (the driver threw: the store may or may not have applied it). */
  readonly answer: string;
  /** The store's now of the answer (`null` for `error`). */
  readonly now: number | null;
  /** Whether the worker got the answer (false: the harness dropped the reply after the store applied it). */
  readonly delivered: boolean;
}

/** A grant the store ended at `now`: released by its holder, or revoked by an operator. */
export interface PermitEnding {
  readonly key: string;
  readonly token: string;
  readonly kind: 'released' | 'revoked';
  readonly now: number;
}

/** A release or revoke of a grant whose outcome is unknown (a driver error). */
export interface PermitUnsureEnding {
  readonly key: string;
  readonly token: string;
  /** The latest store time known to be within the grant (the ending, if it happened, came after). */
  readonly after: number;
}

export interface SemaphoreHistory {
  readonly semaphore: string;
  readonly grants: readonly PermitGrant[];
  readonly writes: readonly PermitWriteAttempt[];
  readonly endings: readonly PermitEnding[];
  readonly unsureEndings: readonly PermitUnsureEnding[];
  /** Each permit key's ledger as stored, in apply order (keys without a ledger may be absent). */
  readonly ledgers: ReadonlyMap<string, ReadonlyArray<{ readonly writeId: string; readonly token: string }>>;
}

export interface SemaphoreViolation {
  readonly rule: 'over-limit' | 'tokens' | 'stale-write' | 'lost-write' | 'stuck';
  readonly key: string;
  readonly detail: string;
}

export interface SemaphoreFigures {
  readonly grants: number;
  /** Grants made under a limit below the highest one (the shrinking semaphore). */
  readonly lowLimitGrants: number;
  readonly released: number;
  readonly revoked: number;
  /** Grants that ended by expiry (crashed, paused, lost replies) as far as the history knows. */
  readonly unreleased: number;
  readonly writes: number;
  readonly applied: number;
  readonly refused: number;
  readonly lostReplies: number;
  /** The most grants live at once (at a grant's instant, that grant included). */
  readonly mostLive: number;
}

const compareTokens = (a: { token: string }, b: { token: string }): number => {
  const [x, y] = [BigInt(a.token), BigInt(b.token)];
  return x < y ? -1 : x > y ? 1 : 0;
};

/** A grant's identity: its permit key and token (a buggy store may hand one token out on two keys). */
const idOf = (grant: { key: string; token: string }): string => `${grant.key}#${grant.token}`;

/**
 * The distinct grants (a re-delivered acquire answers its grant again), in token order, with every token handed out
 * twice reported.
 */
function distinctGrants(history: SemaphoreHistory, violations: SemaphoreViolation[]): PermitGrant[] {
  const byId = new Map<string, PermitGrant>();
  const byToken = new Map<string, PermitGrant>();
  for (const grant of history.grants) {
    const seen = byToken.get(grant.token);
    if (seen !== undefined && (seen.key !== grant.key || seen.runId !== grant.runId || seen.acquiredAt !== grant.acquiredAt))
      violations.push({
        rule: 'tokens',
        key: grant.key,
        detail: `token ${grant.token} granted twice: ${seen.runId} on ${seen.key} at ${seen.acquiredAt}, ${grant.runId} on ${grant.key} at ${grant.acquiredAt}`,
      });
    byToken.set(grant.token, seen ?? grant);
    if (!byId.has(idOf(grant))) byId.set(idOf(grant), grant);
  }
  return [...byId.values()].sort(compareTokens);
}

/** How each grant is known to end: the earliest of its known release or revoke and its expiry. */
function knownEnds(history: SemaphoreHistory): (grant: PermitGrant) => number {
  const ended = new Map<string, number>();
  for (const ending of history.endings) {
    const at = ended.get(idOf(ending));
    ended.set(idOf(ending), at === undefined ? ending.now : Math.min(at, ending.now));
  }
  return (grant) => Math.min(ended.get(idOf(grant)) ?? Number.POSITIVE_INFINITY, grant.expiresAt ?? Number.POSITIVE_INFINITY);
}

/**
 * Each grant with the grants live just before it: granted earlier (an earlier acquiredAt, or the same ms and a lower
 * token) and not ended by its acquiredAt. By time, not by token alone: a store that hands out a low token must not
 * hide a grant from the count.
 */
function liveBefore(
  grants: readonly PermitGrant[],
  endOf: (grant: PermitGrant) => number,
): Array<{ grant: PermitGrant; before: PermitGrant[] }> {
  const ordered = [...grants].sort((a, b) => a.acquiredAt - b.acquiredAt || compareTokens(a, b));
  let active: PermitGrant[] = [];
  return ordered.map((grant) => {
    // NOTE: the grants come in acquiredAt order, so one ended by this grant's instant is ended for every later one.
    active = active.filter((other) => endOf(other) > grant.acquiredAt);
    const before = active;
    active = [...active, grant];
    return { grant, before };
  });
}

/** Checks `history`; returns the violations (empty: the run kept every guarantee). */
export function checkSemaphore(history: SemaphoreHistory): SemaphoreViolation[] {
  const violations: SemaphoreViolation[] = [];
  const grants = distinctGrants(history, violations);
  const knownEnd = knownEnds(history);
  const unsure = new Map<string, number>();
  for (const ending of history.unsureEndings)
    unsure.set(idOf(ending), Math.min(unsure.get(idOf(ending)) ?? Number.POSITIVE_INFINITY, ending.after));
  // NOTE: the earliest a grant may have ended (rule 1 must not count live a grant that may have freed its permit).
  const earliestEnd = (grant: PermitGrant): number => Math.min(knownEnd(grant), unsure.get(idOf(grant)) ?? Number.POSITIVE_INFINITY);

  // Rule 1: fewer than the grant's limit live just before it (an end at t frees before a start at t).
  for (const { grant, before } of liveBefore(grants, earliestEnd))
    if (before.length >= grant.limit)
      violations.push({
        rule: 'over-limit',
        key: grant.key,
        detail: `token ${grant.token} (${grant.runId}) granted at ${grant.acquiredAt} under limit ${grant.limit} while ${before.length} were live: ${before.map((other) => `${other.token} on ${other.key} (${other.acquiredAt}..${earliestEnd(other)})`).join(', ')}`,
      });

  // Rule 2: tokens rise with acquiredAt; one live grant per permit key at a time.
  for (let i = 1; i < grants.length; i += 1) {
    const [before, after] = [grants[i - 1] as PermitGrant, grants[i] as PermitGrant];
    if (after.acquiredAt < before.acquiredAt)
      violations.push({
        rule: 'tokens',
        key: after.key,
        detail: `token ${after.token} granted at ${after.acquiredAt}, before the lower token ${before.token} (${before.key}) at ${before.acquiredAt}`,
      });
  }
  const byKey = new Map<string, PermitGrant[]>();
  for (const grant of grants) {
    const ofKey = byKey.get(grant.key) ?? [];
    ofKey.push(grant);
    byKey.set(grant.key, ofKey);
  }
  for (const [key, ofKey] of byKey)
    for (let i = 1; i < ofKey.length; i += 1) {
      const [before, after] = [ofKey[i - 1] as PermitGrant, ofKey[i] as PermitGrant];
      if (after.acquiredAt < earliestEnd(before))
        violations.push({
          rule: 'tokens',
          key,
          detail: `token ${after.token} granted at ${after.acquiredAt} while token ${before.token} was live until ${earliestEnd(before)}`,
        });
    }

  checkWrites(history, grants, knownEnd, byKey, violations);
  return violations;
}

/** Rule 3 (and lost writes): each applied write within its grant; each ledger in token order, only applied writes. */
function checkWrites(
  history: SemaphoreHistory,
  grants: readonly PermitGrant[],
  knownEnd: (grant: PermitGrant) => number,
  byKey: ReadonlyMap<string, readonly PermitGrant[]>,
  violations: SemaphoreViolation[],
): void {
  const grantOf = new Map(grants.map((grant) => [idOf(grant), grant]));
  for (const write of history.writes) {
    if (write.answer !== 'applied') continue;
    const now = write.now ?? Number.NaN;
    const own = grantOf.get(idOf(write));
    if (own === undefined) {
      violations.push({
        rule: 'stale-write',
        key: write.key,
        detail: `write ${write.writeId} applied under token ${write.token}, never granted on the key`,
      });
      continue;
    }
    // NOTE: expiry is strict (at expiresAt the grant is expired); a release or revoke in the same ms came after the write.
    const expiresAt = own.expiresAt ?? Number.POSITIVE_INFINITY;
    const end = knownEnd(own);
    if (!(own.acquiredAt <= now && now < expiresAt && (end === expiresAt || now <= end)))
      violations.push({
        rule: 'stale-write',
        key: write.key,
        detail: `write ${write.writeId} applied at ${now} under token ${write.token}, live only from ${own.acquiredAt} until ${end}`,
      });
    const newer = (byKey.get(write.key) ?? []).find((grant) => BigInt(grant.token) > BigInt(write.token) && grant.acquiredAt < now);
    if (newer !== undefined)
      violations.push({
        rule: 'stale-write',
        key: write.key,
        detail: `write ${write.writeId} applied at ${now} under token ${write.token}, superseded by token ${newer.token} at ${newer.acquiredAt}`,
      });
  }

  const attemptOf = new Map(history.writes.map((write) => [write.writeId, write]));
  const inLedger = new Set<string>();
  for (const [key, ledger] of history.ledgers) {
    let previous: { writeId: string; token: string } | null = null;
    for (const entry of ledger) {
      const attempt = attemptOf.get(entry.writeId);
      const grant = grantOf.get(idOf({ key, token: entry.token }));
      if (inLedger.has(entry.writeId))
        violations.push({ rule: 'stale-write', key, detail: `write ${entry.writeId} is in the ledger twice` });
      inLedger.add(entry.writeId);
      if (grant === undefined)
        violations.push({
          rule: 'stale-write',
          key,
          detail: `write ${entry.writeId} in the ledger under token ${entry.token}, never granted on the key`,
        });
      else if (attempt === undefined || attempt.token !== entry.token || (attempt.answer !== 'applied' && attempt.answer !== 'error'))
        violations.push({
          rule: 'stale-write',
          key,
          detail: `write ${entry.writeId} under token ${entry.token} is in the ledger, but the store ${attempt === undefined ? 'was never sent it' : `answered it ${attempt.answer}`}`,
        });
      if (previous !== null && compareTokens(entry, previous) < 0)
        violations.push({
          rule: 'stale-write',
          key,
          detail: `write ${entry.writeId} under token ${entry.token} is in the ledger after ${previous.writeId} under the newer token ${previous.token}`,
        });
      previous = entry;
    }
  }
  for (const write of history.writes)
    if (write.answer === 'applied' && !inLedger.has(write.writeId))
      violations.push({
        rule: 'lost-write',
        key: write.key,
        detail: `write ${write.writeId} under token ${write.token} answered applied at ${write.now}, not in the ledger`,
      });
}

/** The run's figures for the summary line. */
export function semaphoreFigures(history: SemaphoreHistory): SemaphoreFigures {
  const grants = distinctGrants(history, []);
  const knownEnd = knownEnds(history);
  const highest = grants.reduce((most, grant) => Math.max(most, grant.limit), 0);
  const ended = new Set(history.endings.map(idOf));
  const mostLive = liveBefore(grants, knownEnd).reduce((most, { before }) => Math.max(most, before.length + 1), 0);
  return {
    grants: grants.length,
    lowLimitGrants: grants.filter((grant) => grant.limit < highest).length,
    released: history.endings.filter((ending) => ending.kind === 'released').length,
    revoked: history.endings.filter((ending) => ending.kind === 'revoked').length,
    unreleased: grants.filter((grant) => !ended.has(idOf(grant))).length,
    writes: history.writes.length,
    applied: history.writes.filter((write) => write.answer === 'applied').length,
    refused: history.writes.filter((write) => write.answer !== 'applied' && write.answer !== 'error').length,
    lostReplies: history.writes.filter((write) => !write.delivered).length,
    mostLive,
  };
}

/** One line per violation. */
export function formatSemaphoreViolations(violations: readonly SemaphoreViolation[]): string {
  return violations.map((violation) => `      ${violation.rule} ${violation.key}: ${violation.detail}`).join('\n');
}
