/**
 * Type-level specifications of issue 24's result unions (never run; see test/types/types.test.ts): every
 * claim refusal narrows on `reason` to its own fields, a fenced write's outcome names its own refusals
 * (`write-refused`, `replayed`, `replay-conflict`) beside the fence's, and `check` answers ok, too little TTL
 * or the fence's refusal. A `@ts-expect-error` line must be refused.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { createMemoryStore, type MemoryWriteContext } from '../../src/adapters/memory/index.js';
import {
  type CheckOutcome,
  type ClaimRefusal,
  type ClaimResult,
  createLeases,
  type FencedWriteOutcome,
  type Lease,
  type RemoveOutcome,
  type SetKeyStateOutcome,
} from '../../src/index.js';
import type { FenceRefusal, StoreTime } from '../../src/fence/types.js';

declare const lease: Lease;
const leases = createLeases(createMemoryStore(), { holder: 'h' });

describe('claim refusals', () => {
  it('narrow on reason to their own fields', () => {
    type Refusal = Extract<ClaimResult, { ok: false }>;
    expectTypeOf<Refusal>().toEqualTypeOf<ClaimRefusal>();
    expectTypeOf<Refusal['reason']>().toEqualTypeOf<
      'held' | 'recovery-required' | 'held-back' | 'state-mismatch' | 'queued' | 'run-already-acquired'
    >();
    expectTypeOf<Extract<Refusal, { reason: 'held-back' }>['heldUntil']>().toEqualTypeOf<StoreTime>();
    expectTypeOf<Extract<Refusal, { reason: 'state-mismatch' }>['field']['expected']>().toEqualTypeOf<string | null>();
    expectTypeOf<Extract<Refusal, { reason: 'run-already-acquired' }>['runId']>().toEqualTypeOf<string>();
    expectTypeOf<Extract<Refusal, { reason: 'run-already-acquired' }>['token']>().toEqualTypeOf<bigint>();
    // @ts-expect-error a state-mismatch names no token: the key's state, not a grant, refused it
    expectTypeOf<Extract<Refusal, { reason: 'state-mismatch' }>['token']>();
  });

  it('expect takes string or null values', () => {
    void leases.claim('k', { expect: { tier: '3', retired: null } });
    // @ts-expect-error key-state values are strings
    void leases.claim('k', { expect: { tier: 3 } });
  });
});

describe('fenced write outcomes', () => {
  it('name the write refusal, the replay and the conflict beside the fence refusal', () => {
    type Refused = Extract<FencedWriteOutcome<number>, { ok: false }>;
    expectTypeOf<Extract<Refused, { reason: 'write-refused' }>['code']>().toEqualTypeOf<string>();
    expectTypeOf<Extract<Refused, { reason: 'replayed' }>['submission']['receiptJson']>().toEqualTypeOf<string | null>();
    expectTypeOf<Extract<Refused, { reason: 'replay-conflict' }>['expected']['digest']>().toEqualTypeOf<string>();
    expectTypeOf<Exclude<Refused['reason'], FenceRefusal['reason']>>().toEqualTypeOf<'write-refused' | 'replayed' | 'replay-conflict'>();
  });

  it("the memory store's write context can refuse, and a submission needs a payload", async () => {
    const outcome = await leases.fencedWrite(
      lease,
      (context) => {
        expectTypeOf(context).toEqualTypeOf<MemoryWriteContext>();
        expectTypeOf<ReturnType<typeof context.refuse>>().toBeNever();
        return 1;
      },
      { submission: { payload: { a: 1 }, runId: 'r', receipt: 'ok', bindToGrant: true } },
    );
    if (outcome.ok) expectTypeOf(outcome.value).toEqualTypeOf<number>();
    // @ts-expect-error a submission without a payload
    void leases.fencedWrite(lease, () => 1, { submission: { runId: 'r' } });
  });
});

describe('check, setKeyState, remove', () => {
  it('answer their own unions', async () => {
    expectTypeOf(leases.check(lease, { minTtlMs: 5_000 })).resolves.toEqualTypeOf<CheckOutcome>();
    const checked = await leases.check(lease);
    if (!checked.ok && checked.reason === 'ttl-insufficient') expectTypeOf(checked.remainingMs).toEqualTypeOf<number>();
    if (checked.ok) expectTypeOf(checked.remainingMs).toEqualTypeOf<number | null>();
    expectTypeOf(
      leases.setKeyState('k', { tier: '4', old: null }, { holdMs: null, by: 'ops' }),
    ).resolves.toEqualTypeOf<SetKeyStateOutcome>();
    expectTypeOf(leases.remove('k', { force: true, expectedToken: 7n })).resolves.toEqualTypeOf<RemoveOutcome>();
    expectTypeOf(lease.timeLeftMs(1_000)).toEqualTypeOf<number>();
    // @ts-expect-error expectedToken is a bigint
    void leases.remove('k', { expectedToken: 7 });
  });
});
