/**
 * The pieces of claim-next's race test (issue 24: 8 claimers over 100 items) that every store's race shares: the
 * claimers' command, the item keys, and the checks made from the outcomes (one live holder per item at a time,
 * none starved, none lost). Each store's race keeps how it runs the claimers and how it writes its ledger.
 */
import { expect } from 'vitest';
import type { ClaimNextCommand } from '../../src/fence/claim-next.js';
import { newSecret } from '../../src/secret.js';
import type { Store } from '../../src/store.js';

/** A claimer's claim-next: a fresh secret and run id each time, taking expired grants over. */
export function raceCommand(set: string, holder: string, ttlMs: number): ClaimNextCommand {
  return { set, holder, runId: `${holder}-${newSecret().slice(0, 8)}`, secret: newSecret(), ttlMs, attributes: {}, onExpired: 'take-over' };
}

/** `count` item keys of `set`, carrying its hash tag (Redis requires it), in key order. */
export function raceKeys(set: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `{${set}}:item-${String(index).padStart(3, '0')}`);
}

/** One grant as the outcomes tell it: from its acquiredAt to its end (its release's now, or its expiry). */
export interface GrantSeen {
  readonly key: string;
  readonly token: bigint;
  readonly acquiredAt: number;
  end: number;
}

/** At most one live holder per item at a time: per key, each grant starts no earlier than the previous one ended, with tokens rising. */
export function expectOneHolderAtATime(grants: readonly GrantSeen[]): void {
  const perKey = new Map<string, GrantSeen[]>();
  for (const grant of grants) perKey.set(grant.key, [...(perKey.get(grant.key) ?? []), grant]);
  const violations: string[] = [];
  for (const [key, list] of perKey) {
    list.sort((a, b) => a.acquiredAt - b.acquiredAt || (a.token < b.token ? -1 : 1));
    for (let index = 1; index < list.length; index += 1) {
      const [before, after] = [list[index - 1] as GrantSeen, list[index] as GrantSeen];
      if (after.acquiredAt < before.end)
        violations.push(`${key}: grant ${after.token} began at ${after.acquiredAt}, before ${before.token} ended at ${before.end}`);
      if (after.token <= before.token) violations.push(`${key}: token ${after.token} after ${before.token}`);
    }
  }
  expect(violations).toEqual([]);
}

/**
 * None starved: never-claimed items were available longest, so the first `items` grants (in token order) are all
 * of them. `inFlight` is how many claims may pass an item that a concurrent claim has locked but not yet granted:
 * PostgreSQL's `SKIP LOCKED` lets up to `clients - 1` claimers move past the rows the others are granting, and
 * those grants can take tokens above the passer's (seen in CI: 99 distinct among the first 100); a store that
 * serialises claims (a Redis script, SQLite's write lock, memory) passes 0.
 */
export function expectNoneStarved(grants: readonly GrantSeen[], items: number, inFlight = 0): void {
  const byToken = [...grants].sort((a, b) => (a.token < b.token ? -1 : 1));
  expect(new Set(byToken.slice(0, items + inFlight).map((grant) => grant.key)).size).toBe(items);
}

/** None lost: once every grant and hold has ended, a sweeper claims each of the `items` items once, then the set is idle. */
export async function expectEveryItemClaimable(store: Store, set: string, items: number, ttlMs: number): Promise<void> {
  const claimNext = store.claimNext?.bind(store);
  if (claimNext === undefined) throw new Error('the store offers no claimNext');
  const swept: string[] = [];
  for (let index = 0; index < items; index += 1) {
    const outcome = await claimNext(raceCommand(set, 'sweeper', ttlMs));
    if (!outcome.ok) throw new Error(`item lost: idle after ${swept.length} grants (nextAt ${outcome.nextAt})`);
    swept.push(outcome.key);
  }
  expect(new Set(swept).size).toBe(items);
  expect(await claimNext(raceCommand(set, 'sweeper', ttlMs))).toMatchObject({ ok: false, reason: 'idle' });
}
