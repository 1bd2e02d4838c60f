/**
 * Arbitraries for the pure core: lease records (both structurally valid ones and ones reached by running
 * the transitions from nothing), fences, and commands. Property tests in this folder draw from these.
 */
import fc from 'fast-check';
import type {
  CheckpointCommand,
  ClaimCommand,
  RecoverCommand,
  ReleaseCommand,
  RenewCommand,
  RevokeCommand,
  SetKeyStateCommand,
} from '../../src/fence/operations.js';
import * as transitions from '../../src/fence/transitions.js';
import type {
  CheckpointRecord,
  Ending,
  Fence,
  GrantState,
  KeyState,
  LeaseAttributes,
  LeaseRecord,
  QueuedWaiter,
  SubmissionRecord,
} from '../../src/fence/types.js';

export const KEY = 'job:42';

export const holderArb: fc.Arbitrary<string> = fc.constantFrom('w1', 'w2', 'w3');
export const runIdArb: fc.Arbitrary<string | null> = fc.constantFrom(null, 'r1', 'r2');
/** 128 random bits as hex, like `newSecret()`. */
export const secretArb: fc.Arbitrary<string> = fc
  .uint8Array({ minLength: 16, maxLength: 16 })
  .map((bytes) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join(''));
export const attributesArb: fc.Arbitrary<LeaseAttributes> = fc.dictionary(fc.constantFrom('model', 'region'), fc.constantFrom('v1', 'v2'), {
  maxKeys: 2,
});
export const timeArb: fc.Arbitrary<number> = fc.integer({ min: 0, max: 1_000_000 });
export const ttlArb: fc.Arbitrary<number | null> = fc.option(fc.integer({ min: 1, max: 1_000 }), { nil: null, freq: 5 });
export const tokenArb: fc.Arbitrary<bigint> = fc.bigInt({ min: 1n, max: 1n << 70n });
export const jsonArb: fc.Arbitrary<string> = fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value));
/**
 * Key-state names, including ones whose code-unit order differs from a locale order ('B' < 'a' < 'é') and a
 * value that is the empty string (present, not absent).
 */
export const stateNameArb: fc.Arbitrary<string> = fc.constantFrom('rev', 'tier', 'B', 'a', 'é');
export const stateValueArb: fc.Arbitrary<string> = fc.constantFrom('1', '2', '');
export const keyStateArb: fc.Arbitrary<KeyState> = fc.dictionary(stateNameArb, stateValueArb, { maxKeys: 3 });
/** Values a `setKeyState` sets (`null`: remove the name). */
export const stateValuesArb: fc.Arbitrary<Record<string, string | null>> = fc.dictionary(
  stateNameArb,
  fc.option(stateValueArb, { nil: null }),
  {
    maxKeys: 3,
  },
);
export const digestArb: fc.Arbitrary<string> = fc.constantFrom('a'.repeat(64), 'b'.repeat(64));

const endingKindArb = fc.constantFrom('released' as const, 'expired' as const, 'revoked' as const);

export const grantArb = (token: bigint): fc.Arbitrary<GrantState> =>
  fc
    .record({ holder: holderArb, runId: runIdArb, secret: secretArb, acquiredAt: timeArb, ttl: ttlArb, attributes: attributesArb })
    .map(({ ttl, ...grant }) => ({ ...grant, token, expiresAt: ttl === null ? null : grant.acquiredAt + ttl }));

export const endingArb = (token: bigint): fc.Arbitrary<Ending> =>
  fc.record({
    kind: endingKindArb,
    token: fc.constant(token),
    holder: holderArb,
    runId: runIdArb,
    at: timeArb,
    reason: fc.option(fc.constantFrom('stuck', 'deploy'), { nil: null }),
    by: fc.option(fc.constantFrom('ops', 'operator'), { nil: null }),
  });

export const submissionArb = (maxToken: bigint): fc.Arbitrary<SubmissionRecord> =>
  fc.record({
    runId: fc.constantFrom('s1', 's2', 's3'),
    digest: digestArb,
    token: fc.bigInt({ min: 1n, max: maxToken }),
    holder: holderArb,
    at: timeArb,
    receiptJson: fc.option(jsonArb, { nil: null }),
  });

/** A record keeps one submission per run id. */
const uniqueRuns = (all: readonly SubmissionRecord[]): SubmissionRecord[] =>
  all.filter((submission, i) => all.findIndex((other) => other.runId === submission.runId) === i);

export const checkpointArb = (maxToken: bigint): fc.Arbitrary<CheckpointRecord> =>
  fc.record({ json: jsonArb, token: fc.bigInt({ min: 1n, max: maxToken }), writtenAt: timeArb });

/** A key's queue: waiters with distinct ids (some of them expired at a given now), oldest first. */
export const waitersArb: fc.Arbitrary<QueuedWaiter[]> = fc
  .uniqueArray(
    fc.record({
      waiterId: fc.constantFrom('q1', 'q2', 'q3', 'q4'),
      holder: fc.constantFrom('alice', 'bob'),
      arrivedAt: timeArb,
      ttlMs: fc.integer({ min: 1, max: 500_000 }),
    }),
    { selector: (waiter) => waiter.waiterId, maxLength: 3 },
  )
  .map((all) =>
    all
      .sort((a, b) => a.arrivedAt - b.arrivedAt)
      .map(({ waiterId, holder, arrivedAt, ttlMs }) => ({ waiterId, holder, arrivedAt, expiresAt: arrivedAt + ttlMs })),
  );

/**
 * Any record that keeps the documented invariants: a grant carries the record's token; the ending is of an
 * earlier (or, with no grant, the same or the burned-over) token; checkpoints carry an issued token.
 */
export const recordArb: fc.Arbitrary<LeaseRecord> = tokenArb.chain((token) =>
  fc.record({
    key: fc.constant(KEY),
    token: fc.constant(token),
    grant: fc.option(grantArb(token), { nil: null }),
    ending: fc.option(
      fc.bigInt({ min: 1n, max: token }).chain((endedToken) => endingArb(endedToken)),
      { nil: null },
    ),
    checkpoint: fc.option(checkpointArb(token), { nil: null }),
    recoveryRequired: fc.boolean(),
    state: keyStateArb,
    heldUntil: fc.option(timeArb, { nil: null }),
    submissions: fc.array(submissionArb(token), { maxLength: 3 }).map((all) => uniqueRuns(all)),
    waiters: waitersArb,
  }),
);

/** The fence the current grant of `record` presents (its rightful holder). */
export function rightfulFence(record: LeaseRecord & { grant: GrantState }): Fence {
  const { grant } = record;
  return { key: record.key, token: grant.token, secret: grant.secret, holder: grant.holder, runId: grant.runId };
}

/** A step of a history built from nothing: commands pick fences among the grants issued so far. */
export type Step =
  | {
      readonly kind: 'claim';
      readonly holder: string;
      readonly runId: string | null;
      readonly secret: string;
      readonly ttlMs: number | null;
      readonly attributes: LeaseAttributes;
      readonly recovering: boolean;
      readonly dt: number;
    }
  | { readonly kind: 'renew'; readonly pick: number; readonly ttlMs: number | null; readonly dt: number }
  | { readonly kind: 'checkpoint'; readonly pick: number; readonly json: string; readonly dt: number }
  | {
      readonly kind: 'release';
      readonly pick: number;
      readonly checkpointJson: string | null | undefined;
      readonly holdMs?: number;
      readonly dt: number;
    }
  | {
      readonly kind: 'set-state';
      readonly values: Record<string, string | null>;
      readonly holdMs: number | null | undefined;
      readonly dt: number;
    }
  | { readonly kind: 'remove'; readonly force: boolean; readonly dt: number }
  | { readonly kind: 'revoke'; readonly requireRecovery: boolean; readonly expectPick: number | null; readonly dt: number }
  | { readonly kind: 'recover'; readonly pick: number; readonly action: 'resume' | 'discard'; readonly dt: number };

const dtArb = fc.integer({ min: 0, max: 600 });
export const holdMsArb: fc.Arbitrary<number> = fc.integer({ min: 0, max: 1_000 });
const pickArb = fc.nat({ max: 7 });

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      holder: holderArb,
      runId: runIdArb,
      secret: secretArb,
      ttlMs: ttlArb,
      attributes: attributesArb,
      recovering: fc.boolean(),
      dt: dtArb,
    }),
  },
  fc.record({ kind: fc.constant('renew' as const), pick: pickArb, ttlMs: ttlArb, dt: dtArb }),
  fc.record({ kind: fc.constant('checkpoint' as const), pick: pickArb, json: jsonArb, dt: dtArb }),
  fc.record({
    kind: fc.constant('release' as const),
    pick: pickArb,
    checkpointJson: fc.constantFrom(undefined, null, '{"done":true}'),
    dt: dtArb,
  }),
  fc.record({ kind: fc.constant('release' as const), pick: pickArb, checkpointJson: fc.constant(undefined), holdMs: holdMsArb, dt: dtArb }),
  fc.record({
    kind: fc.constant('set-state' as const),
    values: stateValuesArb,
    holdMs: fc.constantFrom(undefined, undefined, null, 0, 500),
    dt: dtArb,
  }),
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), force: fc.boolean(), dt: dtArb }) },
  fc.record({
    kind: fc.constant('revoke' as const),
    requireRecovery: fc.boolean(),
    expectPick: fc.option(pickArb, { nil: null }),
    dt: dtArb,
  }),
  fc.record({
    kind: fc.constant('recover' as const),
    pick: pickArb,
    action: fc.constantFrom('resume' as const, 'discard' as const),
    dt: dtArb,
  }),
);

/** The state after running some steps through the pure transitions: the record, every fence issued, and now. */
export interface Reached {
  readonly record: LeaseRecord | null;
  /** Fences of every grant ever issued for the key, oldest first. */
  readonly fences: readonly Fence[];
  readonly now: number;
  /**
   * The floor a store passes to the next claim: one above the highest token of a removed record (the memory
   * store's), so a removed key's tokens are never issued again.
   */
  readonly tokenFloor: bigint;
}

const pickFence = (fences: readonly Fence[], pick: number): Fence | null =>
  fences.length === 0 ? null : (fences[pick % fences.length] ?? null);

/** Runs `steps` from an empty key; steps that need a fence before any grant exists are skipped. */
export function runSteps(steps: readonly Step[], start = 1_000): Reached {
  let record: LeaseRecord | null = null;
  const fences: Fence[] = [];
  let now = start;
  /** The highest token of a removed record: the store's floor that outlives records. */
  let removedToken = 0n;
  for (const step of steps) {
    now += step.dt;
    switch (step.kind) {
      case 'claim': {
        const { kind: _kind, dt: _dt, ...command } = step;
        // NOTE: as a store does, the key mints above every token removed before (see `remove`): also once a
        // `setKeyState` re-created the record at token 0.
        const next = transitions.claim(record, { key: KEY, ...command }, now, removedToken + 1n);
        if (next.outcome.ok)
          fences.push({ key: KEY, token: next.outcome.token, secret: step.secret, holder: step.holder, runId: step.runId });
        record = next.record;
        break;
      }
      case 'set-state': {
        const command: SetKeyStateCommand =
          step.holdMs === undefined
            ? { key: KEY, values: step.values, by: 'scanner' }
            : { key: KEY, values: step.values, by: 'scanner', holdMs: step.holdMs };
        record = transitions.setKeyState(record, command, now).record;
        break;
      }
      case 'remove': {
        const removed = transitions.remove(record, { key: KEY, force: step.force, expectedToken: null }, now);
        if (removed.outcome.ok && removed.outcome.token > removedToken) removedToken = removed.outcome.token;
        record = removed.record;
        break;
      }
      case 'revoke': {
        const expected = step.expectPick === null ? null : (pickFence(fences, step.expectPick)?.token ?? null);
        record = transitions.revoke(
          record,
          { key: KEY, reason: 'stuck', by: 'ops', requireRecovery: step.requireRecovery, expectedToken: expected },
          now,
        ).record;
        break;
      }
      default: {
        const fence = pickFence(fences, step.pick);
        if (fence === null) break;
        if (step.kind === 'renew') record = transitions.renew(record, { fence, ttlMs: step.ttlMs }, now).record;
        if (step.kind === 'checkpoint') record = transitions.checkpoint(record, { fence, json: step.json }, now).record;
        if (step.kind === 'recover') record = transitions.recover(record, { fence, action: step.action }, now).record;
        if (step.kind === 'release') {
          const base: ReleaseCommand = step.checkpointJson === undefined ? { fence } : { fence, checkpointJson: step.checkpointJson };
          const command: ReleaseCommand = step.holdMs === undefined ? base : { ...base, holdMs: step.holdMs };
          record = transitions.release(record, command, now).record;
        }
      }
    }
  }
  return { record, fences, now, tokenFloor: removedToken + 1n };
}

/** Records (and issued fences) reachable from an empty key through the transitions. */
export const reachedArb: fc.Arbitrary<Reached> = fc.array(stepArb, { maxLength: 14 }).map((steps) => runSteps(steps));

/** A fence to present against a reached state: one of the issued grants', possibly tampered with. */
export const presentedFenceArb = (reached: Reached): fc.Arbitrary<Fence> => {
  const forged = fc.record({
    key: fc.constant(KEY),
    token: fc.bigInt({ min: 1n, max: 20n }),
    secret: secretArb,
    holder: holderArb,
    runId: runIdArb,
  });
  if (reached.fences.length === 0) return forged;
  return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...reached.fences) }, forged);
};

/** A reachable state, a fence to present against it, and a now at or after the state's. */
export const presentedArb: fc.Arbitrary<{ reached: Reached; fence: Fence; now: number }> = reachedArb.chain((reached) =>
  fc.record({
    reached: fc.constant(reached),
    fence: presentedFenceArb(reached),
    now: fc.integer({ min: 0, max: 2_000 }).map((dt) => reached.now + dt),
  }),
);

export const claimCommandArb: fc.Arbitrary<ClaimCommand> = fc.record({
  key: fc.constant(KEY),
  holder: holderArb,
  runId: runIdArb,
  secret: secretArb,
  ttlMs: ttlArb,
  attributes: attributesArb,
  recovering: fc.boolean(),
});

export const renewCommandArb = (fence: fc.Arbitrary<Fence>): fc.Arbitrary<RenewCommand> => fc.record({ fence, ttlMs: ttlArb });
export const checkpointCommandArb = (fence: fc.Arbitrary<Fence>): fc.Arbitrary<CheckpointCommand> => fc.record({ fence, json: jsonArb });
export const releaseCommandArb = (fence: fc.Arbitrary<Fence>): fc.Arbitrary<ReleaseCommand> =>
  fc.oneof(fc.record({ fence }), fc.record({ fence, checkpointJson: fc.option(jsonArb, { nil: null }) }));
export const recoverCommandArb = (fence: fc.Arbitrary<Fence>): fc.Arbitrary<RecoverCommand> =>
  fc.record({ fence, action: fc.constantFrom('resume' as const, 'discard' as const) });
export const revokeCommandArb: fc.Arbitrary<RevokeCommand> = fc.record({
  key: fc.constant(KEY),
  reason: fc.constantFrom('stuck', 'deploy'),
  by: fc.constantFrom('ops', 'operator'),
  requireRecovery: fc.boolean(),
  expectedToken: fc.option(fc.bigInt({ min: 1n, max: 20n }), { nil: null }),
});

/** States where a revoke with `requireRecovery` left a checkpoint awaiting recovery (then maybe more time passed). */
export const pendingRecoveryArb: fc.Arbitrary<Reached> = fc
  .tuple(fc.array(stepArb, { maxLength: 10 }), claimCommandArb, jsonArb, fc.nat({ max: 2_000 }))
  .map(([steps, claimed, json, dt]) => {
    const before = runSteps(steps);
    // NOTE: claimed once a hold has passed, with the store's floor (a removed key mints above its old tokens).
    const at = Math.max(before.now, before.record?.heldUntil ?? 0);
    const live = before.record?.grant != null && (before.record.grant.expiresAt === null || at < before.record.grant.expiresAt);
    let { record } = live
      ? before
      : { record: transitions.claim(before.record, { ...claimed, recovering: true }, at, before.tokenFloor).record };
    const grant = record!.grant!;
    const fence: Fence = { key: KEY, token: grant.token, secret: grant.secret, holder: grant.holder, runId: grant.runId };
    record = transitions.checkpoint(record, { fence, json }, at).record;
    record = transitions.revoke(record, { key: KEY, reason: 'stuck', by: 'ops', requireRecovery: true, expectedToken: null }, at).record;
    return { record, fences: [...before.fences, fence], now: at + dt, tokenFloor: before.tokenFloor };
  });
