import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { describeRefusal } from '../../src/describe.js';
import type { FenceRefusal } from '../../src/fence/types.js';
import { checkFence } from '../../src/fence/verdict.js';
import { presentedFenceArb, reachedArb, timeArb } from './arbitraries.js';

/** Refusals as the pure core produces them, for reachable records and presented (possibly forged) fences. */
const refusalArb: fc.Arbitrary<FenceRefusal> = reachedArb
  .chain((reached) => fc.tuple(fc.constant(reached), presentedFenceArb(reached), timeArb))
  .map(([reached, fence, dt]) => checkFence(reached.record, fence, reached.now + dt))
  .filter((verdict): verdict is FenceRefusal => !verdict.ok);

describe('describeRefusal', () => {
  test.prop([refusalArb])('names the key, the reason, the expected token and the found token (or that no record exists)', (refusal) => {
    const line = describeRefusal(refusal);
    expect(line).toContain(`lease lost on ${refusal.key} (${refusal.reason}:`);
    expect(line).toContain(`expected token ${refusal.expected.token}`);
    expect(line).toContain(refusal.found.token === null ? 'found no lease record' : `found token ${refusal.found.token}`);
  });

  test.prop([refusalArb])('names the expected and found holders and runs when there are any', (refusal) => {
    const line = describeRefusal(refusal);
    expect(line).toContain(`holder ${refusal.expected.holder}`);
    if (refusal.expected.runId !== null) expect(line).toContain(`run ${refusal.expected.runId}`);
    if (refusal.found.token !== null && refusal.found.holder !== null) expect(line).toContain(`holder ${refusal.found.holder}`);
    if (refusal.found.token !== null && refusal.found.runId !== null) expect(line).toContain(`run ${refusal.found.runId}`);
  });

  test.prop([refusalArb])('says who revoked and why, and when an expired grant expired', (refusal) => {
    const line = describeRefusal(refusal);
    const { ending, expiresAt } = refusal.found;
    if (refusal.reason === 'revoked' && ending !== null) {
      expect(line).toContain(`revoked at ${new Date(ending.at).toISOString()}`);
      if (ending.by !== null) expect(line).toContain(`by ${ending.by}`);
      if (ending.reason !== null) expect(line).toContain(ending.reason);
    }
    if (refusal.reason === 'expired' && expiresAt !== null) expect(line).toContain(`expired at ${new Date(expiresAt).toISOString()}`);
    if (refusal.attribute !== null) {
      // NOTE: a key-state value that moved is named as the seeds' "tier moved", a bound attribute as an attribute.
      const named = refusal.reason === 'state-changed' ? `the ${refusal.attribute.name} moved` : `attribute ${refusal.attribute.name}`;
      expect(line).toContain(named);
    }
  });

  test('reads like the seeds wished: expected token 7 (run r1), found token 8 (run r2)', () => {
    const refusal: FenceRefusal = {
      ok: false,
      reason: 'superseded',
      key: 'ramp:current',
      expected: { token: 7n, holder: 'runner', runId: 'r1' },
      found: { token: 8n, holder: 'runner', runId: 'r2', expiresAt: 60_000, ending: null },
      attribute: null,
      now: 1_000,
    };
    expect(describeRefusal(refusal)).toBe(
      'lease lost on ramp:current (superseded: a newer grant took over): expected token 7 (holder runner, run r1), found token 8 (holder runner, run r2)',
    );
  });
});
