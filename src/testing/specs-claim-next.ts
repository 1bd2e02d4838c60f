/**
 * Conformance specs of claim-next (issue 24, capability 1: `addItems`, `removeItems`, `claimNext`), run only on
 * stores that offer the three methods. They call the Store directly (the lease API over it comes later), with
 * item keys that carry their set's hash tag (`{set}:name`), as Redis Cluster requires of a set and its keys.
 */
import type { ClaimNextCommand, ClaimNextGranted, ClaimNextOutcome, OnExpired } from '../fence/claim-next.js';
import type { Fence } from '../fence/types.js';
import { isLeaseError } from '../errors.js';
import { newSecret } from '../secret.js';
import type { Store } from '../store.js';
import { expectEqual, expectMatch, expectSame, expectTrue } from './assertions.js';
import { SPEC_TTL_MS, useHarness, type SuiteContext } from './context.js';
import type { MakeStoreHarness } from './harness.js';
import { skipTest, type TestRunner } from './runner.js';

/** A store that offers claim-next. */
type ItemStore = Store & Required<Pick<Store, 'addItems' | 'removeItems' | 'claimNext'>>;

function itemStoreOf(store: Store): ItemStore | null {
  const { addItems, removeItems, claimNext } = store;
  return typeof addItems === 'function' && typeof removeItems === 'function' && typeof claimNext === 'function'
    ? (store as ItemStore)
    : null;
}

/** A claim-next command for `holder` on `set` with a fresh secret and the suite TTL. */
function claimNextCommand(set: string, holder: string, extra: Partial<ClaimNextCommand> = {}): ClaimNextCommand {
  return { set, holder, runId: null, secret: newSecret(), ttlMs: SPEC_TTL_MS, attributes: {}, onExpired: 'take-over', ...extra };
}

/** The fence of a claim-next grant (what its holder presents). */
function fenceOf(granted: ClaimNextGranted, command: ClaimNextCommand): Fence {
  return { key: granted.key, token: granted.token, secret: command.secret, holder: command.holder, runId: command.runId };
}

/** Claims the next item and fails the spec when none is granted. */
async function mustClaimNext(store: ItemStore, command: ClaimNextCommand): Promise<{ granted: ClaimNextGranted; fence: Fence }> {
  const outcome = await store.claimNext(command);
  if (!outcome.ok) throw new Error(`expected ${command.holder} to claim an item of ${command.set}, got idle (nextAt ${outcome.nextAt})`);
  return { granted: outcome, fence: fenceOf(outcome, command) };
}

const keysOf = (outcomes: readonly ClaimNextOutcome[]): string[] => outcomes.map((outcome) => (outcome.ok ? outcome.key : 'idle'));

/** Registers the claim-next specs; each is skipped on a store without the three methods. */
export function describeClaimNextSpecs<S extends Store>(context: SuiteContext<S>): void {
  const { runner } = context;
  /** A fresh set with its item keys (`{set}:name`), on a store that offers claim-next (else the spec is skipped). */
  const fresh = (runnerArguments: readonly unknown[], names: readonly string[]) => {
    const store = itemStoreOf(context.harness.store);
    if (store === null) {
      skipTest(runnerArguments, 'the store does not offer claim-next');
      return null;
    }
    const set = context.harness.freshKey('set').replace(/[{}]/g, '_');
    return { store, set, keys: names.map((name) => `{${set}}:${name}`) };
  };
  /** Lets the store's clock move on (store times are in ms: two releases a few ms apart are ordered). */
  const pause = async (): Promise<void> => {
    const { advanceClock } = context.harness;
    if (advanceClock !== null) advanceClock(5);
    else await new Promise((resolve) => setTimeout(resolve, 5));
  };

  runner.describe('claim-next', () => {
    runner.it('grants the item available longest first: never-claimed items by key, a released item behind them', async (...args) => {
      const given = fresh(args, ['a', 'b', 'c']);
      if (given === null) return;
      const { store, set, keys } = given;
      const [a, b, c] = keys as [string, string, string];
      expectMatch(await store.addItems({ set, keys: [c, a, b] }), { ok: true, set, added: [c, a, b] });
      const first = await mustClaimNext(store, claimNextCommand(set, 'w1'));
      const second = await mustClaimNext(store, claimNextCommand(set, 'w2'));
      expectEqual([first.granted.key, second.granted.key], [a, b], 'the first two grants');
      await pause();
      expectMatch(await store.release({ fence: second.fence }), { ok: true });
      await pause();
      expectMatch(await store.release({ fence: first.fence }), { ok: true });
      const next = [];
      for (const holder of ['w3', 'w4', 'w5']) next.push(await store.claimNext(claimNextCommand(set, holder)));
      expectEqual(keysOf(next), [c, b, a], 'c (never claimed), then b (released first), then a');
      const idle = await store.claimNext(claimNextCommand(set, 'w6'));
      expectMatch(idle, { ok: false, reason: 'idle', set });
      // NOTE: every item is held by a live grant: the first of them to expire is when one becomes claimable.
      const expiries = next.map((outcome) => (outcome.ok ? (outcome.expiresAt as number) : Number.NaN));
      if (!idle.ok) expectSame(idle.nextAt, Math.min(...expiries), 'idle.nextAt');
    });

    runner.it('answers idle on an empty or unknown set, with no time at which an item comes', async (...args) => {
      const given = fresh(args, []);
      if (given === null) return;
      expectMatch(await given.store.claimNext(claimNextCommand(given.set, 'w1')), {
        ok: false,
        reason: 'idle',
        set: given.set,
        nextAt: null,
      });
    });

    runner.it('skips items not yet due and keys held back; idle says when the first becomes claimable', async (...args) => {
      const given = fresh(args, ['later', 'retry']);
      if (given === null) return;
      const { store, set, keys } = given;
      const [later, retry] = keys as [string, string];
      const added = await store.addItems({ set, keys: [later], notBeforeMs: 60_000 });
      if (!added.ok) throw new Error('addItems refused');
      expectSame(added.dueAt, added.now + 60_000, 'dueAt');
      expectMatch(await store.claimNext(claimNextCommand(set, 'w1')), { ok: false, reason: 'idle', nextAt: added.dueAt });
      await store.addItems({ set, keys: [retry] });
      const { fence } = await mustClaimNext(store, claimNextCommand(set, 'w1'));
      expectSame(fence.key, retry, 'the due item');
      const released = await store.release({ fence, holdMs: 30_000 });
      expectMatch(released, { ok: true });
      const inspected = await store.inspect(retry);
      expectTrue(inspected.heldUntil !== null, 'the released key is held back');
      expectMatch(await store.claimNext(claimNextCommand(set, 'w2')), { ok: false, reason: 'idle', nextAt: inspected.heldUntil });
    });

    runner.it("skips a key blocked for recovery, and keys whose state does not match the claim's expect", async (...args) => {
      const given = fresh(args, ['blocked', 'tiered']);
      if (given === null) return;
      const { store, set, keys } = given;
      const [blocked, tiered] = keys as [string, string];
      await store.addItems({ set, keys: [blocked] });
      const { fence } = await mustClaimNext(store, claimNextCommand(set, 'w1'));
      expectMatch(await store.checkpoint({ fence, json: '{"page":3}' }), { ok: true });
      expectMatch(await store.revoke({ key: blocked, reason: 'stuck', by: 'ops', requireRecovery: true, expectedToken: null }), {
        ok: true,
        recoveryRequired: true,
      });
      expectMatch(await store.claimNext(claimNextCommand(set, 'w2')), { ok: false, reason: 'idle', nextAt: null });
      await store.setKeyState({ key: tiered, values: { tier: '2' }, by: 'ramp' });
      await store.addItems({ set, keys: [tiered] });
      expectMatch(await store.claimNext(claimNextCommand(set, 'w2', { expect: { tier: '1' } })), {
        ok: false,
        reason: 'idle',
        nextAt: null,
      });
      expectMatch(await store.claimNext(claimNextCommand(set, 'w2', { expect: { tier: '2' } })), { ok: true, key: tiered });
    });

    runner.it('takes an expired grant over at once, with its checkpoint, and names the abandoned run', async (...args) => {
      const given = fresh(args, ['job']);
      if (given === null) return;
      const { store, set, keys } = given;
      const [job] = keys as [string];
      await store.addItems({ set, keys: [job] });
      const { granted, fence } = await mustClaimNext(store, claimNextCommand(set, 'w1', { runId: 'r7' }));
      await store.checkpoint({ fence, json: '{"page":3}' });
      await context.harness.expireNow(job);
      const next = await store.claimNext(claimNextCommand(set, 'w2', { runId: 'r8' }));
      expectMatch(next, {
        ok: true,
        key: job,
        previous: { kind: 'expired', token: granted.token, holder: 'w1', runId: 'r7' },
        checkpoint: { json: '{"page":3}', token: granted.token },
        abandoned: { token: granted.token, holder: 'w1', runId: 'r7' },
        recoveryRequired: false,
      });
      if (next.ok) expectTrue(next.token > granted.token, 'the new token is larger');
    });

    runner.it(
      'record-first: the key requires recovery until the new holder records the abandoned run; meanwhile nobody takes it',
      async (...args) => {
        const given = fresh(args, ['recorded', 'dropped']);
        if (given === null) return;
        const { store, set, keys } = given;
        const [recorded, dropped] = keys as [string, string];
        const recordFirst = (holder: string, runId: string) =>
          claimNextCommand(set, holder, { runId, onExpired: 'record-first' as OnExpired });
        await store.addItems({ set, keys: [recorded] });
        const r7 = await mustClaimNext(store, recordFirst('w1', 'r7'));
        await context.harness.expireNow(recorded);
        const r8 = await mustClaimNext(store, recordFirst('w2', 'r8'));
        expectMatch(r8.granted, { key: recorded, abandoned: { runId: 'r7', token: r7.granted.token }, recoveryRequired: true });
        expectSame((await store.inspect(recorded)).recoveryRequired, true, 'recoveryRequired while r8 has not recorded');
        // NOTE: the first write with a checkpoint decision is where the app records "r7 abandoned"; it resolves the recovery.
        expectMatch(await store.checkpoint({ fence: r8.fence, json: '{"abandoned":"r7"}' }), { ok: true });
        expectSame((await store.inspect(recorded)).recoveryRequired, false, 'recoveryRequired once r8 recorded');
        expectMatch(await store.release({ fence: r8.fence }), { ok: true });
        expectMatch(await store.claimNext(recordFirst('w3', 'r9')), { ok: true, key: recorded, abandoned: null, recoveryRequired: false });
        // NOTE: out of the set, so that the expiries below (a jump of a test clock) do not offer it again.
        await store.removeItems({ set, keys: [recorded] });

        await store.addItems({ set, keys: [dropped] });
        await mustClaimNext(store, recordFirst('w1', 'r1'));
        await context.harness.expireNow(dropped);
        const r2 = await mustClaimNext(store, recordFirst('w2', 'r2'));
        expectMatch(r2.granted, { key: dropped, recoveryRequired: true });
        // NOTE: r2 dies before recording r1: the key is blocked, not silently taken over again.
        await context.harness.expireNow(dropped);
        expectMatch(await store.claimNext(claimNextCommand(set, 'w3')), { ok: false, reason: 'idle' });
        expectMatch(await store.inspect(dropped), { recoveryRequired: true, grant: { token: r2.granted.token, live: false } });
      },
    );

    runner.it('a claim-next delivered twice with the same secret grants one item', async (...args) => {
      const given = fresh(args, ['one', 'two']);
      if (given === null) return;
      const { store, set, keys } = given;
      await store.addItems({ set, keys });
      const command = claimNextCommand(set, 'w1');
      const first = await store.claimNext(command);
      const again = await store.claimNext(command);
      expectMatch(first, { ok: true, key: keys[0] });
      if (first.ok) expectMatch(again, { ok: true, key: first.key, token: first.token, expiresAt: first.expiresAt });
      expectMatch(await store.claimNext(claimNextCommand(set, 'w2')), { ok: true, key: keys[1] });
    });

    runner.it(
      'a release, a revoke, a state change and removing the record each make the item claimable again: none is lost',
      async (...args) => {
        const given = fresh(args, ['released', 'revoked', 'restated', 'removed']);
        if (given === null) return;
        const { store, set, keys } = given;
        const [released, revoked, restated, removed] = keys as [string, string, string, string];
        await store.addItems({ set, keys });
        const fences = new Map<string, Fence>();
        for (const holder of ['w1', 'w2', 'w3', 'w4']) {
          const { fence } = await mustClaimNext(store, claimNextCommand(set, holder));
          fences.set(fence.key, fence);
        }
        expectMatch(await store.claimNext(claimNextCommand(set, 'w5')), { ok: false, reason: 'idle' });
        expectMatch(await store.release({ fence: fences.get(released) as Fence }), { ok: true });
        expectMatch(await store.revoke({ key: revoked, reason: 'deploy', by: 'ops', requireRecovery: false, expectedToken: null }), {
          ok: true,
        });
        expectMatch(await store.setKeyState({ key: restated, values: { revision: '2' }, by: 'scanner' }), {
          ok: true,
          changed: ['revision'],
        });
        expectMatch(await store.remove({ key: removed, force: true, expectedToken: null }), { ok: true });
        const again = [];
        for (const holder of ['w6', 'w7', 'w8', 'w9', 'w10']) again.push(await store.claimNext(claimNextCommand(set, holder)));
        expectEqual(keysOf(again.slice(0, 4)).sort(), [...keys].sort(), 'the items granted again');
        expectMatch(again[4], { ok: false, reason: 'idle' });
      },
    );

    runner.it(
      'removeItems takes items out (their grants stay); adding again changes nothing; a key of another set is refused',
      async (...args) => {
        const given = fresh(args, ['kept', 'gone']);
        if (given === null) return;
        const { store, set, keys } = given;
        const [kept, gone] = keys as [string, string];
        await store.addItems({ set, keys });
        const held = await mustClaimNext(store, claimNextCommand(set, 'w1'));
        expectSame(held.granted.key, gone, "the first by key ('gone' < 'kept')");
        expectMatch(await store.removeItems({ set, keys: [held.granted.key, `{${set}}:never-added`] }), {
          ok: true,
          removed: [held.granted.key],
        });
        expectMatch(await store.inspect(held.granted.key), { grant: { token: held.granted.token, live: true } });
        expectMatch(await store.addItems({ set, keys: [kept, gone] }), { ok: true });
        const other = `${set}-other`;
        // NOTE: a store whose key names tie an item to one set (Redis: the set's hash tag) refuses such a key as
        // bad input before any I/O instead; either way nothing of the call is added.
        const refused = await store.addItems({ set: other, keys: [`{${other}}:x`, kept] }).catch((error: unknown) => error);
        if (isLeaseError(refused)) expectTrue(isLeaseError(refused, 'INVALID_ARGUMENT'), `InvalidArgumentError, got ${String(refused)}`);
        else expectMatch(refused, { ok: false, reason: 'in-another-set', set: other, key: kept, otherSet: set });
        // NOTE: nothing of the refused call was added: the other set is still empty.
        expectMatch(await store.claimNext(claimNextCommand(other, 'w2')), { ok: false, reason: 'idle', nextAt: null });
      },
    );

    runner.it('refuses bad input with InvalidArgumentError and changes nothing', async (...args) => {
      const given = fresh(args, ['only']);
      if (given === null) return;
      const { store, set, keys } = given;
      const bad: (() => Promise<unknown>)[] = [
        () => store.addItems({ set: '', keys }),
        () => store.addItems({ set, keys: [] }),
        () => store.addItems({ set, keys: [keys[0] as string, keys[0] as string] }),
        () => store.addItems({ set, keys, notBeforeMs: -1 }),
        () => store.addItems({ set, keys, notBeforeMs: Number.NaN }),
        () => store.removeItems({ set, keys: [''] }),
        () => store.claimNext({ ...claimNextCommand(set, 'w1'), onExpired: 'maybe' as OnExpired }),
      ];
      for (const call of bad) {
        let error: unknown = null;
        try {
          await call();
        } catch (caught) {
          error = caught;
        }
        expectTrue(isLeaseError(error, 'INVALID_ARGUMENT'), `InvalidArgumentError, got ${String(error)}`);
      }
      expectMatch(await store.claimNext(claimNextCommand(set, 'w1')), { ok: false, reason: 'idle', nextAt: null });
    });
  });
}

/** Registers the claim-next specs for one store (each is skipped when the store does not offer claim-next). */
export function describeClaimNextConformance<S extends Store>(runner: TestRunner, name: string, makeHarness: MakeStoreHarness<S>): void {
  runner.describe(`${name}: claim-next conformance`, () => {
    describeClaimNextSpecs(useHarness(runner, makeHarness));
  });
}
