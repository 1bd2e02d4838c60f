/**
 * The pure core of claim-next (src/fence/claim-next.ts): `availableSince` agrees with `transitions.claim` on
 * every record a history of operations reaches, and `claimNext` grants the claimable item available longest.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  availableSince,
  byAvailability,
  claimNext,
  stateMatches,
  type ClaimNextCommand,
  type ItemCandidate,
  type SetItem,
} from '../../src/fence/claim-next.js';
import type { ClaimCommand } from '../../src/fence/operations.js';
import * as transitions from '../../src/fence/transitions.js';
import type { Fence, LeaseRecord } from '../../src/fence/types.js';
import { scaled } from '../support/scale.js';

const SET = 'queue';
let secrets = 0;
const freshSecret = (): string => (++secrets).toString(16).padStart(32, '0');

/** One operation of a key's history (time moves by `dt` before it applies). */
type Op =
  | { kind: 'claim'; ttlMs: number | null; recovering: boolean; dt: number }
  | { kind: 'release'; holdMs: number | undefined; checkpoint: boolean; dt: number }
  | { kind: 'renew'; ttlMs: number; dt: number }
  | { kind: 'checkpoint'; dt: number }
  | { kind: 'revoke'; requireRecovery: boolean; dt: number }
  | { kind: 'state'; value: string; holdMs: number | null | undefined; dt: number }
  | { kind: 'recover'; dt: number }
  | { kind: 'remove'; dt: number }
  | { kind: 'wait'; dt: number };

const dtArb = fc.integer({ min: 0, max: 400 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      ttlMs: fc.option(fc.integer({ min: 1, max: 500 }), { nil: null, freq: 8 }),
      recovering: fc.boolean(),
      dt: dtArb,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      holdMs: fc.option(fc.integer({ min: 0, max: 500 }), { nil: undefined }),
      checkpoint: fc.boolean(),
      dt: dtArb,
    }),
  },
  fc.record({ kind: fc.constant('renew' as const), ttlMs: fc.integer({ min: 1, max: 500 }), dt: dtArb }),
  fc.record({ kind: fc.constant('checkpoint' as const), dt: dtArb }),
  fc.record({ kind: fc.constant('revoke' as const), requireRecovery: fc.boolean(), dt: dtArb }),
  fc.record({
    kind: fc.constant('state' as const),
    value: fc.constantFrom('1', '2'),
    holdMs: fc.constantFrom(undefined, null, 0, 300),
    dt: dtArb,
  }),
  fc.record({ kind: fc.constant('recover' as const), dt: dtArb }),
  fc.record({ kind: fc.constant('remove' as const), dt: dtArb }),
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), dt: fc.integer({ min: 0, max: 1_000 }) }) },
);

const claimCommand = (key: string, extra: Partial<ClaimCommand> = {}): ClaimCommand => ({
  key,
  holder: 'h',
  runId: null,
  secret: freshSecret(),
  ttlMs: 100,
  attributes: {},
  recovering: false,
  ...extra,
});

/** Applies `op` to the record of `key` at `now` through the pure transitions; `fence` is the last grant's. */
function apply(
  record: LeaseRecord | null,
  fence: Fence | null,
  key: string,
  op: Op,
  now: number,
): { record: LeaseRecord | null; fence: Fence | null } {
  const next = (transition: { record: LeaseRecord | null; changed: boolean }) => (transition.changed ? transition.record : record);
  switch (op.kind) {
    case 'claim': {
      const command = claimCommand(key, { ttlMs: op.ttlMs, recovering: op.recovering, runId: `r${now}` });
      const transition = transitions.claim(record, command, now);
      if (!transition.outcome.ok) return { record, fence };
      return {
        record: next(transition),
        fence: { key, token: transition.outcome.token, secret: command.secret, holder: 'h', runId: command.runId },
      };
    }
    case 'release':
      if (fence === null) return { record, fence };
      return {
        record: next(
          transitions.release(
            record,
            { fence, ...(op.checkpoint ? { checkpointJson: '{}' } : {}), ...(op.holdMs === undefined ? {} : { holdMs: op.holdMs }) },
            now,
          ),
        ),
        fence,
      };
    case 'renew':
      return fence === null ? { record, fence } : { record: next(transitions.renew(record, { fence, ttlMs: op.ttlMs }, now)), fence };
    case 'checkpoint':
      return fence === null ? { record, fence } : { record: next(transitions.checkpoint(record, { fence, json: '{"n":1}' }, now)), fence };
    case 'recover':
      return fence === null ? { record, fence } : { record: next(transitions.recover(record, { fence, action: 'resume' }, now)), fence };
    case 'revoke':
      return {
        record: next(
          transitions.revoke(record, { key, reason: 'r', by: 'ops', requireRecovery: op.requireRecovery, expectedToken: null }, now),
        ),
        fence,
      };
    case 'state':
      return {
        record: next(
          transitions.setKeyState(
            record,
            { key, values: { tier: op.value }, by: 'w', ...(op.holdMs === undefined ? {} : { holdMs: op.holdMs }) },
            now,
          ),
        ),
        fence,
      };
    case 'remove':
      return { record: next(transitions.remove(record, { key, force: true, expectedToken: null }, now)), fence };
    case 'wait':
      return { record, fence };
  }
}

/** Every record a history of `ops` reaches on `key`, with the time it was reached. */
function reached(key: string, ops: readonly Op[]): { record: LeaseRecord | null; now: number }[] {
  let record: LeaseRecord | null = null;
  let fence: Fence | null = null;
  let now = 1_000;
  const seen = [];
  for (const op of ops) {
    now += op.dt;
    ({ record, fence } = apply(record, fence, key, op, now));
    seen.push({ record, now });
  }
  return seen;
}

const historyArb = fc.array(opArb, { minLength: 1, maxLength: 30 });

describe('availableSince', () => {
  it('says exactly when claim grants: claimable at now iff it is at most now, from then on by time alone; never when null', () => {
    fc.assert(
      fc.property(historyArb, fc.nat({ max: 2_000 }), (ops, dueOffset) => {
        for (const { record, now } of reached('k', ops)) {
          const item: SetItem = { set: SET, key: 'k', dueAt: 1_000 + Math.min(dueOffset, now - 1_000) };
          const since = availableSince(record, item);
          const grants = (at: number) => transitions.claim(record, claimCommand('k'), at).outcome.ok;
          expect(since !== null && since <= now).toBe(grants(now));
          if (since === null) expect(grants(now + 10_000_000)).toBe(false);
          else {
            expect(grants(Math.max(since, now))).toBe(true);
            if (since > now) expect(grants(since - 1)).toBe(false);
          }
        }
      }),
      { numRuns: scaled(300) },
    );
  });

  it('of an item not yet due is its due time, whatever the record', () => {
    fc.assert(
      fc.property(historyArb, (ops) => {
        for (const { record, now } of reached('k', ops)) {
          const since = availableSince(record, { set: SET, key: 'k', dueAt: now + 5_000 });
          // NOTE: a hold or grant ends within ~1,000 ms of now here, so the due time is the latest.
          expect(since === null || since === now + 5_000).toBe(true);
        }
      }),
      { numRuns: scaled(100) },
    );
  });
});

const nextCommand = (extra: Partial<ClaimNextCommand> = {}): ClaimNextCommand => ({
  set: SET,
  holder: 'w',
  runId: 'rn',
  secret: freshSecret(),
  ttlMs: 100,
  attributes: {},
  onExpired: 'take-over',
  ...extra,
});

describe('claimNext (pure)', () => {
  const candidatesArb = fc.array(fc.tuple(historyArb, fc.nat({ max: 3_000 }), fc.boolean()), { minLength: 0, maxLength: 6 });

  it('grants the claimable, not busy, matching candidate with the smallest availableSince then key, or answers idle with the earliest future one', () => {
    fc.assert(
      fc.property(
        candidatesArb,
        fc.constantFrom(undefined, { tier: '1' }, { tier: null }),
        fc.nat({ max: 4_000 }),
        (given, expect_, extraTime) => {
          const histories = given.map(([ops, dueOffset, busy], index) => {
            const key = `k${index}`;
            const last = reached(key, ops).at(-1) as { record: LeaseRecord | null; now: number };
            return { item: { set: SET, key, dueAt: 1_000 + dueOffset }, record: last.record, busy, at: last.now };
          });
          const now = Math.max(1_000, ...histories.map((each) => each.at)) + extraTime;
          const candidates: ItemCandidate[] = histories.map(({ item, record, busy }) => ({ item, record, busy }));
          const command = nextCommand(expect_ === undefined ? {} : { expect: expect_ });
          const { key, transition } = claimNext(candidates, command, now);
          const judged = candidates
            .filter((each) => stateMatches(each.record, command.expect))
            .map((each) => ({ each, since: availableSince(each.record, each.item), key: each.item.key }))
            .filter((entry): entry is typeof entry & { since: number } => entry.since !== null);
          const claimable = judged.filter((entry) => entry.since <= now && !entry.each.busy).sort(byAvailability);
          const first = claimable[0];
          if (first === undefined) {
            const later = judged.map((entry) => (entry.since > now ? entry.since : now));
            expect(key).toBeNull();
            expect(transition.outcome).toEqual({
              ok: false,
              reason: 'idle',
              set: SET,
              nextAt: later.length === 0 ? null : Math.min(...later),
              now,
            });
            return;
          }
          expect(key).toBe(first.key);
          const plain = transitions.claim(
            first.each.record,
            { ...claimCommand(first.key), secret: command.secret, holder: 'w', runId: 'rn' },
            now,
          );
          expect(transition.outcome).toMatchObject({ ...plain.outcome, set: SET, availableSince: first.since });
          expect(transition.record).toEqual(plain.record);
        },
      ),
      { numRuns: scaled(300) },
    );
  });

  it('record-first: an item whose grant expired is granted with the abandoned run named and the key requiring recovery', () => {
    const claimed = transitions.claim(null, claimCommand('k', { runId: 'r7', ttlMs: 50 }), 1_000);
    const expiredRecord = claimed.record as LeaseRecord;
    const item = { set: SET, key: 'k', dueAt: 0 };
    const takeOver = claimNext([{ item, record: expiredRecord, busy: false }], nextCommand(), 2_000);
    const recordFirst = claimNext([{ item, record: expiredRecord, busy: false }], nextCommand({ onExpired: 'record-first' }), 2_000);
    const abandoned = { token: 1n, holder: 'h', runId: 'r7', expiredAt: 1_050 };
    expect(takeOver.transition.outcome).toMatchObject({ ok: true, key: 'k', availableSince: 1_050, abandoned, recoveryRequired: false });
    expect(takeOver.transition.record?.recoveryRequired).toBe(false);
    expect(recordFirst.transition.outcome).toMatchObject({ ok: true, key: 'k', abandoned, recoveryRequired: true });
    expect(recordFirst.transition.record?.recoveryRequired).toBe(true);
    // NOTE: if that holder dies before recording it, the key is blocked, never granted by claim-next again.
    expect(availableSince(recordFirst.transition.record, item)).toBeNull();
  });

  it('a released (not expired) item is granted with no abandoned run, in either mode', () => {
    const command = claimCommand('k', { runId: 'r7' });
    const claimed = transitions.claim(null, command, 1_000);
    const fence = { key: 'k', token: 1n, secret: command.secret, holder: 'h', runId: 'r7' };
    const released = transitions.release(claimed.record, { fence }, 1_010).record;
    const decision = claimNext(
      [{ item: { set: SET, key: 'k', dueAt: 0 }, record: released, busy: false }],
      nextCommand({ onExpired: 'record-first' }),
      1_020,
    );
    expect(decision.transition.outcome).toMatchObject({
      ok: true,
      availableSince: 1_010,
      abandoned: null,
      recoveryRequired: false,
      previous: { kind: 'released' },
    });
  });

  it('a revoke of an expired grant stamps its ending now: the item goes behind the ones waiting since the expiry', () => {
    const claimed = transitions.claim(null, claimCommand('k', { ttlMs: 10 }), 1_000).record;
    const revoked = transitions.revoke(
      claimed,
      { key: 'k', reason: 'r', by: 'ops', requireRecovery: false, expectedToken: null },
      1_050,
    ).record;
    expect(availableSince(claimed, { set: SET, key: 'k', dueAt: 0 })).toBe(1_010);
    expect(availableSince(revoked, { set: SET, key: 'k', dueAt: 0 })).toBe(1_050);
  });

  it('the same command delivered again answers the grant it made and changes nothing', () => {
    const item = { set: SET, key: 'k', dueAt: 0 };
    const command = nextCommand();
    const first = claimNext([{ item, record: null, busy: false }], command, 1_000);
    const again = claimNext(
      [
        { item, record: first.transition.record, busy: false },
        { item: { ...item, key: 'j' }, record: null, busy: false },
      ],
      command,
      1_001,
    );
    expect(again.key).toBeNull();
    expect(again.transition.changed).toBe(false);
    expect(again.transition.outcome).toMatchObject({ ok: true, key: 'k', token: (first.transition.outcome as { token: bigint }).token });
  });
});
