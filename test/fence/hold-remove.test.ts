import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import * as transitions from '../../src/fence/transitions.js';
import type { Fence, LeaseRecord } from '../../src/fence/types.js';
import { checkFence, isLive } from '../../src/fence/verdict.js';
import { claimCommandArb, holdMsArb, KEY, presentedArb, reachedArb } from './arbitraries.js';

const dtArb = fc.integer({ min: 0, max: 2_000 });

/** The fence of the record's current grant. */
function currentFence(record: LeaseRecord | null): Fence | null {
  const grant = record?.grant;
  if (grant == null) return null;
  return { key: KEY, token: grant.token, secret: grant.secret, holder: grant.holder, runId: grant.runId };
}

const isHeld = (record: LeaseRecord | null, now: number): boolean => record?.grant != null && isLive(record.grant, now);

describe('hold-back', () => {
  test.prop([reachedArb, claimCommandArb, holdMsArb, fc.nat({ max: 1_000 })])(
    'a hold refuses claims held-back (changing nothing) until the store now reaches heldUntil; at heldUntil the claim is granted and clears it',
    (reached, command, holdMs, early) => {
      const held = transitions.setKeyState(reached.record, { key: KEY, values: {}, by: 'ops', holdMs }, reached.now);
      const record = held.record!;
      const heldUntil = reached.now + holdMs;
      expect(record.heldUntil).toBe(heldUntil);
      fc.pre(!isHeld(record, heldUntil) && !(record.recoveryRequired && !command.recovering));
      const before = heldUntil - 1 - (early % Math.max(holdMs, 1));
      if (before >= reached.now && !isHeld(record, before)) {
        const refused = transitions.claim(record, command, before);
        expect(refused.outcome).toEqual({ ok: false, reason: 'held-back', key: KEY, token: record.token, heldUntil, now: before });
        expect(refused.changed).toBe(false);
        expect(refused.record).toBe(record);
        expect(transitions.inspect(record, KEY, before).heldUntil).toBe(heldUntil);
      }
      expect(transitions.inspect(record, KEY, heldUntil).heldUntil).toBeNull();
      const granted = transitions.claim(record, command, heldUntil);
      expect(granted.outcome.ok).toBe(true);
      expect(granted.record!.heldUntil).toBeNull();
    },
  );

  test.prop([presentedArb, holdMsArb, claimCommandArb])(
    'release with holdMs holds the key back from the release time; a plain release keeps the hold as it was',
    ({ reached, fence, now }, holdMs, command) => {
      fc.pre(checkFence(reached.record, fence, now).ok);
      const plain = transitions.release(reached.record, { fence }, now);
      expect(plain.record!.heldUntil).toBe(reached.record!.heldUntil);
      const released = transitions.release(reached.record, { fence, holdMs }, now);
      expect(released.outcome).toMatchObject({ ok: true, alreadyReleased: false });
      expect(released.record!.heldUntil).toBe(now + holdMs);
      fc.pre(!released.record!.recoveryRequired || command.recovering);
      if (holdMs > 0) expect(transitions.claim(released.record, command, now + holdMs - 1).outcome).toMatchObject({ reason: 'held-back' });
      expect(transitions.claim(released.record, command, now + holdMs).outcome.ok).toBe(true);
    },
  );

  test.prop([reachedArb, holdMsArb, claimCommandArb, dtArb])(
    'setKeyState holdMs null cancels a hold, a number sets one from now, absent keeps it; none of them ends a grant',
    (reached, holdMs, command, dt) => {
      const now = reached.now + dt;
      const held = transitions.setKeyState(reached.record, { key: KEY, values: {}, by: 'ops', holdMs: holdMs + 1 }, now);
      expect(held.outcome).toMatchObject({ ended: null, changed: [], heldUntil: now + holdMs + 1 });
      expect(held.record!.grant).toBe(reached.record?.grant ?? null);
      const kept = transitions.setKeyState(held.record, { key: KEY, values: {}, by: 'ops' }, now);
      expect(kept.changed).toBe(false);
      expect(kept.record!.heldUntil).toBe(now + holdMs + 1);
      const cancelled = transitions.setKeyState(held.record, { key: KEY, values: {}, by: 'ops', holdMs: null }, now);
      expect(cancelled.outcome).toMatchObject({ heldUntil: null, ended: null });
      expect(cancelled.record!.heldUntil).toBeNull();
      fc.pre(!isHeld(cancelled.record, now) && !(cancelled.record!.recoveryRequired && !command.recovering));
      expect(transitions.claim(held.record, command, now).outcome).toMatchObject({ ok: false, reason: 'held-back' });
      expect(transitions.claim(cancelled.record, command, now).outcome.ok).toBe(true);
    },
  );

  test.prop([reachedArb, holdMsArb, claimCommandArb, dtArb])(
    'order of the checks: a live grant is held before held-back; a hold comes before a pending recovery',
    (reached, holdMs, command, dt) => {
      const now = reached.now + dt;
      const held = transitions.setKeyState(reached.record, { key: KEY, values: {}, by: 'ops', holdMs: holdMs + 1 }, now).record;
      const outcome = transitions.claim(held, { ...command, recovering: false }, now).outcome;
      expect(outcome).toMatchObject({ ok: false, reason: isHeld(held, now) ? 'held' : 'held-back' });
    },
  );
});

describe('remove', () => {
  test.prop([reachedArb, dtArb, fc.boolean()])(
    'refused missing on no record, held while a live grant holds the key (unless force), superseded on another expectedToken',
    (reached, dt, force) => {
      const { record } = reached;
      const now = reached.now + dt;
      const result = transitions.remove(record, { key: KEY, force, expectedToken: null }, now);
      if (record === null) {
        expect(result.outcome).toEqual({ ok: false, reason: 'missing', key: KEY, token: null, now });
        return;
      }
      const stale = transitions.remove(record, { key: KEY, force: true, expectedToken: record.token + 1n }, now);
      expect(stale.outcome).toEqual({ ok: false, reason: 'superseded', key: KEY, token: record.token, now });
      expect(stale.changed).toBe(false);
      if (isHeld(record, now) && !force) {
        expect(result.outcome).toEqual({ ok: false, reason: 'held', key: KEY, token: record.token, now });
        expect(result.changed).toBe(false);
        expect(result.record).toBe(record);
        return;
      }
      expect(result.changed).toBe(true);
      expect(result.record).toBeNull();
      expect(result.outcome).toMatchObject({ ok: true, key: KEY, token: record.token, now });
      const { grant } = record;
      expect((result.outcome as { grant: unknown }).grant).toEqual(
        grant === null
          ? null
          : {
              token: grant.token,
              holder: grant.holder,
              runId: grant.runId,
              acquiredAt: grant.acquiredAt,
              expiresAt: grant.expiresAt,
              attributes: grant.attributes,
              live: isLive(grant, now),
            },
      );
      const exact = transitions.remove(record, { key: KEY, force: true, expectedToken: record.token }, now);
      expect(exact.outcome.ok).toBe(true);
    },
  );

  test.prop([reachedArb, dtArb])('after a removal every old fence is refused missing, by every fenced operation', (reached, dt) => {
    const now = reached.now + dt;
    fc.pre(reached.record !== null && reached.fences.length > 0);
    const gone = transitions.remove(reached.record, { key: KEY, force: true, expectedToken: null }, now).record;
    expect(gone).toBeNull();
    for (const fence of reached.fences) {
      const missing = { ok: false, reason: 'missing', key: KEY, found: { token: null, ending: null } };
      expect(checkFence(gone, fence, now)).toMatchObject(missing);
      expect(transitions.renew(gone, { fence, ttlMs: 100 }, now).outcome).toMatchObject(missing);
      expect(transitions.checkpoint(gone, { fence, json: '{}' }, now).outcome).toMatchObject(missing);
      expect(transitions.release(gone, { fence }, now).outcome).toMatchObject(missing);
      expect(transitions.recover(gone, { fence, action: 'discard' }, now).outcome).toMatchObject(missing);
      const submission = { runId: 's1', digest: 'a'.repeat(64), receiptJson: null, bindToGrant: false };
      // NOTE: the submissions went with the record: no replay to find.
      expect(transitions.checkSubmission(gone, fence, submission, now)).toMatchObject(missing);
    }
    expect(transitions.inspect(gone, KEY, now)).toMatchObject({ exists: false, token: 0n, state: {}, heldUntil: null });
  });

  test.prop([reachedArb, claimCommandArb, dtArb])(
    "a claim after a removal, with the store's floor above the removed token, starts over: no state, ending, checkpoint or hold",
    (reached, command, dt) => {
      const now = reached.now + dt;
      const { record } = reached;
      fc.pre(record !== null);
      const removed = transitions.remove(record, { key: KEY, force: true, expectedToken: null }, now);
      fc.pre(removed.outcome.ok);
      const floor = record!.token + 1n;
      const claimed = transitions.claim(removed.record, command, now, floor);
      expect(claimed.outcome).toMatchObject({ ok: true, token: floor, previous: null, checkpoint: null });
      expect(claimed.record).toMatchObject({ state: {}, heldUntil: null, submissions: [], recoveryRequired: false });
      const old = currentFence(record);
      if (old !== null) expect(checkFence(claimed.record, old, now)).toMatchObject({ ok: false, reason: 'superseded' });
    },
  );
});
