/**
 * The fair-waiting race (issue 25, part 3): waiting claims from several connections (each a process, in effect) take
 * places in a key's queue in whatever order the network delivers them, then all of them (and a claim that does not
 * wait) claim at once, round after round, each round in an order `fc.scheduler()` picks. Whatever the interleaving:
 * every place is taken, the grants follow the queue's order exactly, never two in one round, and the claim that does
 * not wait is granted only once nobody waits.
 */
import fc from 'fast-check';
import type { ClaimCommand, StoreClaimOutcome } from '../fence/operations.js';
import { newSecret } from '../secret.js';
import type { Store } from '../store.js';
import { expectEqual, expectSame, expectTrue } from './assertions.js';
import type { StoreHarness } from './harness.js';

/** A place's TTL in the race: no place expires during a run, on any clock. */
const PLACE_TTL_MS = 120_000;
/** The grants' TTL: no grant expires during a run. */
const GRANT_TTL_MS = 120_000;

/** What the fair-waiting race property states; a failure report starts with it. */
export const QUEUE_RACE_PROPERTY =
  'under any interleaving: waiting claims are granted in the order the store queued them, one per release, and a claim that does not wait never goes first';

/** A claim of `key` for `holder`, waiting as `waiterId` when given. */
function claimOf(key: string, holder: string, waiterId: string | null): ClaimCommand {
  return {
    key,
    holder,
    runId: null,
    secret: newSecret(),
    ttlMs: GRANT_TTL_MS,
    attributes: {},
    recovering: false,
    ...(waiterId === null ? {} : { queue: { waiterIds: [waiterId], ttlMs: PLACE_TTL_MS } }),
  };
}

/** One run: `stores` are the connections, one waiter each; the scheduler orders every request and response. */
export async function queueRaceKeepsOrder<S extends Store>(
  scheduler: fc.Scheduler,
  harness: StoreHarness<S>,
  stores: readonly S[],
): Promise<void> {
  const key = harness.freshKey('queue-race');
  const { store } = harness;
  /** `command` sent on `on` when the scheduler lets it go, its answer returned when the scheduler lets it back. */
  const scheduled = async (on: Store, label: string, command: ClaimCommand): Promise<StoreClaimOutcome> => {
    await scheduler.schedule(Promise.resolve(`${label}:request`));
    const outcome = await on.claim(command);
    await scheduler.schedule(Promise.resolve(`${label}:response`));
    return outcome;
  };
  const holding = claimOf(key, 'holder', null);
  const held = await store.claim(holding);
  if (!held.ok) throw new Error(`the race's first claim of ${key} was refused (${held.reason})`);
  const ids = stores.map((_, i) => `waiter-${i}`);
  const arrivals = stores.map((on, i) => scheduled(on, `arrive-${i}`, claimOf(key, `w${i}`, ids[i] as string)));
  const arrived = await scheduler.waitFor(Promise.all(arrivals));
  expectTrue(
    arrived.every((outcome) => !outcome.ok && outcome.reason === 'held'),
    'every waiting claim was refused held while the key was held',
  );
  const queue = (await store.inspect(key)).waiters.map((waiter) => waiter.waiterId);
  expectEqual([...queue].sort(), [...ids].sort(), 'every waiting claim has a place in the queue');
  await store.release({ fence: { key, token: held.token, secret: holding.secret, holder: 'holder', runId: null } });
  const granted: string[] = [];
  let remaining = ids.map((id, i) => ({ id, i }));
  for (let round = 0; remaining.length > 0 && round <= ids.length; round += 1) {
    const attempts = remaining.map(({ id, i }) => {
      const command = claimOf(key, `w${i}`, id);
      return scheduled(stores[i] as Store, `round-${round}-${id}`, command).then((outcome) => ({ id, command, outcome }));
    });
    const plain = scheduled(store, `round-${round}-plain`, claimOf(key, 'plain', null));
    const [answers, plainAnswer] = await scheduler.waitFor(Promise.all([Promise.all(attempts), plain]));
    expectTrue(!plainAnswer.ok, `the claim that does not wait was refused while ${remaining.length} waited (round ${round})`);
    const winners = answers.filter((answer) => answer.outcome.ok);
    expectSame(winners.length, 1, `grants in round ${round}`);
    const [winner] = winners;
    if (winner === undefined || !winner.outcome.ok) return;
    granted.push(winner.id);
    remaining = remaining.filter(({ id }) => id !== winner.id);
    const { command, outcome } = winner;
    await store.release({ fence: { key, token: outcome.token, secret: command.secret, holder: command.holder, runId: null } });
  }
  expectEqual(granted, queue, 'the grants, in the queue order');
  expectSame((await store.claim(claimOf(key, 'plain', null))).ok, true, 'a claim that does not wait, once nobody waits');
}

/** The fair-waiting race property over `harnessOf()` and its connections. */
export function queueRaceProperty<S extends Store>(
  harnessOf: () => StoreHarness<S>,
  storesOf: () => readonly S[],
): fc.IAsyncPropertyWithHooks<[fc.Scheduler]> {
  return fc.asyncProperty(fc.scheduler(), (scheduler) => queueRaceKeepsOrder(scheduler, harnessOf(), storesOf()));
}
