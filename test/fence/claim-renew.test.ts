import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import * as transitions from '../../src/fence/transitions.js';
import { mintToken } from '../../src/fence/token.js';
import { liveWaiters } from '../../src/fence/queue.js';
import { checkFence, expiredEnding, isLive } from '../../src/fence/verdict.js';
import type { Fence } from '../../src/fence/types.js';
import { claimCommandArb, jsonArb, pendingRecoveryArb, presentedArb, reachedArb, runSteps, stepArb, ttlArb } from './arbitraries.js';

const dtArb = fc.integer({ min: 0, max: 2_000 });

describe('claim', () => {
  test.prop([reachedArb, claimCommandArb, dtArb])(
    'never grants while a live grant exists: reports the holder, changes nothing',
    (reached, command, dt) => {
      const { record } = reached;
      const now = reached.now + dt;
      fc.pre(record?.grant != null && isLive(record.grant, now));
      const { grant } = record!;
      const result = transitions.claim(record, command, now);
      expect(result.changed).toBe(false);
      expect(result.record).toBe(record);
      expect(result.outcome).toEqual({
        ok: false,
        reason: 'held',
        key: command.key,
        token: grant!.token,
        holder: grant!.holder,
        runId: grant!.runId,
        acquiredAt: grant!.acquiredAt,
        expiresAt: grant!.expiresAt,
        now,
      });
    },
  );

  test.prop([reachedArb, claimCommandArb, dtArb, fc.bigInt({ min: 0n, max: 40n })])(
    'grants a free, released, revoked or expired key the next token, hands over the ending and the checkpoint',
    (reached, command, dt, floor) => {
      const { record } = reached;
      const now = reached.now + dt;
      fc.pre(!(record?.grant != null && isLive(record.grant, now)));
      fc.pre(!(record?.recoveryRequired === true && !command.recovering));
      fc.pre(!(record?.heldUntil != null && now < record.heldUntil));
      // NOTE: a claim that does not wait is queued behind live waiters (test/fence/queue.test.ts), except a
      // recovering claim of a key awaiting recovery; expired waiters are dropped by the grant.
      const waiting = liveWaiters(record?.waiters ?? [], now);
      fc.pre(waiting.length === 0 || record?.recoveryRequired === true);
      const result = transitions.claim(record, command, now, floor);
      const token = mintToken(record?.token ?? 0n, floor);
      const expiresAt = command.ttlMs === null ? null : now + command.ttlMs;
      const previous = record?.grant != null ? expiredEnding(record.grant) : (record?.ending ?? null);
      const checkpoint = record?.checkpoint ?? null;
      expect(result.changed).toBe(true);
      expect(result.outcome).toEqual({ ok: true, key: command.key, token, acquiredAt: now, expiresAt, previous, checkpoint, now });
      expect(result.record).toEqual({
        key: command.key,
        token,
        grant: {
          token,
          holder: command.holder,
          runId: command.runId,
          secret: command.secret,
          acquiredAt: now,
          expiresAt,
          attributes: command.attributes,
        },
        ending: previous,
        checkpoint,
        recoveryRequired: record?.recoveryRequired ?? false,
        // NOTE: the key's state and submissions stay with the key; a hold that has passed is cleared.
        state: record?.state ?? {},
        heldUntil: null,
        submissions: record?.submissions ?? [],
        waiters: waiting,
      });
    },
  );

  test.prop([pendingRecoveryArb, claimCommandArb])(
    'a revoke with requireRecovery refuses plain claims until a recovering claim, changing nothing',
    (reached, command) => {
      const { record, now } = reached;
      expect(record?.recoveryRequired).toBe(true);
      const plain = transitions.claim(record, { ...command, recovering: false }, now);
      expect(plain.changed).toBe(false);
      expect(plain.record).toBe(record);
      expect(plain.outcome).toMatchObject({ ok: false, reason: 'recovery-required', token: record!.token, checkpoint: record!.checkpoint });
      expect(transitions.claim(record, { ...command, recovering: true }, now).outcome.ok).toBe(true);
    },
  );

  test.prop([fc.array(stepArb, { maxLength: 30 })])(
    'over any history, tokens only grow and no token is issued twice nor equal to a token burned by a revoke',
    (steps) => {
      let record = null as ReturnType<typeof runSteps>['record'];
      const issued = new Set<bigint>();
      let last = 0n;
      for (let i = 1; i <= steps.length; i += 1) {
        const next = runSteps(steps.slice(0, i)).record;
        const before = record?.token ?? 0n;
        // NOTE: a removed record takes its token with it (the store's floor keeps the next grant's above it).
        if (next !== null) expect(next.token >= before).toBe(true);
        if (next?.grant != null && next.grant.token !== record?.grant?.token) {
          expect(issued.has(next.grant.token)).toBe(false);
          expect(next.grant.token > last).toBe(true);
          issued.add(next.grant.token);
          last = next.grant.token;
        }
        if (next !== null && next.grant !== null) expect(next.grant.token).toBe(next.token);
        record = next;
      }
    },
  );
});

describe('renew', () => {
  test.prop([presentedArb, ttlArb])(
    'decides exactly as checkFence; a refused renew leaves the record identical',
    ({ reached, fence, now }, ttlMs) => {
      const result = transitions.renew(reached.record, { fence, ttlMs }, now);
      const verdict = checkFence(reached.record, fence, now);
      expect(result.outcome.ok).toBe(verdict.ok);
      if (!verdict.ok) {
        expect(result.outcome).toEqual(verdict);
        expect(result.changed).toBe(false);
        expect(result.record).toBe(reached.record);
      }
    },
  );

  test.prop([presentedArb, ttlArb])(
    'a granted renew moves only the expiry, to now + ttl, under the same token',
    ({ reached, fence, now }, ttlMs) => {
      const result = transitions.renew(reached.record, { fence, ttlMs }, now);
      fc.pre(result.outcome.ok);
      const record = reached.record!;
      const expiresAt = ttlMs === null ? null : now + ttlMs;
      expect(result.outcome).toEqual({ ok: true, key: record.key, token: record.token, expiresAt, now });
      expect(result.record).toEqual({ ...record, grant: { ...record.grant!, expiresAt } });
    },
  );

  test.prop([reachedArb.filter((r) => r.record?.grant?.expiresAt != null), ttlArb, fc.nat({ max: 1000 })])(
    'never resurrects an expired grant, even for its rightful holder',
    (reached, ttlMs, late) => {
      const record = reached.record!;
      const grant = record.grant!;
      const fence: Fence = { key: record.key, token: grant.token, secret: grant.secret, holder: grant.holder, runId: grant.runId };
      const result = transitions.renew(record, { fence, ttlMs }, (grant.expiresAt as number) + late);
      expect(result.outcome).toMatchObject({ ok: false, reason: 'expired' });
      expect(result.record).toBe(record);
    },
  );
});

describe('checkpoint', () => {
  test.prop([presentedArb, jsonArb])(
    'a refused checkpoint leaves the record identical; a granted one is stamped with the token and ends recovery',
    ({ reached, fence, now }, json) => {
      const result = transitions.checkpoint(reached.record, { fence, json }, now);
      const verdict = checkFence(reached.record, fence, now);
      if (!verdict.ok) {
        expect(result.outcome).toEqual(verdict);
        expect(result.record).toBe(reached.record);
        expect(result.changed).toBe(false);
        return;
      }
      const saved = { json, token: fence.token, writtenAt: now };
      expect(result.outcome).toEqual({ ok: true, checkpoint: saved, now });
      expect(result.record).toEqual({ ...reached.record!, checkpoint: saved, recoveryRequired: false });
    },
  );
});
