/**
 * Conformance specs, part 1: what a holder sees. Claim, held, expiry and takeover, renew, checkpoint,
 * fenced writes and release, each checked against what `inspect` says the store holds afterwards.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store.js';
import { mustClaim, SPEC_TTL_MS, type SuiteContext } from './context.js';

export function describeHolderSpecs<S extends Store>(context: SuiteContext<S>): void {
  describe('claim', () => {
    it('grants a fresh key: a positive token, no previous holder, no checkpoint, expires-at = acquired-at + ttl', async () => {
      const key = context.harness.freshKey('claim');
      const claimed = await context.leasesFor('a').claim(key, { runId: 'r1' });
      expect(claimed.ok).toBe(true);
      if (!claimed.ok) return;
      const { lease } = claimed;
      expect(lease.token > 0n).toBe(true);
      expect(claimed.previous).toBeNull();
      expect(claimed.checkpoint).toBeNull();
      expect(lease.expiresAt! - lease.acquiredAt!).toBeCloseTo(SPEC_TTL_MS, 3);
      const seen = await context.leasesFor('ops').inspect(key);
      expect(seen).toMatchObject({ exists: true, token: lease.token, grant: { token: lease.token, holder: 'a', runId: 'r1', live: true, expiresAt: lease.expiresAt } });
    });

    it('refuses while a live grant exists, saying who holds it, with which token, until when (the holder itself included)', async () => {
      const key = context.harness.freshKey('held');
      const lease = await mustClaim(context.leasesFor('a'), key, { runId: 'r1' });
      for (const holder of ['b', 'a']) {
        const refused = await context.leasesFor(holder).claim(key);
        expect(refused).toMatchObject({ ok: false, reason: 'held', key, token: lease.token, holder: 'a', runId: 'r1', expiresAt: lease.expiresAt });
        if (!refused.ok && refused.reason === 'held') expect(refused.now < (refused.expiresAt ?? Infinity)).toBe(true);
      }
      expect((await context.leasesFor('ops').inspect(key)).token).toBe(lease.token);
    });

    it('takes over an expired grant: the next token, the previous ending as expired, the checkpoint handed over', async () => {
      const key = context.harness.freshKey('takeover');
      const a = context.leasesFor('a');
      const first = await mustClaim(a, key, { runId: 'r1' });
      expect(await a.checkpoint(first, { wave: 3 })).toMatchObject({ ok: true });
      await context.harness.expireNow(key);
      const taken = await context.leasesFor('b').claim(key, { runId: 'r2' });
      expect(taken.ok).toBe(true);
      if (!taken.ok) return;
      expect(taken.lease.token > first.token).toBe(true);
      expect(taken.previous).toMatchObject({ kind: 'expired', token: first.token, holder: 'a', runId: 'r1' });
      expect(taken.checkpoint).toMatchObject({ value: { wave: 3 }, token: first.token });
      expect(taken.lease.inherited).toMatchObject({ value: { wave: 3 }, token: first.token });
      const stale = await a.fencedWrite(first, () => 'late');
      expect(stale).toMatchObject({ ok: false, reason: 'superseded', key, expected: { token: first.token, holder: 'a', runId: 'r1' }, found: { token: taken.lease.token, holder: 'b', runId: 'r2' } });
    });

    it('a grant without expiry (ttlMs: null) is held until released or revoked', async () => {
      const key = context.harness.freshKey('forever');
      const lease = await mustClaim(context.leasesFor('a'), key, { ttlMs: null });
      expect(lease.expiresAt).toBeNull();
      expect(await context.leasesFor('b').claim(key)).toMatchObject({ ok: false, reason: 'held', expiresAt: null });
      expect(await context.leasesFor('ops').revoke(key, { reason: 'stuck' })).toMatchObject({ ok: true });
      expect((await context.leasesFor('b').claim(key)).ok).toBe(true);
    });

    it('tokens strictly increase across release, expiry and revoke, and are never issued twice', async () => {
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
      for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
      expect(tokens[3]! - tokens[2]! >= 2n).toBe(true); // the revoke burned one
    });
  });

  describe('renew', () => {
    it('extends the current grant from the store now; inspect shows the new expiry', async () => {
      const key = context.harness.freshKey('renew');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      const before = lease.expiresAt!;
      context.harness.advanceClock?.(1_000);
      const renewed = await a.renew(lease, { ttlMs: SPEC_TTL_MS * 2 });
      expect(renewed).toMatchObject({ ok: true, key, token: lease.token });
      if (!renewed.ok) return;
      expect(renewed.expiresAt).toBeCloseTo(renewed.now + SPEC_TTL_MS * 2, 3);
      expect(renewed.expiresAt! > before).toBe(true);
      expect(lease.expiresAt).toBe(renewed.expiresAt);
      expect((await a.inspect(key)).grant).toMatchObject({ token: lease.token, expiresAt: renewed.expiresAt, live: true });
    });

    it('never resurrects an expired grant: refused as expired, the record unchanged', async () => {
      const key = context.harness.freshKey('renew-expired');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      await context.harness.expireNow(key);
      const before = await a.inspect(key);
      expect(await a.renew(lease)).toMatchObject({ ok: false, reason: 'expired', expected: { token: lease.token } });
      const after = await a.inspect(key);
      expect({ ...after, now: 0 }).toEqual({ ...before, now: 0 });
      expect(after.grant?.live).toBe(false);
    });

    it('a stale grant cannot renew: refused as superseded, the newer grant untouched', async () => {
      const key = context.harness.freshKey('renew-stale');
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      await context.harness.expireNow(key);
      const current = await mustClaim(context.leasesFor('b'), key);
      const before = await a.inspect(key);
      expect(await a.renew(old)).toMatchObject({ ok: false, reason: 'superseded', found: { token: current.token, holder: 'b' } });
      expect({ ...(await a.inspect(key)), now: 0 }).toEqual({ ...before, now: 0 });
    });
  });

  describe('checkpoint', () => {
    it('saves progress stamped with the token; a stale holder cannot overwrite it', async () => {
      const key = context.harness.freshKey('checkpoint');
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      expect(await a.checkpoint(old, { step: 1, items: ['x'] })).toMatchObject({ ok: true, checkpoint: { token: old.token } });
      expect((await a.inspect(key)).checkpoint).toMatchObject({ value: { step: 1, items: ['x'] }, token: old.token });
      await context.harness.expireNow(key);
      const b = context.leasesFor('b');
      const current = await mustClaim(b, key);
      expect(await a.checkpoint(old, { step: 99 })).toMatchObject({ ok: false, reason: 'superseded' });
      expect((await a.inspect(key)).checkpoint).toMatchObject({ value: { step: 1, items: ['x'] }, token: old.token });
      await b.checkpoint(current, { step: 2 });
      expect((await a.inspect(key)).checkpoint).toMatchObject({ value: { step: 2 }, token: current.token });
    });
  });

  describe('fenced write', () => {
    it('applies writes of the current grant in order, and none of a stale grant, not even partly', async () => {
      const key = context.harness.freshKey('ledger');
      const { harness } = context;
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      expect(await harness.appendUnderFence(a, old, 'a-1')).toMatchObject({ ok: true, token: old.token });
      expect(await harness.appendUnderFence(a, old, 'a-2')).toMatchObject({ ok: true, token: old.token });
      await harness.expireNow(key);
      expect(await harness.appendUnderFence(a, old, 'a-expired')).toMatchObject({ ok: false, reason: 'expired' });
      const b = context.leasesFor('b');
      const current = await mustClaim(b, key);
      expect(await harness.appendUnderFence(b, current, 'b-1')).toMatchObject({ ok: true, token: current.token });
      expect(await harness.appendUnderFence(a, old, 'a-stale')).toMatchObject({ ok: false, reason: 'superseded' });
      expect(await harness.readLedger(key)).toEqual(['a-1', 'a-2', 'b-1']);
    });
  });

  describe('release', () => {
    it('ends the grant, is idempotent for the same grant, and frees the key for the next claim', async () => {
      const key = context.harness.freshKey('release');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key, { runId: 'r1' });
      expect(await a.release(lease)).toMatchObject({ ok: true, key, token: lease.token, alreadyReleased: false });
      expect(await a.release(lease)).toMatchObject({ ok: true, token: lease.token, alreadyReleased: true });
      const seen = await a.inspect(key);
      expect(seen).toMatchObject({ grant: null, ending: { kind: 'released', token: lease.token, holder: 'a', runId: 'r1' }, token: lease.token });
      expect(await context.harness.appendUnderFence(a, lease, 'after-release')).toMatchObject({ ok: false, reason: 'released' });
      expect(await a.renew(lease)).toMatchObject({ ok: false, reason: 'released' });
      const next = await context.leasesFor('b').claim(key);
      expect(next).toMatchObject({ ok: true, previous: { kind: 'released', token: lease.token } });
      expect(await context.harness.readLedger(key)).toEqual([]);
    });

    it('a release delivered again after a newer grant took the key says it was released and leaves the newer grant alone', async () => {
      const key = context.harness.freshKey('release-replay');
      const a = context.leasesFor('a');
      const b = context.leasesFor('b');
      const first = await mustClaim(a, key);
      expect(await a.release(first)).toMatchObject({ ok: true, alreadyReleased: false });
      const second = await mustClaim(b, key);
      expect(await a.release(first)).toMatchObject({ ok: true, token: first.token, alreadyReleased: true });
      expect(await b.inspect(key)).toMatchObject({ grant: { token: second.token, holder: 'b', live: true } });
      expect(await context.harness.appendUnderFence(a, first, 'stale')).toMatchObject({ ok: false, reason: 'superseded' });
    });

    it('a stale grant cannot release a newer one', async () => {
      const key = context.harness.freshKey('release-stale');
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      await context.harness.expireNow(key);
      const current = await mustClaim(context.leasesFor('b'), key);
      expect(await a.release(old)).toMatchObject({ ok: false, reason: 'superseded' });
      expect((await a.inspect(key)).grant).toMatchObject({ token: current.token, holder: 'b', live: true });
    });

    it('leaves a final checkpoint for the next holder, or clears it with null', async () => {
      const key = context.harness.freshKey('release-checkpoint');
      const a = context.leasesFor('a');
      const first = await mustClaim(a, key);
      await a.release(first, { checkpoint: { done: 10 } });
      const second = await a.claim(key);
      expect(second).toMatchObject({ ok: true, checkpoint: { value: { done: 10 }, token: first.token } });
      if (!second.ok) return;
      await a.release(second.lease, { checkpoint: null });
      expect(await a.claim(key)).toMatchObject({ ok: true, checkpoint: null });
    });
  });
}
