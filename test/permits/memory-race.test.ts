/**
 * Semaphores on the memory store under concurrency and over time (issue 25's race test): acquirers with their
 * fates (release, hold, fenced write, crash, revoke, re-delivery) in every interleaving fast-check picks, while
 * the clock moves. Never more than `limit` live grants at any store instant, tokens distinct and rising in grant
 * order across the permits, one live grant per permit key; and none lost: once every grant ended, `limit`
 * acquires are granted again.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createManualClock } from '../../src/clock.js';
import { scaled } from '../support/scale.js';
import { raceScenarioArb, runPermitRace, SEMAPHORE, TTL_MS } from './memory-race-run.js';
import { expectAtMostLive, expectLimitAtEachGrant, expectTokensRise, permitCommand } from './race-checks.js';

describe.each([
  { limit: 1, acquirers: 4 },
  { limit: 3, acquirers: 8 },
])('semaphores on memory, $acquirers concurrent acquirers, limit $limit, every interleaving fast-check picks', ({ limit, acquirers }) => {
  it('never more than limit live, tokens rising across the permits, one holder per permit, and none lost', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), raceScenarioArb(limit, acquirers), async (s, scenario) => {
        const clock = createManualClock(1_000_000);
        const store = createMemoryStore({ clock });
        const grants = await runPermitRace(s, store, clock, scenario);
        expectAtMostLive(grants, limit);
        expectTokensRise(grants);
        expectLimitAtEachGrant(grants);
        clock.advance(10 * TTL_MS);
        const again = [];
        for (let i = 0; i <= limit; i += 1) again.push(await store.acquirePermit(permitCommand(SEMAPHORE, `late${i}`, limit, TTL_MS)));
        expect(again.map((outcome) => (outcome.ok ? outcome.index : 'full')).sort()).toEqual([
          ...Array.from({ length: limit }, (_, i) => i + 1),
          'full',
        ]);
      }),
      { numRuns: scaled(100) },
    );
  });
});

describe('semaphores on memory, 8 concurrent acquirers each with its own limit (1 to 4), every interleaving fast-check picks', () => {
  it('grants each acquire only while fewer than its own limit are live: a lowered limit waits for live permits to end', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), raceScenarioArb(4, 8, true), async (s, scenario) => {
        const clock = createManualClock(1_000_000);
        const store = createMemoryStore({ clock });
        const grants = await runPermitRace(s, store, clock, scenario);
        expectAtMostLive(grants, 4);
        expectTokensRise(grants);
        expectLimitAtEachGrant(grants);
      }),
      { numRuns: scaled(100) },
    );
  });
});
