/**
 * The pure core of semaphores (src/fence/permits.ts): random histories of acquires (limits 1..5, TTLs, holders,
 * recovering), re-deliveries, releases (with and without a hold), checkpoints, revokes (with and without
 * `requireRecovery`), removals and clock advances, applied to a map of permit records through `acquirePermit` and
 * `transitions.*` as a store applies them. After every acquire, its answer is checked against what the records
 * say, computed here from `transitions.claim` and the records alone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { availableSince } from '../../src/fence/claim-next.js';
import {
  acquirePermit,
  MAX_PERMITS,
  permitKey,
  permitOf,
  type AcquirePermitCommand,
  type PermitCandidate,
  type PermitGranted,
} from '../../src/fence/permits.js';
import * as transitions from '../../src/fence/transitions.js';
import type { Fence, LeaseRecord } from '../../src/fence/types.js';
import { assertSemaphore } from '../../src/validate.js';
import { scaled } from '../support/scale.js';

const SEMAPHORE = 'pool';
let secrets = 0;
const freshSecret = (): string => (++secrets).toString(16).padStart(32, '0');

/** One step of a semaphore's history (time moves by `dt` first). `pick` chooses among the grants made so far. */
type Op =
  | { kind: 'acquire'; limit: number; ttlMs: number | null; holder: string; recovering: boolean; busy: readonly number[]; dt: number }
  | { kind: 'redeliver'; pick: number; dt: number }
  | { kind: 'release'; pick: number; holdMs: number | undefined; checkpoint: boolean; dt: number }
  | { kind: 'checkpoint'; pick: number; dt: number }
  | { kind: 'revoke'; pick: number; checkpointFirst: boolean; requireRecovery: boolean; dt: number }
  | { kind: 'remove'; index: number; dt: number }
  | { kind: 'wait'; dt: number };

const dtArb = fc.integer({ min: 0, max: 300 });
const indexArb = fc.integer({ min: 1, max: 6 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('acquire' as const),
      limit: fc.integer({ min: 1, max: 5 }),
      ttlMs: fc.option(fc.integer({ min: 1, max: 600 }), { nil: null, freq: 8 }),
      holder: fc.constantFrom('w1', 'w2', 'w3'),
      recovering: fc.constantFrom(false, false, false, true),
      busy: fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, fc.uniqueArray(indexArb, { maxLength: 2 })),
      dt: dtArb,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('redeliver' as const), pick: fc.nat(), dt: dtArb }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: fc.nat(),
      holdMs: fc.option(fc.integer({ min: 0, max: 400 }), { nil: undefined, freq: 3 }),
      checkpoint: fc.boolean(),
      dt: dtArb,
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('checkpoint' as const), pick: fc.nat(), dt: dtArb }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('revoke' as const),
      pick: fc.nat(),
      checkpointFirst: fc.boolean(),
      requireRecovery: fc.boolean(),
      dt: dtArb,
    }),
  },
  fc.record({ kind: fc.constant('remove' as const), index: indexArb, dt: dtArb }),
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), dt: fc.integer({ min: 0, max: 1_000 }) }) },
);
const historyArb = fc.array(opArb, { minLength: 1, maxLength: 40 });

/** The semaphore as a store keeps it: the permit records by index, the store's floor, now. */
interface Semaphore {
  readonly records: Map<number, LeaseRecord>;
  /** One above the highest token of a removed record (the memory store's floor for every key). */
  floor: bigint;
  now: number;
  /** Every acquire that was granted (its command, index and the grant), oldest first. */
  readonly grants: { command: AcquirePermitCommand; granted: PermitGranted }[];
  /** The highest token any permit record ever had (granted, or burned by a revoke). */
  highest: bigint;
}

const isLiveAt = (record: LeaseRecord | undefined | null, now: number): boolean => {
  const expiresAt = record?.grant?.expiresAt;
  return expiresAt === null || (expiresAt !== undefined && now < expiresAt);
};
const liveCount = (semaphore: Semaphore, now = semaphore.now): number =>
  [...semaphore.records.values()].filter((record) => isLiveAt(record, now)).length;

const candidatesOf = (semaphore: Semaphore, busy: readonly number[]): PermitCandidate[] =>
  [...semaphore.records].map(([index, record]) => ({ index, record, busy: busy.includes(index) }));

/**
 * Whether permit `index` can be granted to `command` at `now`, from `transitions.claim` alone: claim grants it, it
 * is not busy, and it is blocked for recovery exactly when the acquire is `recovering`.
 */
function grantable(semaphore: Semaphore, index: number, command: AcquirePermitCommand, busy: readonly number[], now: number): boolean {
  const record = semaphore.records.get(index) ?? null;
  // NOTE: only a permit with a record can be busy (an operation runs on it); a store offers no other.
  if ((record !== null && busy.includes(index)) || (record?.recoveryRequired === true) !== command.recovering) return false;
  const claimed = transitions.claim(record, { ...claimFields(command), key: permitKey(SEMAPHORE, index) }, now);
  return claimed.outcome.ok && claimed.changed;
}

function claimFields(command: AcquirePermitCommand) {
  const { semaphore: _semaphore, limit: _limit, ...fields } = command;
  return fields;
}

/** Whether an acquire of `command` would be granted at `now` over the records as they are (nothing applied). */
const grantsAt = (semaphore: Semaphore, command: AcquirePermitCommand, busy: readonly number[], now: number): boolean =>
  acquirePermit(candidatesOf(semaphore, busy), command, now, semaphore.floor).transition.outcome.ok;

/** Every time at or after `now` at which what the records allow may change (expiries, holds), and `now`. */
function momentsFrom(semaphore: Semaphore, now: number): number[] {
  const moments = new Set([now]);
  for (const record of semaphore.records.values()) {
    for (const at of [record.grant?.expiresAt, record.heldUntil]) if (typeof at === 'number' && at > now) moments.add(at);
  }
  return [...moments].sort((a, b) => a - b);
}

/** Runs one acquire (fresh or re-delivered) and checks its answer against the records. */
function checkedAcquire(semaphore: Semaphore, command: AcquirePermitCommand, busy: readonly number[]): void {
  const { now } = semaphore;
  const before = new Map(semaphore.records);
  const liveBefore = liveCount(semaphore);
  const repeated = [...semaphore.records].find(([, record]) => isLiveAt(record, now) && record.grant?.secret === command.secret);
  const decision = acquirePermit(candidatesOf(semaphore, busy), command, now, semaphore.floor);
  const { outcome } = decision.transition;

  if (repeated !== undefined) {
    // Re-delivery: the same grant answered again, nothing written.
    const [index, record] = repeated;
    expect(decision.key).toBeNull();
    expect(decision.transition.changed).toBe(false);
    expect(outcome).toMatchObject({
      ok: true,
      index,
      key: permitKey(SEMAPHORE, index),
      token: record.grant?.token,
      acquiredAt: record.grant?.acquiredAt,
      expiresAt: record.grant?.expiresAt,
      live: liveBefore,
    });
    return;
  }

  const free = Array.from({ length: command.limit }, (_, i) => i + 1).filter((index) => grantable(semaphore, index, command, busy, now));
  if (!outcome.ok) {
    // Full exactly when `limit` or more are live, or no permit 1..limit is grantable.
    expect(liveBefore >= command.limit || free.length === 0).toBe(true);
    expect(decision.key).toBeNull();
    expect(decision.transition.changed).toBe(false);
    const live = [...semaphore.records].filter(([, record]) => isLiveAt(record, now)).sort(([a], [b]) => a - b);
    expect(outcome.live.map((holder) => [holder.index, holder.token, holder.holder])).toEqual(
      live.map(([index, record]) => [index, record.grant?.token, record.grant?.holder]),
    );
    for (const index of outcome.unavailable) expect(isLiveAt(semaphore.records.get(index), now)).toBe(false);
    // nextAt is never later than the first moment a retry is granted by time alone (and null: never by time).
    const first = momentsFrom(semaphore, now).find((at) => grantsAt(semaphore, command, busy, at));
    const never = first === undefined && !grantsAt(semaphore, command, busy, now + 10_000_000);
    if (outcome.nextAt === null) expect(first === undefined && never, `nextAt null, but granted at ${first}`).toBe(true);
    else {
      expect(outcome.nextAt).toBeGreaterThanOrEqual(now);
      if (first !== undefined) expect(outcome.nextAt).toBeLessThanOrEqual(first);
    }
    return;
  }

  // Granted: fewer than `limit` were live, the permit was free, and it was the one available longest.
  expect(liveBefore).toBeLessThan(command.limit);
  expect(outcome.index).toBeGreaterThanOrEqual(1);
  expect(outcome.index).toBeLessThanOrEqual(command.limit);
  expect(free).toContain(outcome.index);
  const sinceOf = (index: number): number => {
    const record = before.get(index) ?? null;
    return availableSince(record === null ? null : { ...record, recoveryRequired: false }, { set: '', key: '', dueAt: 0 }) as number;
  };
  for (const other of free) {
    const [a, b] = [sinceOf(other), sinceOf(outcome.index)];
    expect(a > b || (a === b && other >= outcome.index), `permit ${other} (since ${a}) was available before ${outcome.index} (${b})`).toBe(
      true,
    );
  }
  expect(decision.key).toBe(permitKey(SEMAPHORE, outcome.index));
  expect(outcome).toMatchObject({ key: decision.key, semaphore: SEMAPHORE, limit: command.limit, live: liveBefore + 1, acquiredAt: now });
  // Tokens strictly rise across every permit of the semaphore (and above the store's floor).
  expect(outcome.token).toBeGreaterThan(semaphore.highest);
  expect(outcome.token).toBeGreaterThanOrEqual(semaphore.floor);
  // What claim would have answered on that record (previous ending, checkpoint), with the token it minted.
  const claimed = transitions.claim(
    before.get(outcome.index) ?? null,
    { ...claimFields(command), key: decision.key as string },
    now,
    outcome.token,
  );
  expect(decision.transition.record).toEqual(claimed.record);
  expect(outcome).toMatchObject(claimed.outcome);
  semaphore.records.set(outcome.index, decision.transition.record as LeaseRecord);
  semaphore.highest = outcome.token;
  semaphore.grants.push({ command, granted: outcome });
  // Never more than `limit` live after an acquire with that limit.
  expect(liveCount(semaphore)).toBeLessThanOrEqual(command.limit);
}

const fenceOf = ({ command, granted }: Semaphore['grants'][number]): Fence => ({
  key: granted.key,
  token: granted.token,
  secret: command.secret,
  holder: command.holder,
  runId: command.runId,
});

/** Applies a record-level operation on permit `index` (as a store applies it to the permit's key). */
function applyTo(semaphore: Semaphore, index: number, step: (record: LeaseRecord | null) => transitions.Transition<unknown>): void {
  const record = semaphore.records.get(index) ?? null;
  const next = step(record);
  if (!next.changed) return;
  if (next.record === null) {
    if (record !== null && record.token >= semaphore.floor) semaphore.floor = record.token + 1n;
    semaphore.records.delete(index);
  } else {
    semaphore.records.set(index, next.record);
    if (next.record.token > semaphore.highest) semaphore.highest = next.record.token;
  }
}

function run(ops: readonly Op[], check: (semaphore: Semaphore, op: Op) => void = () => undefined): Semaphore {
  const semaphore: Semaphore = { records: new Map(), floor: 0n, now: 1_000, grants: [], highest: 0n };
  const picked = (pick: number) => (semaphore.grants.length === 0 ? null : semaphore.grants[pick % semaphore.grants.length]!);
  for (const op of ops) {
    semaphore.now += op.dt;
    const { now } = semaphore;
    switch (op.kind) {
      case 'acquire': {
        const command: AcquirePermitCommand = {
          semaphore: SEMAPHORE,
          limit: op.limit,
          holder: op.holder,
          runId: `r${now}`,
          secret: freshSecret(),
          ttlMs: op.ttlMs,
          attributes: {},
          recovering: op.recovering,
        };
        checkedAcquire(semaphore, command, op.busy);
        break;
      }
      case 'redeliver': {
        const grant = picked(op.pick);
        if (grant !== null) checkedAcquire(semaphore, grant.command, []);
        break;
      }
      case 'release': {
        const grant = picked(op.pick);
        if (grant === null) break;
        const fence = fenceOf(grant);
        applyTo(semaphore, grant.granted.index, (record) =>
          transitions.release(
            record,
            {
              fence,
              ...(op.checkpoint ? { checkpointJson: '{"done":1}' } : {}),
              ...(op.holdMs === undefined ? {} : { holdMs: op.holdMs }),
            },
            now,
          ),
        );
        break;
      }
      case 'checkpoint': {
        const grant = picked(op.pick);
        if (grant !== null)
          applyTo(semaphore, grant.granted.index, (record) =>
            transitions.checkpoint(record, { fence: fenceOf(grant), json: '{"n":1}' }, now),
          );
        break;
      }
      case 'revoke': {
        // NOTE: the permit of a grant, checkpointed first or not (a revoke with requireRecovery blocks only a checkpoint).
        const grant = picked(op.pick);
        if (grant === null) break;
        const { index, key } = grant.granted;
        if (op.checkpointFirst)
          applyTo(semaphore, index, (record) => transitions.checkpoint(record, { fence: fenceOf(grant), json: '{"n":2}' }, now));
        applyTo(semaphore, index, (record) =>
          transitions.revoke(record, { key, reason: 'r', by: 'ops', requireRecovery: op.requireRecovery, expectedToken: null }, now),
        );
        break;
      }
      case 'remove':
        applyTo(semaphore, op.index, (record) =>
          transitions.remove(record, { key: permitKey(SEMAPHORE, op.index), force: true, expectedToken: null }, now),
        );
        break;
      case 'wait':
        break;
    }
    check(semaphore, op);
  }
  return semaphore;
}

describe('acquirePermit over random histories of a semaphore', () => {
  it('grants only below the limit, the free permit 1..limit available longest, tokens above every permit; full exactly when none is grantable, with a nextAt no later than the first grant by time', () => {
    fc.assert(
      fc.property(historyArb, (ops) => void run(ops)),
      { numRuns: scaled(1_000) },
    );
  });

  it('a re-delivered acquire answers the same grant while it is live, and changes nothing', () => {
    fc.assert(
      fc.property(historyArb, fc.nat(), (ops, pick) => {
        const semaphore = run(ops);
        const live = semaphore.grants.filter(({ granted }) => {
          const record = semaphore.records.get(granted.index);
          return isLiveAt(record, semaphore.now) && record?.grant?.secret !== undefined && record.grant.token === granted.token;
        });
        fc.pre(live.length > 0);
        const { command, granted } = live[pick % live.length]!;
        const records = new Map(semaphore.records);
        const again = acquirePermit(candidatesOf(semaphore, []), command, semaphore.now, semaphore.floor);
        expect(again.key).toBeNull();
        expect(again.transition.changed).toBe(false);
        expect(again.transition.outcome).toMatchObject({
          ok: true,
          key: granted.key,
          index: granted.index,
          token: granted.token,
          acquiredAt: granted.acquiredAt,
          expiresAt: granted.expiresAt,
        });
        expect(semaphore.records).toEqual(records);
      }),
      { numRuns: scaled(300) },
    );
  });

  it('after the limit is lowered, no acquire with the lower limit is granted until fewer than that many are live', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 5 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 5, maxLength: 5 }),
        (high, lowered, ttls) => {
          fc.pre(lowered < high);
          const ops: Op[] = Array.from({ length: high }, (_, i) => ({
            kind: 'acquire',
            limit: high,
            ttlMs: ttls[i] ?? 100,
            holder: 'w1',
            recovering: false,
            busy: [],
            dt: 1,
          }));
          const semaphore = run(ops);
          expect(semaphore.grants.map(({ granted }) => granted.index).sort()).toEqual(Array.from({ length: high }, (_, i) => i + 1));
          // Retry with the lower limit at every moment the records change: granted exactly once fewer than `lowered` are live.
          for (const at of momentsFrom(semaphore, semaphore.now)) {
            const command: AcquirePermitCommand = { ...semaphore.grants[0]!.command, limit: lowered, secret: freshSecret() };
            const outcome = acquirePermit(candidatesOf(semaphore, []), command, at, semaphore.floor).transition.outcome;
            expect(outcome.ok, `at ${at}: ${liveCount(semaphore, at)} live, limit ${lowered}`).toBe(liveCount(semaphore, at) < lowered);
            if (outcome.ok) expect(outcome.index).toBeLessThanOrEqual(lowered);
          }
        },
      ),
      { numRuns: scaled(200) },
    );
  });
});

describe('permit keys', () => {
  const nameArb = fc.string({ minLength: 1, maxLength: 20 }).filter((name) => {
    try {
      assertSemaphore(name, 1);
      return true;
    } catch {
      return false;
    }
  });

  it('permitOf(permitKey(name, i)) is (name, i) for every name a semaphore may have and every index 1..MAX_PERMITS', () => {
    fc.assert(
      fc.property(nameArb, fc.integer({ min: 1, max: MAX_PERMITS }), (name, index) => {
        expect(permitOf(permitKey(name, index))).toEqual({ semaphore: name, index });
      }),
      { numRuns: scaled(500) },
    );
  });

  it('a key permitOf accepts is exactly the permit key it names', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          nameArb.map((name) => `{${name}}:permit-`),
        ),
        fc.string({ maxLength: 5 }),
        (head, tail) => {
          const key = head + tail;
          const permit = permitOf(key);
          if (permit !== null) expect(permitKey(permit.semaphore, permit.index)).toBe(key);
        },
      ),
      { numRuns: scaled(500) },
    );
  });

  it.each([
    'pool',
    '{pool}',
    '{pool}:permit-',
    '{pool}:permit-0',
    '{pool}:permit-01',
    '{pool}:permit-1001',
    '{pool}:permit-1.5',
    '{pool}:permit--1',
    '{pool}:permit-1x',
    '{pool}:permit-1:more',
    'x{pool}:permit-1',
    '{}:permit-1',
    '{{pool}}:permit-1',
    '{po{ol}:permit-1',
    '{pool}:item-1',
    '{pool}:Permit-1',
  ])('refuses %j: not the shape of a permit key', (key) => {
    expect(permitOf(key)).toBeNull();
  });
});
