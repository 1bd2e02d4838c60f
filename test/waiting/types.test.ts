/**
 * The types of a waiting claim: a refusal after waiting carries `waitedMs` and `waitEnded` without a cast;
 * a claim without `wait` keeps its plain result; a misspelt option is still a type error.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases, type ClaimResult, type WaitedClaimResult } from '../../src/index.js';

describe('waiting claim types', () => {
  it('follow the options', async () => {
    const leases = createLeases(createMemoryStore(), { holder: 'w' });
    const waited = await leases.claim('job:1', { wait: { timeoutMs: 0 } });
    expectTypeOf(waited).toEqualTypeOf<WaitedClaimResult>();
    if (!waited.ok) expectTypeOf(waited.waitedMs).toEqualTypeOf<number>();
    expectTypeOf(await leases.claim('job:1')).toEqualTypeOf<ClaimResult>();
    expectTypeOf(await leases.claim('job:1', { ttlMs: 5_000 })).toEqualTypeOf<ClaimResult>();
    // @ts-expect-error: `runID` is not a claim option
    await leases.claim('job:1', { ttlMs: 5_000, runID: 'x' });
  });
});
