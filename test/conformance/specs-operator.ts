/**
 * Conformance specs, part 2: what an operator does (revoke, recovery, inspect), strict expiry where the
 * clock is controllable, and every refusal reason reachable through the API with its expected/found values.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store.js';
import { mustClaim, textOf, type SuiteContext } from './context.js';

export function describeOperatorSpecs<S extends Store>(context: SuiteContext<S>): void {
  describe('revoke', () => {
    it('fences the holder at once, burns a token, keeps the checkpoint and tells the next claimer why', async () => {
      const key = context.harness.freshKey('revoke');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key, { runId: 'r1' });
      await a.checkpoint(lease, { wave: 2 });
      const revoked = await context.leasesFor('ops').revoke(key, { reason: 'stuck job', by: 'alice' });
      expect(revoked).toMatchObject({ ok: true, key, token: lease.token + 1n, recoveryRequired: false, revoked: { kind: 'revoked', token: lease.token, holder: 'a', runId: 'r1', reason: 'stuck job', by: 'alice' } });
      const write = await context.harness.appendUnderFence(a, lease, 'after-revoke');
      expect(write).toMatchObject({ ok: false, reason: 'revoked', expected: { token: lease.token }, found: { token: lease.token + 1n, holder: null, ending: { kind: 'revoked', reason: 'stuck job', by: 'alice' } } });
      expect(await a.renew(lease)).toMatchObject({ ok: false, reason: 'revoked' });
      expect(await a.release(lease)).toMatchObject({ ok: false, reason: 'revoked' });
      expect(await context.harness.readLedger(key)).toEqual([]);
      const next = await context.leasesFor('b').claim(key);
      expect(next).toMatchObject({ ok: true, previous: { kind: 'revoked', token: lease.token, reason: 'stuck job', by: 'alice' }, checkpoint: { value: { wave: 2 }, token: lease.token } });
      if (next.ok) expect(next.lease.token > lease.token + 1n).toBe(true);
    });

    it('revokes an expired grant too', async () => {
      const key = context.harness.freshKey('revoke-expired');
      const lease = await mustClaim(context.leasesFor('a'), key);
      await context.harness.expireNow(key);
      expect(await context.leasesFor('ops').revoke(key, { reason: 'cleanup' })).toMatchObject({ ok: true, revoked: { token: lease.token, by: 'operator' } });
    });

    it('refuses: missing key, nothing held, or an expectedToken that is not the current grant; nothing changes', async () => {
      const ops = context.leasesFor('ops');
      const fresh = context.harness.freshKey('revoke-missing');
      expect(await ops.revoke(fresh, { reason: 'x' })).toMatchObject({ ok: false, reason: 'missing', key: fresh, token: null });
      expect((await ops.inspect(fresh)).exists).toBe(false);
      const key = context.harness.freshKey('revoke-refused');
      const a = context.leasesFor('a');
      const first = await mustClaim(a, key);
      await a.release(first);
      expect(await ops.revoke(key, { reason: 'x' })).toMatchObject({ ok: false, reason: 'not-held', token: first.token });
      const second = await mustClaim(a, key);
      const before = await ops.inspect(key);
      expect(await ops.revoke(key, { reason: 'x', expectedToken: first.token })).toMatchObject({ ok: false, reason: 'superseded', token: second.token });
      expect({ ...(await ops.inspect(key)), now: 0 }).toEqual({ ...before, now: 0 });
      expect(await ops.revoke(key, { reason: 'x', expectedToken: second.token })).toMatchObject({ ok: true, revoked: { token: second.token } });
    });

    it('with requireRecovery, refuses plain claims until a recovering claim resumes the checkpoint', async () => {
      const key = context.harness.freshKey('recovery');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      await a.checkpoint(lease, { cursor: 41 });
      expect(await a.revoke(key, { reason: 'operator abort', requireRecovery: true })).toMatchObject({ ok: true, recoveryRequired: true });
      const b = context.leasesFor('b');
      const refused = await b.claim(key);
      expect(refused).toMatchObject({ ok: false, reason: 'recovery-required', key, token: lease.token + 1n, previous: { kind: 'revoked', token: lease.token }, checkpoint: { token: lease.token } });
      expect((await b.inspect(key)).recoveryRequired).toBe(true);
      const recovering = await mustClaim(b, key, { recovering: true });
      expect(recovering.inherited).toMatchObject({ value: { cursor: 41 }, token: lease.token });
      const resumed = await b.recover(recovering, 'resume');
      expect(resumed).toMatchObject({ ok: true, checkpoint: { token: recovering.token } });
      const seen = await b.inspect(key);
      expect(seen).toMatchObject({ recoveryRequired: false, checkpoint: { value: { cursor: 41 }, token: recovering.token } });
      await b.release(recovering);
      expect((await context.leasesFor('c').claim(key)).ok).toBe(true);
    });

    it('recover discard clears the checkpoint; requireRecovery without a checkpoint requires nothing', async () => {
      const key = context.harness.freshKey('discard');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      expect(await a.revoke(key, { reason: 'no progress yet', requireRecovery: true })).toMatchObject({ ok: true, recoveryRequired: false });
      const next = await mustClaim(a, key);
      await a.checkpoint(next, { half: true });
      await a.revoke(key, { reason: 'abort', requireRecovery: true });
      const recovering = await mustClaim(a, key, { recovering: true });
      expect(await a.recover(recovering, 'discard')).toMatchObject({ ok: true, checkpoint: null });
      expect(await a.inspect(key)).toMatchObject({ checkpoint: null, recoveryRequired: false });
      expect(lease.token < recovering.token).toBe(true);
    });
  });

  describe('inspect', () => {
    it('a never-claimed key does not exist and has token 0', async () => {
      const key = context.harness.freshKey('inspect-fresh');
      expect(await context.leasesFor('ops').inspect(key)).toMatchObject({ key, exists: false, token: 0n, grant: null, ending: null, checkpoint: null, recoveryRequired: false });
    });

    it('shows everything but the secret, with liveness at the store now', async () => {
      const key = context.harness.freshKey('inspect');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key, { runId: 'r1', attributes: { model: 'v1' } });
      const seen = await context.leasesFor('ops').inspect(key);
      expect(seen.grant).toMatchObject({ token: lease.token, holder: 'a', runId: 'r1', attributes: { model: 'v1' }, live: true, acquiredAt: lease.acquiredAt, expiresAt: lease.expiresAt });
      expect(textOf(seen)).not.toContain(lease.export().secret);
      expect(seen.grant).not.toHaveProperty('secret');
      await context.harness.expireNow(key);
      expect((await a.inspect(key)).grant).toMatchObject({ token: lease.token, live: false });
    });
  });

  describe('strict expiry (controllable clocks only)', () => {
    it('one ms before expires-at the grant writes; at expires-at it is expired and another holder may claim', async (test) => {
      const { harness } = context;
      // NOTE: skipped on real servers: their clock cannot be stopped one ms before expiry. The strict
      // `now === expiresAt` rule is proven there by the pure core's property tests and the expire-now hook.
      if (harness.advanceClock === null) return test.skip();
      const key = harness.freshKey('strict');
      const a = context.leasesFor('a', { ttlMs: 1_000 });
      const lease = await mustClaim(a, key);
      harness.advanceClock(999);
      expect(await harness.appendUnderFence(a, lease, 'last-ms')).toMatchObject({ ok: true });
      expect(await context.leasesFor('b').claim(key)).toMatchObject({ ok: false, reason: 'held' });
      harness.advanceClock(1);
      const refused = await harness.appendUnderFence(a, lease, 'too-late');
      expect(refused).toMatchObject({ ok: false, reason: 'expired', now: lease.expiresAt, found: { expiresAt: lease.expiresAt } });
      expect(await context.leasesFor('b').claim(key)).toMatchObject({ ok: true, previous: { kind: 'expired', at: lease.expiresAt } });
      expect(await harness.readLedger(key)).toEqual(['last-ms']);
    });
  });

  describe('refusal reasons reachable through the API', () => {
    it('missing: a restored handle for a key the store never held', async () => {
      const key = context.harness.freshKey('missing');
      const a = context.leasesFor('a');
      const elsewhere = await mustClaim(a, context.harness.freshKey('source'));
      const ghost = a.restore({ ...elsewhere.export(), key });
      expect(await a.fencedWrite(ghost, () => 1)).toMatchObject({ ok: false, reason: 'missing', key, expected: { token: elsewhere.token }, found: { token: null, holder: null } });
    });

    it('not-held: a token the store never issued', async () => {
      const key = context.harness.freshKey('not-held');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      const forged = a.restore({ ...lease.export(), token: String(lease.token + 5n) });
      expect(await a.fencedWrite(forged, () => 1)).toMatchObject({ ok: false, reason: 'not-held', expected: { token: lease.token + 5n }, found: { token: lease.token, holder: 'a' } });
    });

    it('wrong-secret, holder-mismatch and attribute-mismatch: the current token without the proof', async () => {
      const key = context.harness.freshKey('identity');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key, { runId: 'r1', attributes: { model: 'v1' } });
      const wrongSecret = a.restore({ ...lease.export(), secret: lease.export().secret.replace(/^./, (c) => (c === '0' ? '1' : '0')) });
      expect(await a.fencedWrite(wrongSecret, () => 1)).toMatchObject({ ok: false, reason: 'wrong-secret', expected: { token: lease.token }, found: { token: lease.token, holder: 'a' } });
      const otherRun = a.restore({ ...lease.export(), runId: 'r2' });
      expect(await a.fencedWrite(otherRun, () => 1)).toMatchObject({ ok: false, reason: 'holder-mismatch', expected: { runId: 'r2' }, found: { runId: 'r1' } });
      expect(await a.fencedWrite(lease, () => 1, { attributes: { model: 'v2' } })).toMatchObject({ ok: false, reason: 'attribute-mismatch', attribute: { name: 'model', expected: 'v2', found: 'v1' } });
      expect(await a.checkpoint(lease, { x: 1 }, { attributes: { region: 'eu' } })).toMatchObject({ ok: false, reason: 'attribute-mismatch', attribute: { name: 'region', expected: 'eu', found: null } });
      expect(await a.fencedWrite(lease, () => 'fine', { attributes: { model: 'v1' } })).toMatchObject({ ok: true, value: 'fine' });
    });

    it('expired, superseded, released and revoked name what was expected and what was found', async () => {
      const key = context.harness.freshKey('reasons');
      const a = context.leasesFor('a');
      const b = context.leasesFor('b');
      const first = await mustClaim(a, key, { runId: 'r1' });
      await context.harness.expireNow(key);
      expect(await a.fencedWrite(first, () => 1)).toMatchObject({ ok: false, reason: 'expired', expected: { token: first.token, holder: 'a', runId: 'r1' }, found: { token: first.token, holder: 'a', runId: 'r1' } });
      const second = await mustClaim(b, key, { runId: 'r2' });
      expect(await a.fencedWrite(first, () => 1)).toMatchObject({ reason: 'superseded', found: { token: second.token, holder: 'b', runId: 'r2' } });
      await b.release(second);
      expect(await b.fencedWrite(second, () => 1)).toMatchObject({ reason: 'released', found: { token: second.token, holder: null, ending: { kind: 'released', token: second.token } } });
      expect(await a.fencedWrite(first, () => 1)).toMatchObject({ reason: 'superseded' });
      const third = await mustClaim(a, key);
      await b.revoke(key, { reason: 'why not', by: 'bob' });
      expect(await a.fencedWrite(third, () => 1)).toMatchObject({ reason: 'revoked', found: { token: third.token + 1n, ending: { kind: 'revoked', token: third.token, by: 'bob', reason: 'why not' } } });
    });
  });
}
