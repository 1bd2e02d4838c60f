/**
 * Properties of the waiting schedule (pure, time as an argument): never negative, never past the deadline,
 * never later than the holder's expiry plus the largest jitter, never before that expiry when notifications
 * cover releases, bounded by pollMs / recheckMs, and attempts in a simulated wait move forward in time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nextAttemptDelay, type AttemptPlan } from '../../src/waiting/schedule.js';

const ms = (max: number): fc.Arbitrary<number> => fc.double({ min: 0, max, noNaN: true });

const plans: fc.Arbitrary<AttemptPlan> = fc.record({
  untilExpiryMs: fc.option(fc.double({ min: -1_000, max: 1e7, noNaN: true }), { nil: null }),
  sinceReplyMs: ms(1e7),
  remainingMs: ms(1e7),
  watching: fc.boolean(),
  jitter: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  jitterMs: ms(1_000),
  pollMs: fc.double({ min: 1, max: 1e5, noNaN: true }),
  recheckMs: fc.double({ min: 1, max: 1e6, noNaN: true }),
});

describe('nextAttemptDelay', () => {
  it('is never negative and never at or past the deadline', () => {
    fc.assert(
      fc.property(plans, (plan) => {
        const delay = nextAttemptDelay(plan);
        if (delay !== null) expect(delay >= 0 && delay < plan.remainingMs).toBe(true);
      }),
    );
  });

  it('skips an attempt only when it would fall at or after the deadline', () => {
    fc.assert(
      fc.property(plans, (plan) => {
        if (nextAttemptDelay(plan) !== null) return;
        const unbounded = nextAttemptDelay({ ...plan, remainingMs: Number.POSITIVE_INFINITY });
        expect(unbounded === null || unbounded >= plan.remainingMs).toBe(true);
      }),
    );
  });

  it('is never later than the expiry plus the largest jitter', () => {
    fc.assert(
      fc.property(plans, (plan) => {
        const delay = nextAttemptDelay(plan);
        if (delay === null || plan.untilExpiryMs === null) return;
        expect(delay).toBeLessThanOrEqual(Math.max(0, Math.max(0, plan.untilExpiryMs) + plan.jitterMs - plan.sinceReplyMs) + 1e-6);
      }),
    );
  });

  it('with notifications, never tries before the expiry (a release is announced, an early claim is wasted)', () => {
    fc.assert(
      fc.property(plans, (plan) => {
        const delay = nextAttemptDelay({ ...plan, watching: true });
        if (delay === null || plan.untilExpiryMs === null) return;
        expect(plan.sinceReplyMs + delay).toBeGreaterThanOrEqual(plan.untilExpiryMs - 1e-6);
      }),
    );
  });

  it('is bounded by pollMs without notifications, by recheckMs with them when no expiry is known', () => {
    fc.assert(
      fc.property(plans, (plan) => {
        const polled = nextAttemptDelay({ ...plan, watching: false });
        if (polled !== null) expect(polled).toBeLessThanOrEqual(plan.pollMs);
        const rechecked = nextAttemptDelay({ ...plan, watching: true, untilExpiryMs: null });
        if (rechecked !== null) expect(rechecked).toBeLessThanOrEqual(plan.recheckMs);
      }),
    );
  });

  it('in a simulated wait on a lease expiring at E: attempts move forward, and the grant comes by E + round trip + jitter', () => {
    fc.assert(
      fc.property(
        fc.record({
          expiry: ms(10_000),
          roundTrip: ms(50),
          watching: fc.boolean(),
          jitterMs: ms(100),
          pollMs: fc.double({ min: 5, max: 2_000, noNaN: true }),
        }),
        fc.infiniteStream(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
        ({ expiry, roundTrip, watching, jitterMs, pollMs }, jitters) => {
          const deadline = expiry + 10_000;
          const attempts: number[] = [];
          const draws = jitters[Symbol.iterator]();
          let at = 0;
          for (;;) {
            attempts.push(at);
            if (at >= expiry) break;
            // NOTE: the store applies the claim at `at` (its now) and the reply arrives a round trip later.
            const repliedAt = at + roundTrip;
            const plan = {
              untilExpiryMs: expiry - at,
              sinceReplyMs: 0,
              remainingMs: deadline - repliedAt,
              watching,
              jitter: draws.next().value as number,
              jitterMs,
              pollMs,
              recheckMs: 1_000,
            };
            const delay = nextAttemptDelay(plan);
            expect(delay).not.toBeNull();
            at = repliedAt + (delay as number);
          }
          for (let index = 1; index < attempts.length; index += 1)
            expect(attempts[index]).toBeGreaterThanOrEqual(attempts[index - 1] as number);
          expect(at).toBeLessThanOrEqual(expiry + roundTrip + jitterMs + 1e-6);
          if (watching) expect(attempts.length).toBeLessThanOrEqual(2);
          else expect(attempts.length).toBeLessThanOrEqual(Math.ceil(expiry / pollMs) + 2);
        },
      ),
    );
  });
});
