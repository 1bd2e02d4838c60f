import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { checkFence, expiredEnding, isLive } from '../../src/fence/verdict.js';
import type { Fence, FenceRefusal, FenceVerdict, GrantState, LeaseRecord } from '../../src/fence/types.js';
import {
  attributesArb,
  grantArb,
  holderArb,
  KEY,
  recordArb,
  rightfulFence,
  runIdArb,
  secretArb,
  timeArb,
  tokenArb,
} from './arbitraries.js';

type Held = LeaseRecord & { grant: GrantState };

/** Records with a grant, and a time at which that grant is live. */
const heldArb: fc.Arbitrary<{ record: Held; now: number }> = recordArb
  .filter((record): record is Held => record.grant !== null)
  .chain((record) => {
    const { acquiredAt, expiresAt } = record.grant;
    const now =
      expiresAt === null
        ? fc.integer({ min: acquiredAt, max: acquiredAt + 10_000_000 })
        : fc.integer({ min: acquiredAt, max: expiresAt - 1 });
    return now.map((at) => ({ record, now: at }));
  });

function refused(verdict: FenceVerdict): FenceRefusal {
  if (verdict.ok) throw new Error('expected a refusal, got ok');
  return verdict;
}

describe('checkFence', () => {
  test.prop([recordArb, fc.option(fc.bigInt({ min: 1n, max: 50n }), { nil: undefined }), secretArb, holderArb, runIdArb, timeArb])(
    'the reference oracle: ok exactly when the grant is current, proven, attribute-compatible and live (strict expiry)',
    (record, tokenOverride, secret, holder, runId, now) => {
      const grant = record.grant;
      const fence: Fence = {
        key: KEY,
        token: tokenOverride ?? record.token,
        secret: grant !== null && secret.endsWith('0') ? grant.secret : secret,
        holder: grant !== null && holder !== 'w3' ? grant.holder : holder,
        runId: grant !== null && runId !== 'r2' ? grant.runId : runId,
      };
      const expectedOk =
        grant !== null &&
        grant.token === fence.token &&
        grant.secret === fence.secret &&
        grant.holder === fence.holder &&
        grant.runId === fence.runId &&
        (grant.expiresAt === null || now < grant.expiresAt);
      expect(checkFence(record, fence, now).ok).toBe(expectedOk);
    },
  );

  test.prop([recordArb.filter((r) => r.grant !== null), secretArb, timeArb])(
    'missing: a fence against no record is refused as missing, with nothing found',
    (record, secret, now) => {
      const fence: Fence = { key: KEY, token: record.token, secret, holder: 'w1', runId: null };
      const verdict = refused(checkFence(null, fence, now));
      expect(verdict.reason).toBe('missing');
      expect(verdict.found).toEqual({ token: null, holder: null, runId: null, expiresAt: null, ending: null });
    },
  );

  test.prop([heldArb])('the rightful holder of a live grant passes', ({ record, now }) => {
    expect(checkFence(record, rightfulFence(record), now)).toEqual({ ok: true });
  });

  test.prop([heldArb.filter(({ record }) => record.grant.expiresAt !== null), fc.nat({ max: 1_000_000 })])(
    'expiry is strict: at now === expiresAt and after, the grant is expired; one ms before, it is live',
    ({ record }, after) => {
      const expiresAt = record.grant.expiresAt as number;
      const fence = rightfulFence(record);
      expect(refused(checkFence(record, fence, expiresAt)).reason).toBe('expired');
      expect(refused(checkFence(record, fence, expiresAt + after)).reason).toBe('expired');
      expect(checkFence(record, fence, expiresAt - 1).ok).toBe(true);
      expect(isLive(record.grant, expiresAt)).toBe(false);
      expect(isLive(record.grant, expiresAt - 1)).toBe(true);
    },
  );

  test.prop([heldArb, fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })])(
    'a grant without expiry is live at any now',
    ({ record }, now) => {
      const forever: Held = { ...record, grant: { ...record.grant, expiresAt: null } };
      expect(checkFence(forever, rightfulFence(forever), now).ok).toBe(true);
    },
  );

  test.prop([recordArb, fc.bigInt({ min: 1n, max: 1000n }), secretArb, timeArb])(
    'not-held: a token above every issued one is refused as never issued',
    (record, above, secret, now) => {
      const fence: Fence = { key: KEY, token: record.token + above, secret, holder: 'w1', runId: null };
      expect(refused(checkFence(record, fence, now)).reason).toBe('not-held');
    },
  );

  test.prop([heldArb, fc.bigInt({ min: 1n, max: 1000n })])(
    'superseded: an older token is refused while a newer grant holds the key, whatever else it proves',
    ({ record, now }, behind) => {
      fc.pre(behind < record.token);
      const fence = { ...rightfulFence(record), token: record.token - behind };
      expect(refused(checkFence(record, fence, now)).reason).toBe('superseded');
    },
  );

  test.prop([recordArb, fc.constantFrom('released' as const, 'revoked' as const), fc.boolean(), timeArb])(
    'released / revoked: the grant that ended is told how it ended; an older one is superseded',
    (base, kind, burned, now) => {
      const endedToken = burned && base.token > 1n ? base.token - 1n : base.token;
      const record: LeaseRecord = {
        ...base,
        grant: null,
        ending: { kind, token: endedToken, holder: 'w1', runId: null, at: now, reason: null, by: null },
      };
      const fence: Fence = { key: KEY, token: endedToken, secret: 'a'.repeat(32), holder: 'w1', runId: null };
      expect(refused(checkFence(record, fence, now)).reason).toBe(kind);
      if (endedToken > 1n) expect(refused(checkFence(record, { ...fence, token: endedToken - 1n }, now)).reason).toBe('superseded');
    },
  );

  test.prop([recordArb.map((record) => ({ ...record, grant: null, ending: null })), timeArb])(
    'nothing held and no ending: the last token is superseded-over only if older, else never issued',
    (record, now) => {
      const fence: Fence = { key: KEY, token: record.token, secret: 'a'.repeat(32), holder: 'w1', runId: null };
      expect(refused(checkFence(record, fence, now)).reason).toBe('not-held');
      if (record.token > 1n) expect(refused(checkFence(record, { ...fence, token: record.token - 1n }, now)).reason).toBe('superseded');
    },
  );

  test.prop([heldArb, secretArb, fc.nat({ max: 1000 })])(
    'order of checks: a wrong secret is named before holder, attribute and expiry failures',
    ({ record }, secret, late) => {
      fc.pre(secret !== record.grant.secret);
      const fence: Fence = { ...rightfulFence(record), secret, holder: 'intruder', attributes: { model: 'v9' } };
      const now = (record.grant.expiresAt ?? record.grant.acquiredAt) + late;
      expect(refused(checkFence(record, fence, now)).reason).toBe('wrong-secret');
    },
  );

  test.prop([heldArb, fc.constantFrom('holder', 'run'), fc.nat({ max: 1000 })])(
    'order of checks: a holder or run mismatch is named before attribute and expiry failures',
    ({ record }, which, late) => {
      const base = rightfulFence(record);
      const fence: Fence =
        which === 'holder'
          ? { ...base, holder: `${base.holder}-x`, attributes: { model: 'v9' } }
          : { ...base, runId: base.runId === 'r9' ? null : 'r9' };
      const now = (record.grant.expiresAt ?? record.grant.acquiredAt) + late;
      expect(refused(checkFence(record, fence, now)).reason).toBe('holder-mismatch');
    },
  );

  test.prop([heldArb, fc.constantFrom('model', 'region'), fc.constantFrom('v1', 'v2', 'v3'), fc.nat({ max: 1000 })])(
    'attribute-mismatch names the attribute, expected and found, before expiry is judged',
    ({ record }, name, wanted, late) => {
      const found = record.grant.attributes[name] ?? null;
      fc.pre(found !== wanted);
      const fence: Fence = { ...rightfulFence(record), attributes: { [name]: wanted } };
      const now = (record.grant.expiresAt ?? record.grant.acquiredAt) + late;
      const verdict = refused(checkFence(record, fence, now));
      expect(verdict.reason).toBe('attribute-mismatch');
      expect(verdict.attribute).toEqual({ name, expected: wanted, found });
    },
  );

  test.prop([heldArb])('required attributes that are a subset of the bound ones pass', ({ record, now }) => {
    const entries = Object.entries(record.grant.attributes).slice(0, 1);
    const fence: Fence = { ...rightfulFence(record), attributes: Object.fromEntries(entries) };
    expect(checkFence(record, fence, now).ok).toBe(true);
  });

  test.prop([recordArb, tokenArb, secretArb, holderArb, runIdArb, attributesArb, timeArb])(
    'every refusal carries the key, what the fence expected, what the record held, and now',
    (record, token, secret, holder, runId, attributes, now) => {
      const fence: Fence = { key: KEY, token, secret, holder, runId, attributes };
      const verdict = checkFence(record, fence, now);
      if (verdict.ok) return;
      expect(verdict.key).toBe(KEY);
      expect(verdict.now).toBe(now);
      expect(verdict.expected).toEqual({ token, holder, runId });
      expect(verdict.found).toEqual({
        token: record.token,
        holder: record.grant?.holder ?? null,
        runId: record.grant?.runId ?? null,
        expiresAt: record.grant?.expiresAt ?? null,
        ending: record.ending,
      });
      expect(verdict.attribute === null).toBe(verdict.reason !== 'attribute-mismatch');
    },
  );
});

describe('expiredEnding', () => {
  test.prop([tokenArb.chain((token) => grantArb(token))])(
    'an expired grant ends at its expires-at, with its token, holder and run',
    (grant) => {
      const ending = expiredEnding(grant);
      expect(ending).toEqual({
        kind: 'expired',
        token: grant.token,
        holder: grant.holder,
        runId: grant.runId,
        at: grant.expiresAt ?? 0,
        reason: null,
        by: null,
      });
    },
  );
});
