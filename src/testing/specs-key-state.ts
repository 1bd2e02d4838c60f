/**
 * Conformance specs, part 5: what belongs to the key rather than to a grant (issue 24), on the Store contract.
 * Key state that fences (`setKeyState`, a claim's `expect`), holding a key back until a time (release with
 * `holdMs`, `setKeyState` with `holdMs`) and an operator's `remove`, whose re-created key never reissues a token.
 */
import type { Store } from '../store.js';
import { expectClose, expectEqual, expectMatch, expectSame, expectTrue } from './assertions.js';
import type { SuiteContext } from './context.js';
import { claimOnStore, mustClaimOnStore } from './store-fences.js';

/** A hold long enough that real servers never reach it during a spec. */
const LONG_HOLD_MS = 600_000;

/** Registers the key-state, hold-back and remove specs. */
export function describeKeyStateSpecs<S extends Store>(context: SuiteContext<S>): void {
  const { runner } = context;
  const store = (): S => context.harness.store;

  runner.describe('key state', () => {
    runner.it(
      'needs no lease: sets and removes values, inspect shows them; setting the values it has changes nothing and keeps the grant',
      async () => {
        const key = context.harness.freshKey('state-set');
        expectMatch(await store().setKeyState({ key, values: { rev: '1', tier: 'canary' }, by: 'scanner' }), {
          ok: true,
          key,
          state: { rev: '1', tier: 'canary' },
          changed: ['rev', 'tier'],
          ended: null,
          heldUntil: null,
        });
        const { fence } = await mustClaimOnStore(store(), key, 'a', { expect: { rev: '1' } });
        const same = await store().setKeyState({ key, values: { rev: '1', tier: 'canary', gone: null }, by: 'scanner' });
        expectMatch(same, { ok: true, changed: [], ended: null });
        expectEqual(same.state, { rev: '1', tier: 'canary' }, 'the state after an unchanged set');
        expectMatch(await store().renew({ fence, ttlMs: 60_000 }), { ok: true, token: fence.token });
        expectMatch(await context.harness.fencedAppend(fence, 'kept'), { ok: true, token: fence.token });
        const removed = await store().setKeyState({ key, values: { tier: null }, by: 'scanner' });
        expectMatch(removed, { ok: true, changed: ['tier'], ended: { kind: 'state-changed', token: fence.token } });
        expectEqual((await store().inspect(key)).state, { rev: '1' }, 'the state after removing a name');
      },
    );

    runner.it(
      'a changed value ends the live grant: its every operation is refused state-changed naming the value (expected at grant time, found now); the next claim is told',
      async () => {
        const key = context.harness.freshKey('state-fences');
        await store().setKeyState({ key, values: { rev: '1', tier: 'a' }, by: 'scanner' });
        const { fence } = await mustClaimOnStore(store(), key, 'a', { runId: 'r1' });
        await store().checkpoint({ fence, json: '{"step":1}' });
        const ended = await store().setKeyState({ key, values: { tier: 'b', rev: '2', B: 'x' }, by: 'rescan' });
        // NOTE: code-unit order: 'B' < 'rev' < 'tier'.
        expectMatch(ended, {
          ok: true,
          changed: ['B', 'rev', 'tier'],
          ended: {
            kind: 'state-changed',
            token: fence.token,
            holder: 'a',
            runId: 'r1',
            by: 'rescan',
            change: { name: 'B', from: null, to: 'x' },
          },
        });
        await store().setKeyState({ key, values: { B: 'y' }, by: 'rescan' });
        const refusal = {
          ok: false,
          reason: 'state-changed',
          key,
          expected: { token: fence.token, holder: 'a', runId: 'r1' },
          found: { token: fence.token, holder: null, ending: { kind: 'state-changed', by: 'rescan' } },
          attribute: { name: 'B', expected: null, found: 'y' },
        };
        expectMatch(await store().renew({ fence, ttlMs: 60_000 }), refusal, 'renew');
        expectMatch(await store().checkpoint({ fence, json: '{"step":2}' }), refusal, 'checkpoint');
        expectMatch(await context.harness.fencedAppend(fence, 'stale'), refusal, 'fenced write');
        expectMatch(await store().recover({ fence, action: 'resume' }), refusal, 'recover');
        expectMatch(await store().release({ fence }), refusal, 'release');
        expectEqual(await context.harness.readLedger(key), [], 'the ledger');
        const inspected = await store().inspect(key);
        expectMatch(inspected, {
          token: fence.token,
          grant: null,
          state: { rev: '2', tier: 'b', B: 'y' },
          checkpoint: { json: '{"step":1}' },
        });
        const next = await claimOnStore(store(), key, 'b');
        expectMatch(next, {
          ok: true,
          previous: { kind: 'state-changed', token: fence.token, by: 'rescan' },
          checkpoint: { json: '{"step":1}' },
        });
        if (next.ok) expectTrue(next.token > fence.token, 'the next token > the ended grant token');
      },
    );

    runner.it('a change records an expired grant as expired (its fence then says expired)', async () => {
      const key = context.harness.freshKey('state-expired');
      const { fence } = await mustClaimOnStore(store(), key, 'a');
      await context.harness.expireNow(key);
      expectMatch(await store().setKeyState({ key, values: { rev: '2' }, by: 'scanner' }), {
        ok: true,
        ended: { kind: 'expired', token: fence.token, holder: 'a' },
      });
      expectMatch(await store().renew({ fence, ttlMs: 60_000 }), { ok: false, reason: 'expired', attribute: null });
    });

    runner.it(
      'a claim with expect is refused state-mismatch (before held) naming the first differing value; granted when all match',
      async () => {
        const key = context.harness.freshKey('state-expect');
        expectMatch(await claimOnStore(store(), key, 'a', { expect: { rev: '1' } }), {
          ok: false,
          reason: 'state-mismatch',
          key,
          field: { name: 'rev', expected: '1', found: null },
        });
        expectSame((await store().inspect(key)).exists, false, 'a refused claim created the record');
        await store().setKeyState({ key, values: { rev: '1', tier: 't2' }, by: 'scanner' });
        const { fence } = await mustClaimOnStore(store(), key, 'a', { expect: { rev: '1', tier: 't2', gone: null } });
        expectMatch(await claimOnStore(store(), key, 'b', { expect: { tier: 't3', rev: '0' } }), {
          ok: false,
          reason: 'state-mismatch',
          field: { name: 'rev', expected: '0', found: '1' },
        });
        expectMatch(await claimOnStore(store(), key, 'b', { expect: { rev: '1' } }), { ok: false, reason: 'held', token: fence.token });
      },
    );
  });

  runner.describe('hold-back', () => {
    runner.it(
      'release with holdMs: claims are refused held-back until the store reaches heldUntil, then granted; the grant clears it',
      async () => {
        const key = context.harness.freshKey('hold-release');
        const { fence } = await mustClaimOnStore(store(), key, 'a');
        const clocked = context.harness.advanceClock !== null;
        const holdMs = clocked ? 5_000 : LONG_HOLD_MS;
        const released = await store().release({ fence, holdMs });
        expectMatch(released, { ok: true, alreadyReleased: false });
        const heldUntil = released.ok ? released.now + holdMs : 0;
        const inspected = await store().inspect(key);
        // NOTE: close, not equal: stores with sub-millisecond clocks may return fractional epoch ms.
        expectClose(inspected.heldUntil, heldUntil, 'inspect heldUntil');
        const refused = await claimOnStore(store(), key, 'b');
        expectMatch(refused, { ok: false, reason: 'held-back', key, token: fence.token });
        expectClose(refused.ok || refused.reason !== 'held-back' ? null : refused.heldUntil, heldUntil, 'the refusal heldUntil');
        if (clocked) {
          context.harness.advanceClock!(holdMs - 1);
          expectMatch(await claimOnStore(store(), key, 'b'), { ok: false, reason: 'held-back' });
          context.harness.advanceClock!(1);
          expectSame((await store().inspect(key)).heldUntil, null, 'inspect heldUntil once it passed');
        } else {
          expectMatch(await store().setKeyState({ key, values: {}, by: 'ops', holdMs: null }), { ok: true, heldUntil: null, ended: null });
        }
        expectMatch(await claimOnStore(store(), key, 'b'), { ok: true, previous: { kind: 'released', token: fence.token } });
        expectSame((await store().inspect(key)).heldUntil, null, 'heldUntil after the grant');
      },
    );

    runner.it(
      'setKeyState holds a key back (ending no grant), keeps the hold when holdMs is absent, and cancels it with null',
      async () => {
        const key = context.harness.freshKey('hold-state');
        const held = await store().setKeyState({ key, values: {}, by: 'ops', holdMs: LONG_HOLD_MS });
        expectMatch(held, { ok: true, changed: [], ended: null });
        expectClose(held.heldUntil, held.now + LONG_HOLD_MS, 'the hold set');
        expectMatch(await claimOnStore(store(), key, 'a'), { ok: false, reason: 'held-back' });
        const kept = await store().setKeyState({ key, values: { rev: '1' }, by: 'ops' });
        expectClose(kept.heldUntil, held.now + LONG_HOLD_MS, 'the hold kept');
        expectMatch(await claimOnStore(store(), key, 'a'), { ok: false, reason: 'held-back' });
        expectMatch(await store().setKeyState({ key, values: {}, by: 'ops', holdMs: null }), { ok: true, heldUntil: null });
        const { fence } = await mustClaimOnStore(store(), key, 'a');
        // A hold set while a grant is live does not end it; the holder keeps working.
        expectMatch(await store().setKeyState({ key, values: {}, by: 'ops', holdMs: LONG_HOLD_MS }), { ok: true, ended: null });
        expectMatch(await store().renew({ fence, ttlMs: 60_000 }), { ok: true });
        expectMatch(await claimOnStore(store(), key, 'b'), { ok: false, reason: 'held' });
      },
    );
  });

  runner.describe('remove', () => {
    runner.it(
      'is refused missing without a record, held while a grant is live (unless force), superseded on another expectedToken',
      async () => {
        const key = context.harness.freshKey('remove-refused');
        expectMatch(await store().remove({ key, force: false, expectedToken: null }), { ok: false, reason: 'missing', key, token: null });
        const { fence } = await mustClaimOnStore(store(), key, 'a', { runId: 'r1' });
        expectMatch(await store().remove({ key, force: false, expectedToken: null }), { ok: false, reason: 'held', token: fence.token });
        expectMatch(await store().remove({ key, force: true, expectedToken: fence.token + 1n }), {
          ok: false,
          reason: 'superseded',
          token: fence.token,
        });
        expectMatch(await store().inspect(key), { exists: true, grant: { token: fence.token } });
        expectMatch(await store().remove({ key, force: true, expectedToken: fence.token }), {
          ok: true,
          key,
          token: fence.token,
          grant: { token: fence.token, holder: 'a', runId: 'r1', live: true },
        });
        expectMatch(await store().inspect(key), { exists: false, token: 0n, grant: null, state: {}, heldUntil: null });
      },
    );

    runner.it(
      'after remove every operation of an old grant says missing, and the key claimed again mints tokens above every earlier one',
      async () => {
        const key = context.harness.freshKey('remove-tokens');
        const first = await mustClaimOnStore(store(), key, 'a');
        await store().release({ fence: first.fence });
        const second = await mustClaimOnStore(store(), key, 'b');
        await store().checkpoint({ fence: second.fence, json: '{"n":2}' });
        await store().setKeyState({ key, values: { rev: '7' }, by: 'scanner', holdMs: null });
        const third = await mustClaimOnStore(store(), key, 'c');
        await store().revoke({ key, reason: 'x', by: 'ops', requireRecovery: false, expectedToken: null });
        const burned = (await store().inspect(key)).token;
        expectMatch(await store().remove({ key, force: false, expectedToken: null }), { ok: true, token: burned, grant: null });
        const { fence } = third;
        const missing = { ok: false, reason: 'missing', key, expected: { token: fence.token }, found: { token: null, ending: null } };
        expectMatch(await store().renew({ fence, ttlMs: 60_000 }), missing, 'renew');
        expectMatch(await store().checkpoint({ fence, json: '{}' }), missing, 'checkpoint');
        expectMatch(await context.harness.fencedAppend(fence, 'late'), missing, 'fenced write');
        expectMatch(await store().recover({ fence, action: 'discard' }), missing, 'recover');
        expectMatch(await store().release({ fence }), missing, 'release');
        expectEqual(await context.harness.readLedger(key), [], 'the ledger');
        // A key created again (first by its state, then by a claim) starts over, with every token above the old ones.
        await store().setKeyState({ key, values: { rev: '1' }, by: 'scanner' });
        const again = await mustClaimOnStore(store(), key, 'd');
        expectMatch(again.granted, { previous: null, checkpoint: null });
        expectTrue(again.fence.token > burned, `the re-created key's token ${again.fence.token} > every earlier token (${burned})`);
        await store().remove({ key, force: true, expectedToken: null });
        const fresh = await mustClaimOnStore(store(), key, 'e');
        expectTrue(fresh.fence.token > again.fence.token, `after a second removal too (${fresh.fence.token} > ${again.fence.token})`);
      },
    );
  });
}
