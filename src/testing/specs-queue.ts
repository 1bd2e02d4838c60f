/**
 * Conformance specs of fair waiting (issue 25, part 3: a key's queue of waiting claims, `fence/queue.ts`). They call
 * the Store directly, as the shell's waiting claims do: a waiting claim names its waiters (`command.queue`), a claim
 * that does not wait names none. Each outcome is the one `transitions.claim` / `transitions.dequeue` gives for the
 * record as it was: waiters served in arrival order, a plain claim refused `queued` while anybody waits (granted
 * with `jumpQueue`), a waiter that stops asking gone when its place expires, `dequeue` taking waiters out.
 */
import type { ClaimCommand, DequeueOutcome, StoreClaimOutcome, StoreInspection } from '../fence/operations.js';
import { MAX_WAITER_IDS, MAX_WAITERS } from '../fence/queue.js';
import type { Fence } from '../fence/types.js';
import { newSecret } from '../secret.js';
import type { Store } from '../store.js';
import { expectClose, expectEqual, expectMatch, expectSame, expectTrue } from './assertions.js';
import { SPEC_TTL_MS, type SuiteContext } from './context.js';

/** The TTL of a queue place in the specs that do not let one expire. */
const PLACE_TTL_MS = 30_000;
/** The TTL of a place the specs let expire: short, so a real store's clock passes it quickly. */
const SHORT_PLACE_TTL_MS = 300;

/** A claim of `key` for `holder` with a fresh secret and the suite TTL, waiting as `waiterIds` when given. */
function claimCommand(key: string, holder: string, extra: Partial<ClaimCommand> = {}): ClaimCommand {
  return { key, holder, runId: null, secret: newSecret(), ttlMs: SPEC_TTL_MS, attributes: {}, recovering: false, ...extra };
}

/** A waiting claim's attempt: the claimant `waiterIds[0]`, the others of its process after it. */
function waiting(
  key: string,
  holder: string,
  waiterIds: readonly string[],
  ttlMs = PLACE_TTL_MS,
  extra: Partial<ClaimCommand> = {},
): ClaimCommand {
  return claimCommand(key, holder, { queue: { waiterIds, ttlMs }, ...extra });
}

/** The fence of a granted claim. */
function fenceOf(command: ClaimCommand, outcome: StoreClaimOutcome): Fence {
  if (!outcome.ok) throw new Error(`expected ${command.holder} to be granted ${command.key}, got ${outcome.reason}`);
  return { key: command.key, token: outcome.token, secret: command.secret, holder: command.holder, runId: command.runId };
}

/** The waiter ids of an inspection, in queue order. */
const idsOf = (inspection: StoreInspection): readonly string[] => inspection.waiters.map((waiter) => waiter.waiterId);

/** Registers the fair-waiting specs (every store offers them: `dequeue` is required). */
export function describeQueueSpecs<S extends Store>(context: SuiteContext<S>): void {
  const { runner } = context;
  /**
   * Lets the store's clock pass `ms`: a clock the test controls moves; any other is waited for until the store's
   * own now (read from `inspect`) is past it, however slowly it runs against this process's timers.
   */
  const pass = async (ms: number): Promise<void> => {
    const { advanceClock, store } = context.harness;
    if (advanceClock !== null) {
      advanceClock(ms);
      return;
    }
    const probe = context.harness.freshKey('clock');
    const until = (await store.inspect(probe)).now + ms;
    while ((await store.inspect(probe)).now <= until) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  /** A key held by `holder-a`, and its fence. */
  const heldKey = async (label: string) => {
    const { store } = context.harness;
    const key = context.harness.freshKey(label);
    const command = claimCommand(key, 'holder-a');
    return { store, key, fence: fenceOf(command, await store.claim(command)) };
  };

  runner.describe('fair waiting', () => {
    runner.it('a waiting claim refused held takes a place in the queue; the waiters are then served in arrival order', async () => {
      const { store, key, fence } = await heldKey('fifo');
      const first = await store.claim(waiting(key, 'w1', ['id-1']));
      expectMatch(first, { ok: false, reason: 'held', holder: 'holder-a' });
      const second = await store.claim(waiting(key, 'w2', ['id-2']));
      expectMatch(second, { ok: false, reason: 'held' });
      const queued = await store.inspect(key);
      expectEqual(idsOf(queued), ['id-1', 'id-2'], 'the queue after two waiting claims');
      expectMatch(queued.waiters, [{ holder: 'w1' }, { holder: 'w2' }], 'the waiters');
      const [one, two] = queued.waiters;
      if (one === undefined || two === undefined) throw new Error('two waiters expected');
      expectClose(one.expiresAt - one.arrivedAt, PLACE_TTL_MS, 'the first place lasts its TTL from its arrival');
      expectTrue(one.arrivedAt <= two.arrivedAt, 'arrival times in queue order');
      expectMatch(await store.release({ fence }), { ok: true });
      // NOTE: the second waiter asks first, as if its notification came first: it is told it is number 2.
      const early = await store.claim(waiting(key, 'w2', ['id-2']));
      expectMatch(early, { ok: false, reason: 'queued', waiting: 2, position: 2, first: { holder: 'w1', arrivedAt: one.arrivedAt } });
      const grantW1 = waiting(key, 'w1', ['id-1']);
      const w1 = fenceOf(grantW1, await store.claim(grantW1));
      expectEqual(idsOf(await store.inspect(key)), ['id-2'], 'the queue once the first waiter is granted');
      expectMatch(await store.claim(waiting(key, 'w2', ['id-2'])), { ok: false, reason: 'held', holder: 'w1' });
      expectMatch(await store.release({ fence: w1 }), { ok: true });
      const grantW2 = waiting(key, 'w2', ['id-2']);
      const w2 = await store.claim(grantW2);
      expectMatch(w2, { ok: true });
      expectEqual(idsOf(await store.inspect(key)), [], 'the queue once every waiter is granted');
      // NOTE: the granted claim delivered again (its reply lost) answers the grant it made.
      expectMatch(await store.claim(grantW2), { ok: true, token: w2.ok ? w2.token : -1n });
    });

    runner.it(
      'a claim that does not wait is refused queued while anybody waits, writing nothing; jumpQueue takes the key first',
      async () => {
        const { store, key, fence } = await heldKey('plain');
        await store.claim(waiting(key, 'w1', ['id-1']));
        await store.release({ fence });
        const before = await store.inspect(key);
        const plain = await store.claim(claimCommand(key, 'plain'));
        expectMatch(plain, { ok: false, reason: 'queued', waiting: 1, position: null, first: { holder: 'w1' }, token: before.token });
        const after = await store.inspect(key);
        expectEqual(after.waiters, before.waiters, 'the queue after a refused plain claim (nothing written)');
        expectSame(after.token, before.token, 'the token after a refused plain claim');
        const jumping = claimCommand(key, 'operator', { jumpQueue: true });
        const jumped = await store.claim(jumping);
        expectMatch(jumped, { ok: true });
        // NOTE: above the key's token; exactly one more only on a store without a clock floor.
        expectTrue(jumped.ok && jumped.token > before.token, 'the jumping grant has a token above the key token');
        expectEqual(idsOf(await store.inspect(key)), ['id-1'], 'the queue after a jumpQueue grant (kept)');
      },
    );

    runner.it(
      'one attempt names several waiters: the missing ones are appended in its order, the present ones keep their place',
      async () => {
        const { store, key } = await heldKey('batch');
        await store.claim(waiting(key, 'p1', ['a-1']));
        await store.claim(waiting(key, 'p2', ['b-1']));
        // NOTE: process 1's next attempt names its head and two waiters that arrived since: they go to the back.
        await store.claim(waiting(key, 'p1', ['a-1', 'a-2', 'a-3', 'a-2']));
        const inspection = await store.inspect(key);
        expectEqual(idsOf(inspection), ['a-1', 'b-1', 'a-2', 'a-3'], 'the queue');
        expectMatch(inspection.waiters, [{ holder: 'p1' }, { holder: 'p2' }, { holder: 'p1' }, { holder: 'p1' }]);
      },
    );

    runner.it("a granted waiting claim queues the other waiters it names (its process's), in its order, behind the queue", async () => {
      const { store } = context.harness;
      const free = context.harness.freshKey('grant-names');
      expectMatch(
        await store.claim(waiting(free, 'p1', ['a-1', 'a-2', 'a-3'])),
        { ok: true },
        'the claim for a-1 of a key nobody waits for',
      );
      expectEqual(idsOf(await store.inspect(free)), ['a-2', 'a-3'], 'the queue after the grant');
      const { key, fence } = await heldKey('grant-names-queued');
      await store.claim(waiting(key, 'p1', ['a-1']));
      await store.claim(waiting(key, 'p2', ['b-1']));
      await store.release({ fence });
      expectMatch(await store.claim(waiting(key, 'p1', ['a-1', 'a-2'])), { ok: true }, 'the claim for a-1, first in the queue');
      expectEqual(idsOf(await store.inspect(key)), ['b-1', 'a-2'], 'the queue: b-1 came before a-2');
    });

    runner.it('a waiter that stops asking leaves the queue when its place expires; the next one is served', async () => {
      const { store, key, fence } = await heldKey('expiry');
      await store.claim(waiting(key, 'gone', ['id-gone'], SHORT_PLACE_TTL_MS));
      await store.claim(waiting(key, 'next', ['id-next'], PLACE_TTL_MS));
      await store.release({ fence });
      expectMatch(await store.claim(waiting(key, 'next', ['id-next'])), {
        ok: false,
        reason: 'queued',
        position: 2,
        first: { holder: 'gone' },
      });
      await pass(SHORT_PLACE_TTL_MS);
      expectEqual(idsOf(await store.inspect(key)), ['id-next'], 'the live queue once the first place expired');
      expectMatch(await store.claim(waiting(key, 'next', ['id-next'])), { ok: true });
      expectEqual(idsOf(await store.inspect(key)), [], 'the queue after the grant');
      // NOTE: the expired waiter asking again is queued anew, at the back: its place was gone.
    });

    runner.it('a queue never blocks the key after its waiters are gone: a plain claim is granted once every place expired', async () => {
      const { store, key, fence } = await heldKey('gone');
      await store.claim(waiting(key, 'w1', ['id-1', 'id-2'], SHORT_PLACE_TTL_MS));
      await store.release({ fence });
      expectMatch(await store.claim(claimCommand(key, 'plain')), { ok: false, reason: 'queued', waiting: 2 });
      await pass(SHORT_PLACE_TTL_MS);
      expectMatch(await store.claim(claimCommand(key, 'plain')), { ok: true });
    });

    runner.it('dequeue takes waiters out; it frees the key for the next waiter only when the first left a claimable key', async () => {
      const { store, key, fence } = await heldKey('dequeue');
      for (const id of ['id-1', 'id-2', 'id-3']) await store.claim(waiting(key, id, [id]));
      const held: DequeueOutcome = await store.dequeue({ key, waiterIds: ['id-1'] });
      expectMatch(held, { ok: true, key, removed: 1, freed: false }, 'dequeue of the first while the key is held');
      expectMatch(await store.dequeue({ key, waiterIds: ['nobody', 'id-1'] }), { ok: true, removed: 0, freed: false });
      await store.release({ fence });
      expectMatch(await store.dequeue({ key, waiterIds: ['id-3'] }), { removed: 1, freed: false }, 'dequeue of a waiter not first');
      expectEqual(idsOf(await store.inspect(key)), ['id-2'], 'the queue');
      await store.claim(waiting(key, 'id-4', ['id-4']));
      expectMatch(await store.dequeue({ key, waiterIds: ['id-2'] }), { removed: 1, freed: true }, 'the first leaves a claimable key');
      expectMatch(await store.dequeue({ key, waiterIds: ['id-4'] }), { removed: 1, freed: false }, 'the last leaves: nobody to tell');
      expectMatch(await store.dequeue({ key: context.harness.freshKey('no-record'), waiterIds: ['id-1'] }), { ok: true, removed: 0 });
      expectMatch(await store.claim(claimCommand(key, 'plain')), { ok: true });
    });

    runner.it('a dequeue that frees the key tells release watchers', async () => {
      const { store, key, fence } = await heldKey('dequeue-tells');
      if (typeof store.watchFreed !== 'function') return;
      await store.claim(waiting(key, 'w1', ['id-1']));
      await store.claim(waiting(key, 'w2', ['id-2']));
      await store.release({ fence });
      let told = 0;
      const heard = new Promise<void>((resolve) => {
        void store
          .watchFreed?.(key, () => {
            told += 1;
            resolve();
          })
          .then((unsubscribe) => {
            void heard.then(unsubscribe);
            void store.dequeue({ key, waiterIds: ['id-1'] });
          });
      });
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5_000).unref?.());
      expectSame(await Promise.race([heard.then(() => 'heard'), timeout]), 'heard', 'the watcher heard the dequeue');
      expectTrue(told >= 1, 'told at least once');
    });

    runner.it('refusals that are not about the key being taken do not queue: state-mismatch and recovery-required', async () => {
      const { store, key, fence } = await heldKey('no-queue');
      await store.checkpoint({ fence, json: '{"step":1}' });
      expectMatch(await store.revoke({ key, reason: 'test', by: 'op', requireRecovery: true, expectedToken: null }), {
        ok: true,
        recoveryRequired: true,
      });
      expectMatch(await store.claim(waiting(key, 'w1', ['id-1'])), { ok: false, reason: 'recovery-required' });
      expectMatch(await store.claim(waiting(key, 'w2', ['id-2'], PLACE_TTL_MS, { expect: { tier: 'gold' } })), {
        ok: false,
        reason: 'state-mismatch',
      });
      expectEqual(idsOf(await store.inspect(key)), [], 'the queue');
    });

    runner.it('a recovering claim of a key awaiting recovery is not queued behind waiters that cannot take it', async () => {
      const { store, key, fence } = await heldKey('recovering');
      await store.checkpoint({ fence, json: '{"step":1}' });
      await store.claim(waiting(key, 'w1', ['id-1']));
      await store.revoke({ key, reason: 'test', by: 'op', requireRecovery: true, expectedToken: null });
      expectMatch(await store.claim(waiting(key, 'w1', ['id-1'])), { ok: false, reason: 'recovery-required' });
      expectMatch(await store.claim(claimCommand(key, 'recoverer', { recovering: true })), { ok: true });
      expectEqual(idsOf(await store.inspect(key)), ['id-1'], 'the queue (the recoverer was never in it)');
    });

    runner.it(
      'a held-back key queues its waiting claims; release, renew, checkpoint and setKeyState keep the queue, remove deletes it',
      async () => {
        const { store, key, fence } = await heldKey('keeps');
        await store.claim(waiting(key, 'w1', ['id-1']));
        expectMatch(await store.renew({ fence, ttlMs: SPEC_TTL_MS }), { ok: true });
        expectMatch(await store.checkpoint({ fence, json: '{"n":1}' }), { ok: true });
        expectMatch(await store.release({ fence, holdMs: 60_000 }), { ok: true });
        expectMatch(await store.claim(waiting(key, 'w2', ['id-2'])), { ok: false, reason: 'held-back' });
        expectMatch(await store.setKeyState({ key, values: { tier: 'gold' }, by: 'op' }), { ok: true });
        expectEqual(
          idsOf(await store.inspect(key)),
          ['id-1', 'id-2'],
          'the queue after renew, checkpoint, release, held-back, setKeyState',
        );
        expectMatch(await store.remove({ key, force: false, expectedToken: null }), { ok: true });
        expectEqual(idsOf(await store.inspect(key)), [], 'the queue after remove');
        expectMatch(await store.claim(claimCommand(key, 'plain')), { ok: true });
      },
    );

    runner.it('claim-next and acquirePermit do not consult a key queue, and keep it', async () => {
      const { store } = context.harness;
      if (typeof store.claimNext === 'function' && typeof store.addItems === 'function') {
        const set = context.harness.freshKey('fair-set').replace(/[{}]/g, '_');
        // NOTE: `{set}:name`: on Redis an item key carries its set's hash tag (one slot).
        const item = `{${set}}:item`;
        expectMatch(await store.addItems({ set, keys: [item] }), { ok: true });
        const holding = claimCommand(item, 'holder-a');
        const fence = fenceOf(holding, await store.claim(holding));
        await store.claim(waiting(item, 'w1', ['id-1']));
        await store.release({ fence });
        const next = await store.claimNext({
          set,
          holder: 'next',
          runId: null,
          secret: newSecret(),
          ttlMs: SPEC_TTL_MS,
          attributes: {},
          onExpired: 'take-over',
        });
        expectMatch(next, { ok: true, key: item }, 'claimNext of an item someone waits for');
        expectEqual(idsOf(await store.inspect(item)), ['id-1'], 'the item queue after claimNext');
      }
      if (typeof store.acquirePermit === 'function') {
        const semaphore = context.harness.freshKey('fair-sem').replace(/[{}]/g, '_');
        const acquire = { semaphore, limit: 1, holder: 'p', runId: null, ttlMs: SPEC_TTL_MS, attributes: {}, recovering: false };
        const firstSecret = newSecret();
        const first = await store.acquirePermit({ ...acquire, secret: firstSecret });
        if (!first.ok) throw new Error('the first permit was refused');
        await store.claim(waiting(first.key, 'w1', ['id-1']));
        expectMatch(await store.release({ fence: { key: first.key, token: first.token, secret: firstSecret, holder: 'p', runId: null } }), {
          ok: true,
        });
        const secret = newSecret();
        expectMatch(
          await store.acquirePermit({ ...acquire, secret }),
          { ok: true, key: first.key },
          'acquirePermit of a permit someone waits for',
        );
        expectEqual(idsOf(await store.inspect(first.key)), ['id-1'], 'the permit queue after acquirePermit');
      }
    });

    runner.it(`a queue holds at most ${MAX_WAITERS} waiters: one more is not queued and is told so (position null)`, async () => {
      const { store, key, fence } = await heldKey('bounded');
      for (let batch = 0; batch < MAX_WAITERS / MAX_WAITER_IDS; batch += 1) {
        const ids = Array.from({ length: MAX_WAITER_IDS }, (_, i) => `w-${batch}-${i}`);
        await store.claim(waiting(key, `p${batch}`, ids));
      }
      expectMatch(await store.claim(waiting(key, 'late', ['late-1'])), { ok: false, reason: 'held' });
      expectSame((await store.inspect(key)).waiters.length, MAX_WAITERS, 'the queue length at the bound');
      await store.release({ fence });
      expectMatch(await store.claim(waiting(key, 'late', ['late-1'])), {
        ok: false,
        reason: 'queued',
        position: null,
        waiting: MAX_WAITERS,
      });
      expectMatch(await store.dequeue({ key, waiterIds: ['w-3-7'] }), { removed: 1, freed: false });
      expectMatch(await store.claim(waiting(key, 'late', ['late-1'])), { ok: false, reason: 'queued', position: MAX_WAITERS });
    });
  });
}
