/**
 * The checks every store's semaphore race test shares (issue 25): from the grants the acquirers saw (each with the
 * store's times), never more than `limit` live grants of the semaphore at any instant, and tokens that rise in grant
 * order across all permits. Each store's race keeps how it runs its acquirers.
 */
import { expect } from 'vitest';
import type { AcquirePermitCommand } from '../../src/fence/permits.js';
import { newSecret } from '../../src/secret.js';

/** An acquirer's command: a fresh secret and run id each time. */
export function permitCommand(semaphore: string, holder: string, limit: number, ttlMs: number | null): AcquirePermitCommand {
  return {
    semaphore,
    limit,
    holder,
    runId: `${holder}-${newSecret().slice(0, 8)}`,
    secret: newSecret(),
    ttlMs,
    attributes: {},
    recovering: false,
  };
}

/** One permit grant as the outcomes tell it: from its acquiredAt to its end (its release's now, or its expiry). */
export interface PermitGrantSeen {
  readonly key: string;
  readonly token: bigint;
  readonly acquiredAt: number;
  end: number;
  /** The limit of the acquire that was granted it (a race with mixed limits checks each: `expectLimitAtEachGrant`). */
  readonly limit?: number;
}

/** At most `limit` grants live at once: a sweep over starts and ends (an end at t frees before a start at t: expiry is strict). */
export function expectAtMostLive(grants: readonly PermitGrantSeen[], limit: number): void {
  const events = grants.flatMap((grant) => [
    { at: grant.acquiredAt, step: 1, grant },
    { at: grant.end, step: -1, grant },
  ]);
  events.sort((a, b) => a.at - b.at || a.step - b.step);
  let live = 0;
  let worst = 0;
  let worstAt = 0;
  for (const event of events) {
    live += event.step;
    if (live > worst) [worst, worstAt] = [live, event.at];
  }
  expect(worst, `${worst} permits live at ${worstAt} (limit ${limit})`).toBeLessThanOrEqual(limit);
}

/** One live grant per permit key at a time, and across the semaphore: distinct tokens, rising with acquiredAt. */
export function expectTokensRise(grants: readonly PermitGrantSeen[]): void {
  const violations: string[] = [];
  expect(new Set(grants.map((grant) => grant.token)).size, 'every grant of the semaphore has its own token').toBe(grants.length);
  const byTime = [...grants].sort((a, b) => a.acquiredAt - b.acquiredAt);
  for (let index = 1; index < byTime.length; index += 1) {
    const [before, after] = [byTime[index - 1] as PermitGrantSeen, byTime[index] as PermitGrantSeen];
    if (after.acquiredAt > before.acquiredAt && after.token < before.token)
      violations.push(
        `${after.key} granted at ${after.acquiredAt} with ${after.token}, below ${before.key}'s ${before.token} granted at ${before.acquiredAt}`,
      );
  }
  const perKey = new Map<string, PermitGrantSeen[]>();
  for (const grant of grants) perKey.set(grant.key, [...(perKey.get(grant.key) ?? []), grant]);
  for (const [key, list] of perKey) {
    list.sort((a, b) => (a.token < b.token ? -1 : 1));
    for (let index = 1; index < list.length; index += 1) {
      const [before, after] = [list[index - 1] as PermitGrantSeen, list[index] as PermitGrantSeen];
      if (after.acquiredAt < before.end)
        violations.push(`${key}: grant ${after.token} began at ${after.acquiredAt}, before ${before.token} ended at ${before.end}`);
    }
  }
  expect(violations).toEqual([]);
}

/**
 * With mixed limits (raised and lowered while permits live): each grant was made while fewer than its own limit were
 * live. Counted at its acquiredAt among the grants made before it (tokens rise in grant order) that still lived after
 * that instant: a grant that ended at the same store time may have ended before it, and is not counted.
 */
export function expectLimitAtEachGrant(grants: readonly PermitGrantSeen[]): void {
  const violations: string[] = [];
  for (const grant of grants) {
    if (grant.limit === undefined) continue;
    const at = grant.acquiredAt;
    const before = grants.filter((other) => other.token < grant.token && other.acquiredAt <= at && at < other.end);
    if (before.length >= grant.limit)
      violations.push(
        `${grant.key} ${grant.token} granted at ${at} with limit ${grant.limit} while ${before.length} were live: ${before.map((other) => `${other.key} ${other.token}`).join(', ')}`,
      );
  }
  expect(violations).toEqual([]);
}
