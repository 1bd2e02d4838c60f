import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import * as transitions from '../../src/fence/transitions.js';
import { checkFence, isLive } from '../../src/fence/verdict.js';
import type { Fence, LeaseRecord } from '../../src/fence/types.js';
import { jsonArb, KEY, presentedArb, reachedArb, revokeCommandArb, secretArb } from './arbitraries.js';

const checkpointJsonArb = fc
  .constantFrom(undefined, null)
  .chain((x) => (x === null ? fc.option(jsonArb, { nil: null }) : fc.constant(undefined)));

/** The fence of the record's current grant, when it has one. */
function currentFence(record: LeaseRecord | null): Fence | null {
  const grant = record?.grant;
  if (grant == null) return null;
  return { key: KEY, token: grant.token, secret: grant.secret, holder: grant.holder, runId: grant.runId };
}

describe('release', () => {
  test.prop([presentedArb, checkpointJsonArb])(
    'the current live grant is released: its ending says who and when; token unchanged',
    ({ reached, fence, now }, checkpointJson) => {
      fc.pre(checkFence(reached.record, fence, now).ok);
      const record = reached.record!;
      const result = transitions.release(record, checkpointJson === undefined ? { fence } : { fence, checkpointJson }, now);
      const checkpoint =
        checkpointJson === undefined
          ? record.checkpoint
          : checkpointJson === null
            ? null
            : { json: checkpointJson, token: fence.token, writtenAt: now };
      expect(result.outcome).toEqual({ ok: true, key: KEY, token: fence.token, alreadyReleased: false, now });
      expect(result.record).toEqual({
        ...record,
        grant: null,
        ending: { kind: 'released', token: fence.token, holder: fence.holder, runId: fence.runId, at: now, reason: null, by: null },
        checkpoint,
        // NOTE: a checkpoint decision (set or clear) resolves a pending recovery; keeping it leaves it pending.
        recoveryRequired: checkpointJson === undefined ? record.recoveryRequired : false,
      });
    },
  );

  test.prop([presentedArb, fc.nat({ max: 1000 })])(
    'release is idempotent for the same grant: the second release is ok, alreadyReleased, and changes nothing',
    ({ reached, fence, now }, later) => {
      fc.pre(checkFence(reached.record, fence, now).ok);
      const first = transitions.release(reached.record, { fence }, now);
      const second = transitions.release(first.record, { fence, checkpointJson: '{"late":true}' }, now + later);
      expect(second.outcome).toEqual({ ok: true, key: KEY, token: fence.token, alreadyReleased: true, now: now + later });
      expect(second.changed).toBe(false);
      expect(second.record).toBe(first.record);
    },
  );

  test.prop([presentedArb, checkpointJsonArb])(
    'a release the fence refuses (stale, forged, expired) changes nothing',
    ({ reached, fence, now }, checkpointJson) => {
      const verdict = checkFence(reached.record, fence, now);
      const result = transitions.release(reached.record, checkpointJson === undefined ? { fence } : { fence, checkpointJson }, now);
      fc.pre(!verdict.ok);
      expect(result.changed).toBe(false);
      expect(result.record).toBe(reached.record);
      if (result.outcome.ok) {
        // The only refused fence a release accepts is a repeat of the grant's own release (also once a newer
        // grant holds the key: a re-delivered release whose first reply was lost).
        expect(['released', 'superseded']).toContain(verdict.ok ? 'ok' : verdict.reason);
        expect(reached.record?.ending).toMatchObject({ kind: 'released', token: fence.token });
        expect(result.outcome.alreadyReleased).toBe(true);
      } else {
        expect(result.outcome).toEqual(verdict);
      }
    },
  );

  test.prop([presentedArb, secretArb])('a stale grant cannot release a newer one', ({ reached, fence, now }, secret) => {
    const current = currentFence(reached.record);
    fc.pre(current !== null && fence.token < current.token);
    const result = transitions.release(reached.record, { fence: { ...fence, secret } }, now);
    const ending = reached.record?.ending;
    if (ending?.kind === 'released' && ending.token === fence.token) {
      // A re-delivered release of a grant that was released: it says so, and still changes nothing.
      expect(result.outcome).toMatchObject({ ok: true, token: fence.token, alreadyReleased: true });
    } else {
      expect(result.outcome).toMatchObject({ ok: false, reason: 'superseded' });
    }
    expect(result.changed).toBe(false);
    expect(result.record).toBe(reached.record);
  });
});

describe('revoke', () => {
  test.prop([reachedArb, revokeCommandArb, fc.nat({ max: 2000 })])(
    'revokes the current grant (live or expired): token moves on by one, ending records reason and who, checkpoint kept',
    (reached, command, dt) => {
      const record = reached.record;
      const now = reached.now + dt;
      fc.pre(record !== null && record.grant !== null);
      const grant = record!.grant!;
      const expectedToken = command.expectedToken === null ? null : grant.token;
      const result = transitions.revoke(record, { ...command, expectedToken }, now);
      const revoked = {
        kind: 'revoked',
        token: grant.token,
        holder: grant.holder,
        runId: grant.runId,
        at: now,
        reason: command.reason,
        by: command.by,
      };
      const recoveryRequired = command.requireRecovery && record!.checkpoint !== null;
      expect(result.outcome).toEqual({ ok: true, key: KEY, revoked, token: record!.token + 1n, recoveryRequired, now });
      expect(result.record).toEqual({ ...record, token: record!.token + 1n, grant: null, ending: revoked, recoveryRequired });
      const old = currentFence(record)!;
      expect(checkFence(result.record, old, now)).toMatchObject({ ok: false, reason: 'revoked' });
    },
  );

  test.prop([reachedArb, revokeCommandArb, fc.nat({ max: 2000 })])(
    'refuses without changing anything: missing key, nothing held, or expectedToken not current',
    (reached, command, dt) => {
      const { record } = reached;
      const now = reached.now + dt;
      const result = transitions.revoke(record, command, now);
      const expected =
        record === null
          ? { reason: 'missing', token: null }
          : record.grant === null
            ? { reason: 'not-held', token: record.token }
            : command.expectedToken !== null && command.expectedToken !== record.grant.token
              ? { reason: 'superseded', token: record.token }
              : null;
      fc.pre(expected !== null);
      expect(result.outcome).toEqual({ ok: false, key: KEY, ...expected, now });
      expect(result.record).toBe(record);
      expect(result.changed).toBe(false);
    },
  );

  test.prop([reachedArb, revokeCommandArb, fc.nat({ max: 2000 })])(
    'the next claim after a revoke gets a token above the burned one',
    (reached, command, dt) => {
      const now = reached.now + dt;
      const revoked = transitions.revoke(reached.record, { ...command, expectedToken: null }, now);
      fc.pre(revoked.outcome.ok);
      // NOTE: a revoke keeps a hold: the claim comes once it has passed.
      const claimed = transitions.claim(
        revoked.record,
        { key: KEY, holder: 'w9', runId: null, secret: 'f'.repeat(32), ttlMs: 10, attributes: {}, recovering: true },
        Math.max(now, revoked.record!.heldUntil ?? 0),
      );
      expect(claimed.outcome).toMatchObject({ ok: true, token: revoked.record!.token + 1n });
    },
  );
});

describe('recover', () => {
  test.prop([presentedArb, fc.constantFrom('resume' as const, 'discard' as const)])(
    'resume adopts the checkpoint under the new token, discard clears it; both end the pending recovery; refusals change nothing',
    ({ reached, fence, now }, action) => {
      const verdict = checkFence(reached.record, fence, now);
      const result = transitions.recover(reached.record, { fence, action }, now);
      if (!verdict.ok) {
        expect(result.outcome).toEqual(verdict);
        expect(result.record).toBe(reached.record);
        return;
      }
      const record = reached.record!;
      const checkpoint =
        action === 'discard' || record.checkpoint === null ? null : { json: record.checkpoint.json, token: fence.token, writtenAt: now };
      expect(result.outcome).toEqual({ ok: true, key: KEY, checkpoint, now });
      expect(result.record).toEqual({ ...record, checkpoint, recoveryRequired: false });
    },
  );
});

describe('inspect', () => {
  const bigintSafe = (_: string, value: unknown) => (typeof value === 'bigint' ? value.toString() : value);

  test.prop([reachedArb, fc.nat({ max: 2000 })])('never exposes the secret, and mirrors the record with liveness at now', (reached, dt) => {
    const now = reached.now + dt;
    const view = transitions.inspect(reached.record, KEY, now);
    const text = JSON.stringify(view, bigintSafe);
    expect(text).not.toContain('"secret"');
    for (const fence of reached.fences) expect(text).not.toContain(fence.secret);
    const { record } = reached;
    if (record === null) {
      expect(view).toEqual({
        key: KEY,
        exists: false,
        token: 0n,
        grant: null,
        ending: null,
        checkpoint: null,
        recoveryRequired: false,
        state: {},
        heldUntil: null,
        waiters: [],
        now,
      });
      return;
    }
    const { secret: _secret, ...visible } = record.grant ?? { secret: '' };
    expect(view).toEqual({
      key: KEY,
      exists: true,
      token: record.token,
      grant: record.grant === null ? null : { ...visible, live: isLive(record.grant, now) },
      ending: record.ending,
      checkpoint: record.checkpoint,
      recoveryRequired: record.recoveryRequired,
      state: record.state,
      // NOTE: a hold shows only until it passes (strict: at now === heldUntil claims are granted again).
      heldUntil: record.heldUntil !== null && now < record.heldUntil ? record.heldUntil : null,
      // NOTE: only live places in the queue show, like the hold.
      waiters: record.waiters.filter((waiter) => now < waiter.expiresAt),
      now,
    });
  });
});
