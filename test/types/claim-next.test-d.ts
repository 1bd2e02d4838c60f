/**
 * Type-level specifications of claim-next through the lease API (never run; see test/types/types.test.ts): a
 * result narrows on `ok` to a grant with its lease and the abandoned run, or to `idle` with `nextAt`; `addItems`
 * narrows to its `in-another-set` refusal; options take only what claim-next knows. A `@ts-expect-error` line
 * must be refused.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import {
  type AbandonedRun,
  type AddItemsOutcome,
  type ClaimNextIdle,
  type ClaimNextResult,
  createLeases,
  describeRefusal,
  type GrantedNext,
  type Lease,
  type OnExpired,
  type WaitedClaimNextResult,
  type WaitedIdle,
} from '../../src/index.js';
import type { StoreTime } from '../../src/fence/types.js';

const leases = createLeases(createMemoryStore(), { holder: 'h' });

describe('claimNext', () => {
  it('answers a grant with a lease, or idle with nextAt', async () => {
    const result = await leases.claimNext('scan', { runId: 'r1', onExpired: 'record-first', expect: { model: 'v2' } });
    expectTypeOf(result).toEqualTypeOf<ClaimNextResult>();
    if (result.ok) {
      expectTypeOf(result).toEqualTypeOf<GrantedNext>();
      expectTypeOf(result.lease).toEqualTypeOf<Lease>();
      expectTypeOf(result.abandoned).toEqualTypeOf<AbandonedRun | null>();
      expectTypeOf(result.recoveryRequired).toEqualTypeOf<boolean>();
      expectTypeOf(result.availableSince).toEqualTypeOf<StoreTime>();
    } else {
      expectTypeOf(result).toEqualTypeOf<ClaimNextIdle>();
      expectTypeOf(result.nextAt).toEqualTypeOf<StoreTime | null>();
      expectTypeOf(describeRefusal(result)).toEqualTypeOf<string>();
    }
  });

  it('takes only claim-next options', () => {
    expectTypeOf<OnExpired>().toEqualTypeOf<'take-over' | 'record-first'>();
    // @ts-expect-error onExpired is one of two modes
    void leases.claimNext('scan', { onExpired: 'drop' });
    // @ts-expect-error an option claim-next does not know
    void leases.claimNext('scan', { waitMs: 1_000 });
    // @ts-expect-error recovering is claim's: claim the key itself
    void leases.claimNext('scan', { recovering: true });
  });
});

describe('claimNext with wait', () => {
  it('answers the grant or the last idle with how long it waited', async () => {
    const result = await leases.claimNext('scan', { wait: { timeoutMs: 1_000 } });
    expectTypeOf(result).toEqualTypeOf<WaitedClaimNextResult>();
    if (!result.ok) {
      expectTypeOf(result).toEqualTypeOf<WaitedIdle>();
      expectTypeOf(result.waitedMs).toEqualTypeOf<number>();
      expectTypeOf(result.waitEnded).toEqualTypeOf<'timeout' | 'aborted'>();
    }
    const plain = await leases.claimNext('scan', { runId: 'r1' });
    expectTypeOf(plain).toEqualTypeOf<ClaimNextResult>();
  });
});

describe('addItems and removeItems', () => {
  it('addItems narrows to in-another-set with the other set', async () => {
    const outcome = await leases.addItems('scan', ['item:1'], { notBeforeMs: 60_000 });
    expectTypeOf(outcome).toEqualTypeOf<AddItemsOutcome>();
    if (!outcome.ok) {
      expectTypeOf(outcome.otherSet).toEqualTypeOf<string>();
      expectTypeOf(describeRefusal(outcome)).toEqualTypeOf<string>();
    } else expectTypeOf(outcome.added).toEqualTypeOf<readonly string[]>();
    const removed = await leases.removeItems('scan', ['item:1']);
    expectTypeOf(removed.removed).toEqualTypeOf<readonly string[]>();
    // @ts-expect-error keys are an array
    void leases.removeItems('scan', 'item:1');
  });
});
