/**
 * The semaphore model (issue 25): random sequences of acquires (limits 1 to 3, raised and lowered at will, with or
 * without expiry, recovering), re-deliveries, releases (with a hold, keeping, clearing or setting the checkpoint),
 * checkpoints, renewals, revokes (with and without `requireRecovery`) and expiries on the permits of one fresh
 * semaphore, run against the store and against a mirror of its permit records kept with the pure core
 * (`fence/permits.ts#acquirePermit`, `fence/transitions.ts`) at the store's own times. Every answer must be the
 * core's for the records as they were, field by field (which permit, its token, previous, checkpoint, the live
 * holders, the unavailable permits, nextAt), and every permit record must then be the mirror's.
 */
import fc from 'fast-check';
import { acquirePermit, permitKey, type AcquirePermitCommand, type PermitCandidate } from '../fence/permits.js';
import * as transitions from '../fence/transitions.js';
import type { Fence, LeaseRecord, StoreTime } from '../fence/types.js';
import { newSecret } from '../secret.js';
import type { Store } from '../store.js';
import { expectMatch, expectSame } from './assertions.js';
import type { StoreHarness } from './harness.js';

/** One step of a semaphore's history; `pick` chooses among the grants made so far, `index` a permit 1..3. */
export type PermitStep =
  | { readonly kind: 'acquire'; readonly worker: number; readonly limit: number; readonly forever: boolean; readonly recovering: boolean }
  | { readonly kind: 'redeliver'; readonly pick: number }
  | { readonly kind: 'release'; readonly pick: number; readonly hold: boolean; readonly checkpoint: 'keep' | 'clear' | 'set' }
  | { readonly kind: 'checkpoint'; readonly pick: number }
  | { readonly kind: 'renew'; readonly pick: number }
  | { readonly kind: 'revoke'; readonly index: number; readonly requireRecovery: boolean }
  | { readonly kind: 'expire'; readonly index: number }
  | { readonly kind: 'advance'; readonly ms: number };

const pickArb = fc.nat({ max: 11 });
const indexArb = fc.integer({ min: 1, max: 3 });

/** Histories of up to 30 steps, acquires the most frequent. */
export const permitStepsArb: fc.Arbitrary<PermitStep[]> = fc.array(
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('acquire' as const),
        worker: fc.nat({ max: 3 }),
        limit: fc.integer({ min: 1, max: 3 }),
        forever: fc.constantFrom(false, false, false, true),
        recovering: fc.constantFrom(false, false, false, true),
      }),
    },
    fc.record({ kind: fc.constant('redeliver' as const), pick: pickArb }),
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('release' as const),
        pick: pickArb,
        hold: fc.constantFrom(false, false, true),
        checkpoint: fc.constantFrom('keep' as const, 'clear' as const, 'set' as const),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('checkpoint' as const), pick: pickArb }) },
    fc.record({ kind: fc.constant('renew' as const), pick: pickArb }),
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('revoke' as const), index: indexArb, requireRecovery: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('expire' as const), index: indexArb }) },
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 150 }) }),
  ),
  { maxLength: 30 },
);

/** TTLs and holds of a run: short on a controlled clock (advance passes them), else never passing in a run. */
const CLOCKED = { ttlMs: 100, holdMs: 120 };
const SERVER = { ttlMs: 120_000, holdMs: 3_600_000 };

/**
 * A value with every number rounded to the microsecond (a store may return fractional epoch milliseconds whose
 * last bits differ from the core's sum), bigints and everything else as they are.
 */
function rounded(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? Math.round(value * 1000) / 1000 : value;
  if (Array.isArray(value)) return value.map(rounded);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, rounded(item)]));
  return value;
}

/** The mirror of one semaphore's permit records, and the grants made so far. */
interface Mirror {
  readonly records: Map<number, LeaseRecord>;
  readonly grants: { readonly command: AcquirePermitCommand; readonly index: number; readonly token: bigint }[];
}

/** Runs `steps` on a fresh semaphore of the harness's store and on the mirror, comparing after every step. */
export async function runPermitModel(harness: StoreHarness<Store>, steps: readonly PermitStep[]): Promise<void> {
  const { store } = harness;
  if (store.acquirePermit === undefined) throw new Error('the semaphore model needs a store with acquirePermit');
  const clocked = harness.advanceClock !== null;
  const { ttlMs, holdMs } = clocked ? CLOCKED : SERVER;
  const semaphore = harness.freshKey('sem').replace(/[{}]/g, '_');
  const mirror: Mirror = { records: new Map(), grants: [] };
  const picked = (pick: number) => (mirror.grants.length === 0 ? null : (mirror.grants[pick % mirror.grants.length] ?? null));
  const fenceOf = (grant: Mirror['grants'][number]): Fence => ({
    key: permitKey(semaphore, grant.index),
    token: grant.token,
    secret: grant.command.secret,
    holder: grant.command.holder,
    runId: grant.command.runId,
  });
  /** Applies `step` of the core to permit `index`'s mirror record at `now`; answers its outcome. */
  const mirrored = <O>(
    index: number,
    now: StoreTime,
    step: (record: LeaseRecord | null, now: StoreTime) => transitions.Transition<O>,
  ): O => {
    const next = step(mirror.records.get(index) ?? null, now);
    if (next.changed) {
      if (next.record === null) mirror.records.delete(index);
      else mirror.records.set(index, next.record);
    }
    return next.outcome;
  };
  /** The store's answer matches the core's (`what` names the step in a failure). */
  const expectAnswer = (actual: unknown, expected: unknown, what: string): void =>
    expectMatch(rounded(actual), rounded(expected), `${what} answered (expected: the core's answer)`);
  /** The same for an ordinary operation on a permit key: whether it applied, why not, what it says of the key. */
  const expectVerdict = (actual: object, expected: object, what: string): void => {
    const basics = (outcome: object) =>
      Object.fromEntries(
        Object.entries(outcome).filter(([name]) =>
          ['ok', 'reason', 'alreadyReleased', 'recoveryRequired', 'token', 'expiresAt'].includes(name),
        ),
      );
    expectAnswer(basics(actual), basics(expected), what);
  };

  const acquire = async (command: AcquirePermitCommand, what: string): Promise<void> => {
    const outcome = await store.acquirePermit!(command);
    const candidates: PermitCandidate[] = [...mirror.records].map(([index, record]) => ({ index, record, busy: false }));
    // NOTE: the store's token as the floor: a store may mint above the core's `1 + the highest` (a floor of its own),
    // never below it; the core then answers exactly that token, or a higher one the store should have minted.
    const decision = acquirePermit(candidates, command, outcome.now, outcome.ok ? outcome.token : 0n);
    expectAnswer(outcome, decision.transition.outcome, what);
    const { outcome: expected } = decision.transition;
    if (decision.key !== null && decision.transition.record !== null && expected.ok) {
      mirror.records.set(expected.index, decision.transition.record);
      mirror.grants.push({ command, index: expected.index, token: expected.token });
    }
  };

  for (const [number, step] of steps.entries()) {
    const what = `step ${number + 1} ${JSON.stringify(step)}`;
    switch (step.kind) {
      case 'acquire':
        await acquire(
          {
            semaphore,
            limit: step.limit,
            holder: `w${step.worker}`,
            runId: `r${number}`,
            secret: newSecret(),
            ttlMs: step.forever ? null : ttlMs,
            attributes: {},
            recovering: step.recovering,
          },
          what,
        );
        break;
      case 'redeliver': {
        const grant = picked(step.pick);
        if (grant !== null) await acquire(grant.command, what);
        break;
      }
      case 'release': {
        const grant = picked(step.pick);
        if (grant === null) break;
        const command = {
          fence: fenceOf(grant),
          ...(step.checkpoint === 'keep' ? {} : { checkpointJson: step.checkpoint === 'clear' ? null : `{"released":${number}}` }),
          ...(step.hold ? { holdMs } : {}),
        };
        const outcome = await store.release(command);
        expectVerdict(
          outcome,
          mirrored(grant.index, outcome.now, (record, now) => transitions.release(record, command, now)),
          what,
        );
        break;
      }
      case 'checkpoint': {
        const grant = picked(step.pick);
        if (grant === null) break;
        const command = { fence: fenceOf(grant), json: `{"step":${number}}` };
        const outcome = await store.checkpoint(command);
        expectVerdict(
          outcome,
          mirrored(grant.index, outcome.now, (record, now) => transitions.checkpoint(record, command, now)),
          what,
        );
        break;
      }
      case 'renew': {
        const grant = picked(step.pick);
        if (grant === null) break;
        const command = { fence: fenceOf(grant), ttlMs: grant.command.ttlMs };
        const outcome = await store.renew(command);
        expectVerdict(
          outcome,
          mirrored(grant.index, outcome.now, (record, now) => transitions.renew(record, command, now)),
          what,
        );
        break;
      }
      case 'revoke': {
        const command = {
          key: permitKey(semaphore, step.index),
          reason: 'model',
          by: 'ops',
          requireRecovery: step.requireRecovery,
          expectedToken: null,
        };
        const outcome = await store.revoke(command);
        expectVerdict(
          outcome,
          mirrored(step.index, outcome.now, (record, now) => transitions.revoke(record, command, now)),
          what,
        );
        break;
      }
      case 'expire': {
        const key = permitKey(semaphore, step.index);
        const grant = mirror.records.get(step.index)?.grant;
        if (grant == null || grant.expiresAt === null) break;
        await harness.expireNow(key);
        // NOTE: a server's hook moves the grant's expiry to its now; the memory harness moves its clock instead.
        const seen = await store.inspect(key);
        if (seen.grant !== null && seen.grant.token === grant.token && seen.grant.expiresAt !== null) {
          const record = mirror.records.get(step.index) as LeaseRecord;
          mirror.records.set(step.index, { ...record, grant: { ...grant, expiresAt: seen.grant.expiresAt } });
        }
        break;
      }
      case 'advance':
        harness.advanceClock?.(step.ms);
        break;
    }
    // Every permit record is the mirror's.
    for (const [index, record] of mirror.records) {
      const seen = await store.inspect(permitKey(semaphore, index));
      expectMatch(
        {
          exists: seen.exists,
          token: seen.token,
          recoveryRequired: seen.recoveryRequired,
          grant: seen.grant === null ? null : { token: seen.grant.token, holder: seen.grant.holder },
        },
        {
          exists: true,
          token: record.token,
          recoveryRequired: record.recoveryRequired,
          grant: record.grant === null ? null : { token: record.grant.token, holder: record.grant.holder },
        },
        `permit ${index} (store inspect) after ${what}`,
      );
      if (clocked)
        expectSame(
          seen.heldUntil,
          record.heldUntil !== null && seen.now < record.heldUntil ? record.heldUntil : null,
          `permit ${index} heldUntil after ${what}`,
        );
    }
  }
}

/** What the semaphore model states; a failure report starts with it. */
export const PERMIT_MODEL_PROPERTY =
  "every semaphore answer is the core's for the permit records as they were, and leaves them as the core says";

/** The semaphore model property over the harness `harnessOf()` returns when a run starts (one fresh semaphore per run). */
export function permitModelProperty(harnessOf: () => StoreHarness<Store>): fc.IAsyncPropertyWithHooks<[PermitStep[]]> {
  return fc.asyncProperty(permitStepsArb, (steps) => runPermitModel(harnessOf(), steps));
}
