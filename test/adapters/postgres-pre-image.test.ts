/**
 * The Postgres adapter decides every outcome with the pure core on the pre-image its statement returns.
 * Renew, checkpoint, release and fenced writes return a narrow one (no acquired-at, checkpoint or pending
 * recovery); these properties hold them to it: every transition decides exactly as on the whole row, and
 * the whole-row pre-image of the other operations decodes to the row itself.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { decodePreImage, preImageColumnNames, type PreImageWidth } from '../../src/adapters/postgres/rows.js';
import { PRE_IMAGE_WIDTH } from '../../src/adapters/postgres/statements.js';
import * as transitions from '../../src/fence/transitions.js';
import type { LeaseRecord, QueuedWaiter } from '../../src/fence/types.js';
import { checkFence } from '../../src/fence/verdict.js';

/** Key-state values to set: a few names (one that sorts differently by code unit than by code point), set or removed. */
const keyStateValuesArb = fc.dictionary(
  fc.constantFrom('rev', 'tier', '\u{1F600}', '\uFF21'),
  fc.option(fc.constantFrom('1', '2'), { nil: null }),
  { maxKeys: 3 },
);
import {
  checkpointCommandArb,
  claimCommandArb,
  pendingRecoveryArb,
  presentedArb,
  reachedArb,
  recordArb,
  recoverCommandArb,
  releaseCommandArb,
  renewCommandArb,
  revokeCommandArb,
} from '../fence/arbitraries.js';

/** What the statement's `json_build_array` holds for `record`'s column `name` (tokens as text, times as ms). */
function cell(record: LeaseRecord, name: string, presented: string | null): unknown {
  const { grant, ending, checkpoint } = record;
  const text = (value: bigint | undefined) => (value === undefined ? null : value.toString());
  const cells: Record<string, unknown> = {
    key: record.key,
    token: record.token.toString(),
    holder: grant?.holder ?? null,
    run_id: grant?.runId ?? null,
    secret_matches: grant !== null && grant.secret === presented,
    expires_at: grant?.expiresAt ?? null,
    attributes: grant?.attributes ?? null,
    ending_kind: ending?.kind ?? null,
    ending_token: text(ending?.token),
    ending_holder: ending?.holder ?? null,
    ending_run_id: ending?.runId ?? null,
    ending_at: ending?.at ?? null,
    ending_reason: ending?.reason ?? null,
    ending_by: ending?.by ?? null,
    ending_change: ending?.change ?? null,
    state: record.state ?? {},
    held_until: record.heldUntil ?? null,
    acquired_at: grant?.acquiredAt ?? null,
    checkpoint_json: checkpoint?.json ?? null,
    checkpoint_token: text(checkpoint?.token),
    checkpoint_written_at: checkpoint?.writtenAt ?? null,
    recovery_required: record.recoveryRequired,
    waiters:
      (record.waiters ?? []).length === 0
        ? null
        : record.waiters.map((waiter) => ({ w: waiter.waiterId, h: waiter.holder, a: waiter.arrivedAt, e: waiter.expiresAt })),
  };
  if (!(name in cells)) throw new Error(`the test does not know column ${name}`);
  return cells[name];
}

/**
 * The record as a statement of `width` returns it when `presented` is the secret the operation presents
 * (the row's secret hash is never returned, only whether it matched), decoded as the adapter decodes it.
 */
function through(width: PreImageWidth, record: LeaseRecord | null, now: number, presented: string | null): LeaseRecord | null {
  const columns = preImageColumnNames(width);
  const cells = record === null ? columns.map(() => null) : columns.map((name) => cell(record, name, presented));
  const decoded = decodePreImage(JSON.stringify([now, false, ...cells]), presented);
  expect(decoded.now).toBe(now);
  return decoded.record;
}

/** Both the outcome and whether the row changes agree between the whole row and the statement's pre-image. */
function decidesAlike<O>(
  width: PreImageWidth,
  record: LeaseRecord | null,
  now: number,
  presented: string | null,
  decide: (record: LeaseRecord | null) => transitions.Transition<O>,
): void {
  const whole = decide(record);
  const narrow = decide(through(width, record, now, presented));
  expect({ changed: narrow.changed, outcome: narrow.outcome }).toEqual({ changed: whole.changed, outcome: whole.outcome });
}

/** Waiter ids: a small pool, so that claims name queued waiters and new ones alike. */
const waiterIdArb = fc.constantFrom('wa', 'wb', 'wc', 'wd', 'we');

/** A queue of waiters (unique ids, in arrival order), each expiring around `now`. */
const waitersArb = (now: number): fc.Arbitrary<QueuedWaiter[]> =>
  fc
    .uniqueArray(
      fc.record({
        waiterId: waiterIdArb,
        holder: fc.constantFrom('w1', 'w2', 'w3'),
        arrivedAt: fc.integer({ min: now - 5_000, max: now }),
        expiresAt: fc.integer({ min: now - 1_000, max: now + 5_000 }),
      }),
      { selector: (waiter) => waiter.waiterId, maxLength: 5 },
    )
    .map((waiters) => waiters.sort((a, b) => a.arrivedAt - b.arrivedAt));

/** A claim's queue options: none, waiting (its waiter first, then others), or jumping the queue. */
const queueOptionsArb = fc.record(
  {
    queue: fc.record({
      waiterIds: fc.uniqueArray(waiterIdArb, { minLength: 1, maxLength: 4 }),
      ttlMs: fc.integer({ min: 1, max: 10_000 }),
    }),
    jumpQueue: fc.boolean(),
  },
  { requiredKeys: [] },
);

describe('postgres pre-image', () => {
  test.prop([
    fc.oneof(reachedArb, pendingRecoveryArb).chain((reached) => fc.tuple(fc.constant(reached), waitersArb(reached.now))),
    claimCommandArb,
    queueOptionsArb,
    fc.uniqueArray(waiterIdArb, { maxLength: 3 }),
    fc.nat({ max: 2_000 }),
    fc.option(fc.nat({ max: 3_000 }), { nil: undefined }),
  ])(
    'a record with waiters: claims (waiting, plain, jumping the queue), dequeue and inspect decide on their statement pre-images as on the whole row',
    ([reached, waiters], plain, options, leaving, dt, holdMs) => {
      const now = reached.now + dt;
      const base = reached.record === null ? null : { ...reached.record, waiters };
      const held = base === null || holdMs === undefined ? base : { ...base, heldUntil: now + holdMs - 1_000 };
      for (const record of [base, held]) {
        const claim = { ...plain, ...options };
        decidesAlike(PRE_IMAGE_WIDTH.claim, record, now, claim.secret, (from) => transitions.claim(from, claim, now));
        decidesAlike('queue', record, now, null, (from) => transitions.dequeue(from, { key: plain.key, waiterIds: leaving }, now));
        const inspected = transitions.inspect(through(PRE_IMAGE_WIDTH.inspect, record, now, null), plain.key, now);
        expect(inspected).toEqual(transitions.inspect(record, plain.key, now));
        // NOTE: and after the claim wrote the queue, a claim by its first waiter, and the holder's own re-delivery.
        const after = transitions.claim(record, claim, now).record;
        const first = after?.waiters[0]?.waiterId;
        if (first !== undefined) {
          const next = { ...plain, secret: 'next-secret', queue: { waiterIds: [first], ttlMs: 1_000 } };
          decidesAlike(PRE_IMAGE_WIDTH.claim, after, now + 1, next.secret, (from) => transitions.claim(from, next, now + 1));
        }
        decidesAlike(PRE_IMAGE_WIDTH.claim, after, now, claim.secret, (from) => transitions.claim(from, claim, now));
      }
    },
  );

  test.prop([recordArb, fc.integer({ min: 0, max: 2_000_000 })])(
    'a whole-row pre-image decodes to the row itself, every field and bigint token exact',
    (record, now) => {
      // NOTE: submissions are never in a pre-image (their own table); a record without state has the empty one.
      const stored = { ...({ state: {}, heldUntil: null, waiters: [] } as object), ...record, submissions: [] };
      expect(through('record', record, now, record.grant?.secret ?? null)).toEqual(stored);
      expect(through('record', null, now, null)).toBeNull();
    },
  );

  test.prop([presentedArb.chain((presented) => fc.tuple(fc.constant(presented), renewCommandArb(fc.constant(presented.fence))))])(
    'renew decides on its statement pre-image as on the whole row',
    ([{ reached, now }, command]) =>
      decidesAlike(PRE_IMAGE_WIDTH.renew, reached.record, now, command.fence.secret, (record) => transitions.renew(record, command, now)),
  );

  test.prop([presentedArb.chain((presented) => fc.tuple(fc.constant(presented), checkpointCommandArb(fc.constant(presented.fence))))])(
    'checkpoint decides on its statement pre-image as on the whole row',
    ([{ reached, now }, command]) =>
      decidesAlike(PRE_IMAGE_WIDTH.checkpoint, reached.record, now, command.fence.secret, (record) =>
        transitions.checkpoint(record, command, now),
      ),
  );

  test.prop([presentedArb.chain((presented) => fc.tuple(fc.constant(presented), releaseCommandArb(fc.constant(presented.fence))))])(
    'release (first or repeated) decides on its statement pre-image as on the whole row',
    ([{ reached, now }, command]) => {
      decidesAlike(PRE_IMAGE_WIDTH.release, reached.record, now, command.fence.secret, (record) =>
        transitions.release(record, command, now),
      );
      const released = transitions.release(reached.record, command, now).record;
      decidesAlike(PRE_IMAGE_WIDTH.release, released, now + 1, command.fence.secret, (record) =>
        transitions.release(record, command, now + 1),
      );
    },
  );

  test.prop([
    presentedArb,
    fc.option(fc.dictionary(fc.constantFrom('model', 'region'), fc.constantFrom('v1', 'v2'), { maxKeys: 2 }), { nil: undefined }),
  ])(
    'a fenced write checks its fence on its statement pre-image as on the whole row (with and without required attributes)',
    ({ reached, fence, now }, attributes) => {
      const required = attributes === undefined ? fence : { ...fence, attributes };
      const whole = checkFence(reached.record, required, now);
      expect(checkFence(through(PRE_IMAGE_WIDTH.lockShared, reached.record, now, fence.secret), required, now)).toEqual(whole);
    },
  );

  test.prop([fc.oneof(reachedArb, pendingRecoveryArb), claimCommandArb, fc.nat({ max: 2_000 })])(
    'claim, revoke and inspect decide on their statement pre-image as on the whole row',
    (reached, claim, dt) => {
      const now = reached.now + dt;
      decidesAlike(PRE_IMAGE_WIDTH.claim, reached.record, now, claim.secret, (record) => transitions.claim(record, claim, now));
      fc.assert(
        fc.property(revokeCommandArb, (revoke) =>
          decidesAlike(PRE_IMAGE_WIDTH.revoke, reached.record, now, null, (record) => transitions.revoke(record, revoke, now)),
        ),
        { numRuns: 5 },
      );
      const inspected = transitions.inspect(through(PRE_IMAGE_WIDTH.inspect, reached.record, now, null), claim.key, now);
      expect(inspected).toEqual(transitions.inspect(reached.record, claim.key, now));
    },
  );

  test.prop([pendingRecoveryArb, claimCommandArb, fc.constantFrom('resume' as const, 'discard' as const), fc.nat({ max: 3 })])(
    'recover (by the recovering grant or a stale one) decides on its statement pre-image as on the whole row',
    (reached, claim, action, pick) => {
      const claimed = transitions.claim(reached.record, { ...claim, recovering: true }, reached.now);
      const recovering = claimed.outcome.ok
        ? [{ key: claim.key, token: claimed.outcome.token, secret: claim.secret, holder: claim.holder, runId: claim.runId }]
        : [];
      const fences = [...recovering, ...reached.fences];
      const fence = fences[pick % fences.length]!;
      decidesAlike(PRE_IMAGE_WIDTH.recover, claimed.record, reached.now, fence.secret, (record) =>
        transitions.recover(record, { fence, action }, reached.now),
      );
    },
  );

  test.prop([presentedArb.chain((presented) => fc.tuple(fc.constant(presented), recoverCommandArb(fc.constant(presented.fence))))])(
    'recover in any reachable state decides on its statement pre-image as on the whole row',
    ([{ reached, now }, command]) =>
      decidesAlike(PRE_IMAGE_WIDTH.recover, reached.record, now, command.fence.secret, (record) =>
        transitions.recover(record, command, now),
      ),
  );

  test.prop([
    fc.oneof(reachedArb, pendingRecoveryArb),
    claimCommandArb,
    keyStateValuesArb,
    fc.option(fc.oneof(fc.constant(null), fc.nat({ max: 5_000 })), { nil: undefined }),
    fc.nat({ max: 2_000 }),
  ])(
    'setKeyState, remove, a claim with expect and a held-back key decide on their statement pre-images as on the whole row',
    (reached, claim, values, holdMs, dt) => {
      const now = reached.now + dt;
      const command = { key: claim.key, values, by: 'writer', ...(holdMs === undefined ? {} : { holdMs }) };
      decidesAlike(PRE_IMAGE_WIDTH.setKeyState, reached.record, now, null, (record) => transitions.setKeyState(record, command, now));
      const set = transitions.setKeyState(reached.record, command, now).record;
      for (const force of [false, true]) {
        decidesAlike(PRE_IMAGE_WIDTH.remove, set, now, null, (record) =>
          transitions.remove(record, { key: claim.key, force, expectedToken: null }, now),
        );
      }
      const expected = Object.fromEntries(Object.entries(values).slice(0, 1));
      for (const at of [now, now + 1, now + 6_000]) {
        decidesAlike(PRE_IMAGE_WIDTH.claim, set, at, claim.secret, (record) =>
          transitions.claim(record, { ...claim, expect: expected }, at),
        );
        decidesAlike(PRE_IMAGE_WIDTH.claim, set, at, claim.secret, (record) => transitions.claim(record, claim, at));
      }
      const inspected = transitions.inspect(through(PRE_IMAGE_WIDTH.inspect, set, now, null), claim.key, now);
      expect(inspected).toEqual(transitions.inspect(set, claim.key, now));
    },
  );

  test.prop([presentedArb, keyStateValuesArb])(
    'a fence ended by a key-state change is refused state-changed on its statement pre-image as on the whole row',
    ({ reached, fence, now }, values) => {
      const set = transitions.setKeyState(reached.record, { key: fence.key, values, by: 'writer' }, now).record;
      expect(checkFence(through(PRE_IMAGE_WIDTH.lockShared, set, now, fence.secret), fence, now)).toEqual(checkFence(set, fence, now));
      decidesAlike(PRE_IMAGE_WIDTH.renew, set, now, fence.secret, (record) => transitions.renew(record, { fence, ttlMs: 1_000 }, now));
    },
  );
});
