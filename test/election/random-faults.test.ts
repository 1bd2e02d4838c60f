/**
 * Five candidates on the memory store, under a random sequence of faults: the leader resigns (and campaigns
 * again), an operator revokes the key, the store's clock jumps past every TTL (each term expires at once), or
 * time passes. Every leader writes its term's token to a ledger through `fencedWrite` every few ms, and once
 * more after its term's signal aborted. Checked: each term began at or after the previous one ended on the
 * store's clock, and the ledger of accepted writes never goes back to an older term (a deposed leader's write
 * is refused). The sequence of faults is seeded (printed; timing is real); LEASEFENCE_TEST_SCALE multiplies its length.
 */
import { describe, expect, it } from 'vitest';
import { createManualClock, createMemoryStore } from '../../src/adapters/memory/index.js';
import { createElection, type Election, type Term } from '../../src/election.js';
import { createLeases } from '../../src/leases.js';
import type { Ending } from '../../src/fence/types.js';
import { scaled } from '../support/scale.js';

const KEY = 'election:random';
const CANDIDATES = 5;
const STEPS = scaled(60);
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A small seeded generator (mulberry32), so a failing sequence can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('election under random resigns, revokes and expiries (memory store)', () => {
  it('one live term at a time on the store clock; no accepted write of a deposed term', async () => {
    const seed = Number(process.env['ELECTION_SEED'] ?? Date.now() % 1_000_000);
    const random = seeded(seed);
    const clock = createManualClock(1_000_000);
    const store = createMemoryStore({ clock });
    const operator = createLeases(store, { holder: 'operator' });
    const ledger: bigint[] = [];
    const terms: Array<{ token: bigint; since: number | null; previous: Ending | null }> = [];
    let refused = 0;
    const elections: Election[] = [];
    const campaigns: Array<Promise<unknown>> = [];
    const leading = new Map<number, Term>();

    const campaign = (index: number): Promise<unknown> => {
      const leases = createLeases(store, { holder: `c${index}` });
      const election = createElection(leases, KEY, { ttlMs: 300 });
      elections[index] = election;
      return election.campaign({
        onElected: async (term, signal) => {
          terms.push({ token: term.token, since: term.since, previous: term.lease.previous });
          leading.set(index, term);
          // NOTE: one more write after the signal aborted: the fence, not the signal, must refuse a deposed term's.
          for (let last = false; !last; ) {
            last = signal.aborted;
            const written = await leases.fencedWrite(term.lease, () => ledger.push(term.token));
            if (!written.ok) {
              refused += 1;
              return;
            }
            await pause(3);
          }
        },
        onDemoted: () => void leading.delete(index),
      });
    };
    for (let index = 0; index < CANDIDATES; index += 1) campaigns[index] = campaign(index);

    for (let step = 0; step < STEPS; step += 1) {
      const roll = random();
      if (roll < 0.3) {
        const [index] = [...leading.keys()];
        if (index !== undefined) {
          await elections[index]?.resign();
          await campaigns[index];
          campaigns[index] = campaign(index);
        }
      } else if (roll < 0.5) {
        await operator.revoke(KEY, { reason: 'random fault' }).catch(() => undefined);
      } else if (roll < 0.7) {
        clock.advance(1_000); // every live term expires at once on the store's clock
      }
      await pause(5 + Math.floor(random() * 40));
    }
    await Promise.all(elections.map((election) => election.resign()));
    await Promise.all(campaigns);

    const context = `seed ${seed} (ELECTION_SEED=${seed} replays the sequence of faults)`;
    console.info(`${context}: ${STEPS} steps, ${terms.length} terms, ${ledger.length} accepted writes, ${refused} refused`);
    expect(terms.length, context).toBeGreaterThan(STEPS / 10);
    const ordered = [...terms].sort((a, b) => (a.token < b.token ? -1 : 1));
    for (const term of ordered) {
      if (term.previous === null) continue;
      expect(term.previous.token, context).toBeLessThan(term.token);
      expect(term.since, `${context}: term ${term.token} began before term ${term.previous.token} ended`).toBeGreaterThanOrEqual(
        term.previous.at,
      );
    }
    const backwards = ledger.filter((token, index) => index > 0 && token < (ledger[index - 1] as bigint));
    expect(backwards, context).toEqual([]);
    expect(refused, context).toBeGreaterThan(0);
    expect((await store.inspect(KEY)).grant, context).toBeNull();
  });
});
