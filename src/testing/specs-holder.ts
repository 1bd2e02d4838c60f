/**
 * Conformance specs, part 1: what a holder sees. Claim, held, expiry and takeover, renew, checkpoint,
 * fenced writes and release, each checked against what `inspect` says the store holds afterwards.
 */
import type { Store } from '../store.js';
import { expectClose, expectMatch, expectEqual, expectSame, expectTrue } from './assertions.js';
import { mustClaim, SPEC_TTL_MS, type SuiteContext } from './context.js';

/** Registers the holder's specs: claim, renew, checkpoint, fenced write, release. */
export function describeHolderSpecs<S extends Store>(context: SuiteContext<S>): void {
  const { runner } = context;
  runner.describe('claim', () => {
    runner.it('grants a fresh key: a positive token, no previous holder, no checkpoint, expires-at = acquired-at + ttl', async () => {
      const key = context.harness.freshKey('claim');
      const claimed = await context.leasesFor('a').claim(key, { runId: 'r1' });
      expectTrue(claimed.ok, 'claimed.ok');
      if (!claimed.ok) return;
      const { lease } = claimed;
      expectTrue(lease.token > 0n, 'lease.token > 0n');
      expectSame(claimed.previous, null);
      expectSame(claimed.checkpoint, null);
      expectClose(lease.expiresAt! - lease.acquiredAt!, SPEC_TTL_MS);
      const seen = await context.leasesFor('ops').inspect(key);
      expectMatch(seen, {
        exists: true,
        token: lease.token,
        grant: { token: lease.token, holder: 'a', runId: 'r1', live: true, expiresAt: lease.expiresAt },
      });
    });

    runner.it(
      'refuses while a live grant exists, saying who holds it, with which token, until when (the holder itself included)',
      async () => {
        const key = context.harness.freshKey('held');
        const lease = await mustClaim(context.leasesFor('a'), key, { runId: 'r1' });
        for (const holder of ['b', 'a']) {
          const refused = await context.leasesFor(holder).claim(key);
          expectMatch(refused, {
            ok: false,
            reason: 'held',
            key,
            token: lease.token,
            holder: 'a',
            runId: 'r1',
            expiresAt: lease.expiresAt,
          });
          if (!refused.ok && refused.reason === 'held')
            expectTrue(refused.now < (refused.expiresAt ?? Infinity), 'refused.now < (refused.expiresAt ?? Infinity)');
        }
        expectSame((await context.leasesFor('ops').inspect(key)).token, lease.token);
      },
    );

    runner.it('takes over an expired grant: the next token, the previous ending as expired, the checkpoint handed over', async () => {
      const key = context.harness.freshKey('takeover');
      const a = context.leasesFor('a');
      const first = await mustClaim(a, key, { runId: 'r1' });
      expectMatch(await a.checkpoint(first, { wave: 3 }), { ok: true });
      await context.harness.expireNow(key);
      const taken = await context.leasesFor('b').claim(key, { runId: 'r2' });
      expectTrue(taken.ok, 'taken.ok');
      if (!taken.ok) return;
      expectTrue(taken.lease.token > first.token, 'taken.lease.token > first.token');
      expectMatch(taken.previous, { kind: 'expired', token: first.token, holder: 'a', runId: 'r1' });
      expectMatch(taken.checkpoint, { value: { wave: 3 }, token: first.token });
      expectMatch(taken.lease.inherited, { value: { wave: 3 }, token: first.token });
      const stale = await a.fencedWrite(first, () => 'late');
      expectMatch(stale, {
        ok: false,
        reason: 'superseded',
        key,
        expected: { token: first.token, holder: 'a', runId: 'r1' },
        found: { token: taken.lease.token, holder: 'b', runId: 'r2' },
      });
    });

    runner.it('a grant without expiry (ttlMs: null) is held until released or revoked', async () => {
      const key = context.harness.freshKey('forever');
      const lease = await mustClaim(context.leasesFor('a'), key, { ttlMs: null });
      expectSame(lease.expiresAt, null);
      expectMatch(await context.leasesFor('b').claim(key), { ok: false, reason: 'held', expiresAt: null });
      expectMatch(await context.leasesFor('ops').revoke(key, { reason: 'stuck' }), { ok: true });
      expectTrue((await context.leasesFor('b').claim(key)).ok, 'b claims the key');
    });

    runner.it('tokens strictly increase across release, expiry and revoke, and are never issued twice', async () => {
      const key = context.harness.freshKey('tokens');
      const a = context.leasesFor('a');
      const tokens: bigint[] = [];
      for (const ending of ['release', 'expire', 'revoke', 'release'] as const) {
        const lease = await mustClaim(a, key);
        tokens.push(lease.token);
        if (ending === 'release') await a.release(lease);
        if (ending === 'expire') await context.harness.expireNow(key);
        if (ending === 'revoke') await a.revoke(key, { reason: 'test' });
      }
      tokens.push((await mustClaim(a, key)).token);
      for (let i = 1; i < tokens.length; i += 1) expectTrue(tokens[i]! > tokens[i - 1]!, 'tokens[i]! > tokens[i - 1]!');
      expectTrue(tokens[3]! - tokens[2]! >= 2n, 'tokens[3]! - tokens[2]! >= 2n'); // the revoke burned one
    });
  });

  runner.describe('renew', () => {
    runner.it('extends the current grant from the store now; inspect shows the new expiry', async () => {
      const key = context.harness.freshKey('renew');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      const before = lease.expiresAt!;
      context.harness.advanceClock?.(1_000);
      const renewed = await a.renew(lease, { ttlMs: SPEC_TTL_MS * 2 });
      expectMatch(renewed, { ok: true, key, token: lease.token });
      if (!renewed.ok) return;
      expectClose(renewed.expiresAt, renewed.now + SPEC_TTL_MS * 2);
      expectTrue(renewed.expiresAt! > before, 'renewed.expiresAt! > before');
      expectSame(lease.expiresAt, renewed.expiresAt);
      expectMatch((await a.inspect(key)).grant, { token: lease.token, expiresAt: renewed.expiresAt, live: true });
    });

    runner.it('never resurrects an expired grant: refused as expired, the record unchanged', async () => {
      const key = context.harness.freshKey('renew-expired');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      await context.harness.expireNow(key);
      const before = await a.inspect(key);
      expectMatch(await a.renew(lease), { ok: false, reason: 'expired', expected: { token: lease.token } });
      const after = await a.inspect(key);
      expectEqual({ ...after, now: 0 }, { ...before, now: 0 });
      expectSame(after.grant?.live, false);
    });

    runner.it('a stale grant cannot renew: refused as superseded, the newer grant untouched', async () => {
      const key = context.harness.freshKey('renew-stale');
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      await context.harness.expireNow(key);
      const current = await mustClaim(context.leasesFor('b'), key);
      const before = await a.inspect(key);
      expectMatch(await a.renew(old), { ok: false, reason: 'superseded', found: { token: current.token, holder: 'b' } });
      expectEqual({ ...(await a.inspect(key)), now: 0 }, { ...before, now: 0 });
    });
  });

  runner.describe('checkpoint', () => {
    runner.it('saves progress stamped with the token; a stale holder cannot overwrite it', async () => {
      const key = context.harness.freshKey('checkpoint');
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      expectMatch(await a.checkpoint(old, { step: 1, items: ['x'] }), { ok: true, checkpoint: { token: old.token } });
      expectMatch((await a.inspect(key)).checkpoint, { value: { step: 1, items: ['x'] }, token: old.token });
      await context.harness.expireNow(key);
      const b = context.leasesFor('b');
      const current = await mustClaim(b, key);
      expectMatch(await a.checkpoint(old, { step: 99 }), { ok: false, reason: 'superseded' });
      expectMatch((await a.inspect(key)).checkpoint, { value: { step: 1, items: ['x'] }, token: old.token });
      await b.checkpoint(current, { step: 2 });
      expectMatch((await a.inspect(key)).checkpoint, { value: { step: 2 }, token: current.token });
    });
  });

  runner.describe('fenced write', () => {
    runner.it('applies writes of the current grant in order, and none of a stale grant, not even partly', async () => {
      const key = context.harness.freshKey('ledger');
      const { harness } = context;
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      expectMatch(await harness.appendUnderFence(a, old, 'a-1'), { ok: true, token: old.token });
      expectMatch(await harness.appendUnderFence(a, old, 'a-2'), { ok: true, token: old.token });
      await harness.expireNow(key);
      expectMatch(await harness.appendUnderFence(a, old, 'a-expired'), { ok: false, reason: 'expired' });
      const b = context.leasesFor('b');
      const current = await mustClaim(b, key);
      expectMatch(await harness.appendUnderFence(b, current, 'b-1'), { ok: true, token: current.token });
      expectMatch(await harness.appendUnderFence(a, old, 'a-stale'), { ok: false, reason: 'superseded' });
      expectEqual(await harness.readLedger(key), ['a-1', 'a-2', 'b-1']);
    });
  });

  runner.describe('release', () => {
    runner.it('ends the grant, is idempotent for the same grant, and frees the key for the next claim', async () => {
      const key = context.harness.freshKey('release');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key, { runId: 'r1' });
      expectMatch(await a.release(lease), { ok: true, key, token: lease.token, alreadyReleased: false });
      expectMatch(await a.release(lease), { ok: true, token: lease.token, alreadyReleased: true });
      const seen = await a.inspect(key);
      expectMatch(seen, { grant: null, ending: { kind: 'released', token: lease.token, holder: 'a', runId: 'r1' }, token: lease.token });
      expectMatch(await context.harness.appendUnderFence(a, lease, 'after-release'), { ok: false, reason: 'released' });
      expectMatch(await a.renew(lease), { ok: false, reason: 'released' });
      const next = await context.leasesFor('b').claim(key);
      expectMatch(next, { ok: true, previous: { kind: 'released', token: lease.token } });
      expectEqual(await context.harness.readLedger(key), []);
    });

    runner.it(
      'a release delivered again after a newer grant took the key says it was released and leaves the newer grant alone',
      async () => {
        const key = context.harness.freshKey('release-replay');
        const a = context.leasesFor('a');
        const b = context.leasesFor('b');
        const first = await mustClaim(a, key);
        expectMatch(await a.release(first), { ok: true, alreadyReleased: false });
        const second = await mustClaim(b, key);
        expectMatch(await a.release(first), { ok: true, token: first.token, alreadyReleased: true });
        expectMatch(await b.inspect(key), { grant: { token: second.token, holder: 'b', live: true } });
        expectMatch(await context.harness.appendUnderFence(a, first, 'stale'), { ok: false, reason: 'superseded' });
      },
    );

    runner.it('a stale grant cannot release a newer one', async () => {
      const key = context.harness.freshKey('release-stale');
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      await context.harness.expireNow(key);
      const current = await mustClaim(context.leasesFor('b'), key);
      expectMatch(await a.release(old), { ok: false, reason: 'superseded' });
      expectMatch((await a.inspect(key)).grant, { token: current.token, holder: 'b', live: true });
    });

    runner.it('leaves a final checkpoint for the next holder, or clears it with null', async () => {
      const key = context.harness.freshKey('release-checkpoint');
      const a = context.leasesFor('a');
      const first = await mustClaim(a, key);
      await a.release(first, { checkpoint: { done: 10 } });
      const second = await a.claim(key);
      expectMatch(second, { ok: true, checkpoint: { value: { done: 10 }, token: first.token } });
      if (!second.ok) return;
      await a.release(second.lease, { checkpoint: null });
      expectMatch(await a.claim(key), { ok: true, checkpoint: null });
    });
  });
}
