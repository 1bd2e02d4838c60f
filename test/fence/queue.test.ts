/**
 * The pure rules of a key's queue of waiting claims (`fence/queue.ts`, `transitions.claim`, `transitions.dequeue`):
 * first come, first served whatever order the waiters ask in, a claim that does not wait never goes first (and
 * writes nothing), a place that expired never blocks, the same attempt delivered twice changes nothing more, the
 * queue never passes its bound.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { ClaimCommand } from '../../src/fence/operations.js';
import { liveWaiters, MAX_WAITER_IDS, MAX_WAITERS } from '../../src/fence/queue.js';
import * as transitions from '../../src/fence/transitions.js';
import type { LeaseRecord } from '../../src/fence/types.js';
import { recordArb } from './arbitraries.js';

const KEY = 'job:42';
const PLACE_TTL_MS = 10_000;

let secrets = 0;
function claimOf(holder: string, waiterIds: readonly string[] | null, extra: Partial<ClaimCommand> = {}): ClaimCommand {
  return {
    key: KEY,
    holder,
    runId: null,
    secret: `secret-${++secrets}`,
    ttlMs: 1_000,
    attributes: {},
    recovering: false,
    ...(waiterIds === null ? {} : { queue: { waiterIds, ttlMs: PLACE_TTL_MS } }),
    ...extra,
  };
}

/** Applies `command` at `now` to `record` and returns the record after it and the outcome. */
function apply(record: LeaseRecord | null, command: ClaimCommand, now: number) {
  const { record: next, changed, outcome } = transitions.claim(record, command, now);
  return { record: changed ? next : record, outcome, changed };
}

describe('a key queue', () => {
  test.prop([
    fc
      .integer({ min: 2, max: 6 })
      .chain((n) =>
        fc.tuple(fc.constant(n), fc.array(fc.shuffledSubarray([...Array(n).keys()], { minLength: n }), { minLength: n, maxLength: n })),
      ),
  ])(
    'waiters are granted in arrival order whatever order they ask in after each release, and a claim that does not wait never goes first',
    ([n, askOrders]) => {
      let now = 1_000;
      const held = claimOf('holder', null);
      let { record } = apply(null, held, now);
      for (let i = 0; i < n; i += 1) {
        now += 1;
        const queued = apply(record, claimOf(`w${i}`, [`id-${i}`]), now);
        expect(queued.outcome).toMatchObject({ ok: false, reason: 'held' });
        record = queued.record;
      }
      expect(record?.waiters.map((waiter) => waiter.waiterId)).toEqual([...Array(n).keys()].map((i) => `id-${i}`));
      let grant = { command: held, token: record?.token ?? 0n };
      const granted: number[] = [];
      for (const order of askOrders) {
        now += 1;
        const released = transitions.release(
          record,
          { fence: { key: KEY, token: grant.token, secret: grant.command.secret, holder: grant.command.holder, runId: null } },
          now,
        );
        expect(released.outcome.ok).toBe(true);
        record = released.record;
        const plain = apply(record, claimOf('plain', null), now);
        if (granted.length < n) {
          expect(plain.outcome).toMatchObject({ ok: false, reason: 'queued', position: null, waiting: n - granted.length });
          expect(plain.changed).toBe(false);
        }
        let winner: number | null = null;
        for (const i of order.filter((w) => !granted.includes(w))) {
          const command = claimOf(`w${i}`, [`id-${i}`]);
          const attempt = apply(record, command, now);
          record = attempt.record;
          if (attempt.outcome.ok) {
            expect(winner).toBeNull();
            winner = i;
            grant = { command, token: attempt.outcome.token };
          }
        }
        if (winner === null) break;
        granted.push(winner);
      }
      expect(granted).toEqual([...Array(n).keys()]);
      expect(record?.waiters).toEqual([]);
    },
  );

  test.prop([recordArb, fc.integer({ min: 0, max: 2_000_000 })])(
    'a claim that does not wait is refused queued exactly while a live waiter is first and the key is claimable, and then writes nothing',
    (record, now) => {
      const live = liveWaiters(record.waiters, now);
      const result = transitions.claim(record, claimOf('plain', null), now);
      if (result.outcome.ok) expect(live.length === 0 || record.recoveryRequired).toBe(true);
      if (!result.outcome.ok && result.outcome.reason === 'queued') {
        expect(result.changed).toBe(false);
        expect(result.outcome).toMatchObject({ waiting: live.length, position: null, first: { holder: live[0]?.holder } });
      }
      if (live.length === 0) expect(result.outcome.ok || result.outcome.reason !== 'queued').toBe(true);
    },
  );

  test.prop([recordArb, fc.integer({ min: 0, max: 2_000_000 }), fc.constantFrom('q1', 'q2', 'q9')])(
    'the same waiting claim delivered twice answers the same and leaves the same queue (re-delivery is safe)',
    (record, now, id) => {
      const command = claimOf('w', [id]);
      const once = transitions.claim(record, command, now);
      const twice = transitions.claim(once.changed ? once.record : record, command, now);
      expect(twice.outcome).toEqual(once.outcome);
      const after = (twice.changed ? twice.record : once.changed ? once.record : record)?.waiters;
      expect(after).toEqual((once.changed ? once.record : record)?.waiters);
    },
  );

  test.prop([
    recordArb,
    fc.integer({ min: 0, max: 2_000_000 }),
    fc.uniqueArray(fc.constantFrom<string>('q1', 'q2', 'q3', 'q4', 'q5'), { minLength: 1 }),
  ])(
    'a dequeue takes exactly the named live waiters out, keeps the order of the others, and says freed only when the first left a claimable key',
    (record, now, ids) => {
      const live = liveWaiters(record.waiters, now);
      const { record: after, outcome, changed } = transitions.dequeue(record, { key: KEY, waiterIds: ids }, now);
      const kept = live.filter((waiter) => !ids.includes(waiter.waiterId));
      expect(outcome.removed).toBe(live.length - kept.length);
      expect(changed).toBe(outcome.removed > 0);
      if (changed) expect(after?.waiters).toEqual(kept);
      const grantLive = record.grant !== null && (record.grant.expiresAt === null || now < record.grant.expiresAt);
      const heldBack = record.heldUntil !== null && now < record.heldUntil;
      const firstLeft = live[0] !== undefined && ids.includes(live[0].waiterId);
      expect(outcome.freed).toBe(firstLeft && !grantLive && !heldBack && kept.length > 0);
    },
  );

  test('a queue never passes its bound; a place that expired never blocks the key', () => {
    let now = 1_000;
    const held = claimOf('holder', null);
    let { record } = apply(null, held, now);
    for (let batch = 0; batch * MAX_WAITER_IDS < MAX_WAITERS + MAX_WAITER_IDS; batch += 1) {
      const ids = Array.from({ length: MAX_WAITER_IDS }, (_, i) => `b${batch}-${i}`);
      record = apply(record, claimOf(`p${batch}`, ids), now).record;
    }
    expect(record?.waiters.length).toBe(MAX_WAITERS);
    now += PLACE_TTL_MS;
    expect(liveWaiters(record?.waiters ?? [], now)).toEqual([]);
    const released = transitions.release(
      record,
      { fence: { key: KEY, token: record?.token ?? 0n, secret: held.secret, holder: 'holder', runId: null } },
      now,
    );
    const plain = apply(released.record, claimOf('plain', null), now);
    expect(plain.outcome.ok).toBe(true);
    expect(plain.record?.waiters).toEqual([]);
  });
});
