/**
 * The model-based suite: random sequences of claim, renew, checkpoint, fenced write (also with forged
 * handles), release, revoke, recover and advance-clock / expire-now, and of the record-level operations (key
 * state with holds, release with a hold, remove, submissions, self-refusing writes, claims with `expect`), and, on a
 * store that offers semaphores, of `acquirePermit` (a run with one works on a permit key), run against the real store and an
 * independent reference model (`model-reference.ts`). After every command the store's `inspect` and ledger must
 * match the model: this is where "a refused or stale operation changes nothing" is checked on every adapter.
 */
import fc from 'fast-check';
import { permitKey } from '../fence/permits.js';
import { createLeases } from '../leases.js';
import type { Store } from '../store.js';
import { expectEqual, expectMatch, expectSame } from './assertions.js';
import { useHarness } from './context.js';
import { suiteOptions, type MakeStoreHarness, type StoreHarness, type SuiteOptions } from './harness.js';
import {
  AdvanceClockCommand,
  CheckpointCommand,
  ClaimCommand,
  ExpireNowCommand,
  RecoverCommand,
  ReleaseCommand,
  RenewCommand,
  RevokeCommand,
  WriteCommand,
  type ModelReal,
} from './model-commands.js';
import {
  ExpectClaimCommand,
  HoldReleaseCommand,
  RefusedWriteCommand,
  RemoveCommand,
  SetStateCommand,
  SubmitCommand,
} from './model-record-commands.js';
import { AcquirePermitCommand } from './model-permit-commands.js';
import { PERMIT_MODEL_PROPERTY, permitModelProperty } from './model-permits.js';
import { initialModel, isExpired, isHeldBack, liveModelWaiters, type ModelState } from './model-reference.js';
import { DequeueCommand, WaitingClaimCommand } from './model-queue-commands.js';
import { assertProperty } from './property.js';
import { skipTest, type TestRunner } from './runner.js';
import { PROPERTY_SUITE_TIMEOUT_MS } from './timeouts.js';

const WORKERS = 3;
/** TTL on a controlled clock: short, so advance-clock commands expire grants. */
const CLOCKED_TTL_MS = 100;
/** TTL on real servers: long, so only expire-now expires a grant during a run. */
const SERVER_TTL_MS = 120_000;

function commandArbs(): fc.Arbitrary<fc.AsyncCommand<ModelState, ModelReal>>[] {
  const worker = fc.nat({ max: WORKERS - 1 });
  const pick = fc.nat({ max: 5 });
  return [
    fc
      .record({
        worker,
        runId: fc.constantFrom(null, 'r1', 'r2'),
        forever: fc.constantFrom(false, false, false, true),
        attributes: fc.constantFrom({}, { model: 'v1' }, { model: 'v2' }),
        recovering: fc.boolean(),
      })
      .map(({ worker: w, runId, forever, attributes, recovering }) => new ClaimCommand(w, runId, forever, attributes, recovering)),
    fc.tuple(worker, pick).map(([w, p]) => new RenewCommand(w, p)),
    fc
      .tuple(
        worker,
        pick,
        fc.record({ step: fc.nat({ max: 99 }), note: fc.string({ maxLength: 4 }) }),
        fc.constantFrom(undefined, { model: 'v1' }),
      )
      .map(([w, p, value, requires]) => new CheckpointCommand(w, p, value, requires)),
    fc
      .tuple(worker, pick, fc.constantFrom(null, null, null, 'secret' as const, 'run' as const))
      .map(([w, p, forged]) => new WriteCommand(w, p, forged)),
    fc
      .tuple(worker, pick, fc.constantFrom('keep' as const, 'clear' as const, { done: 1 }))
      .map(([w, p, final]) => new ReleaseCommand(w, p, final)),
    fc
      .tuple(fc.boolean(), fc.constantFrom('none' as const, 'current' as const, 'stale' as const))
      .map(([recovery, expectation]) => new RevokeCommand(recovery, expectation)),
    fc
      .tuple(worker, pick, fc.constantFrom('resume' as const, 'discard' as const))
      .map(([w, p, action]) => new RecoverCommand(w, p, action)),
    fc.integer({ min: 1, max: 150 }).map((ms) => new AdvanceClockCommand(ms)),
    fc.constant(new ExpireNowCommand()),
    // The record-level operations (issue 24), on the Store itself.
    fc
      .tuple(
        fc.dictionary(fc.constantFrom('rev', 'tier', 'B'), fc.constantFrom('1', '2', null), { maxKeys: 2 }),
        fc.constantFrom('keep' as const, 'keep' as const, 'set' as const, 'cancel' as const),
      )
      .map(([values, hold]) => new SetStateCommand(values, hold)),
    fc.tuple(worker, pick).map(([w, p]) => new HoldReleaseCommand(w, p)),
    fc
      .tuple(fc.constantFrom(false, true), fc.constantFrom('none' as const, 'current' as const, 'stale' as const))
      .map(([force, expectation]) => new RemoveCommand(force, expectation)),
    fc
      .tuple(worker, pick, fc.constantFrom('s1', 's2'), fc.constantFrom('a' as const, 'b' as const), fc.boolean())
      .map(([w, p, runId, payload, bind]) => new SubmitCommand(w, p, runId, payload, bind)),
    fc.tuple(worker, pick).map(([w, p]) => new RefusedWriteCommand(w, p)),
    fc
      .tuple(worker, fc.constantFrom('current' as const, 'other' as const))
      .map(([w, expectation]) => new ExpectClaimCommand(w, expectation)),
    // Fair waiting (issue 25): a worker's waiting claim for one of its two waiters, and a dequeue.
    fc.tuple(worker, fc.nat({ max: 1 })).map(([w, slot]) => new WaitingClaimCommand(w, slot)),
    fc.tuple(worker, fc.nat({ max: 1 })).map(([w, slot]) => new DequeueCommand(w, slot)),
    // Semaphores (issue 25): only on a run whose key is a permit (a store that offers acquirePermit).
    fc
      .record({
        worker,
        runId: fc.constantFrom(null, 'r1', 'r2'),
        forever: fc.constantFrom(false, false, false, true),
        recover: fc.constantFrom(false, true, 'when-blocked' as const),
      })
      .map(({ worker: w, runId, forever, recover }) => new AcquirePermitCommand(w, runId, forever, recover)),
  ];
}

/** The store's view of the key must be the model's, after every command. */
async function expectStoreMatchesModel(model: ModelState, real: ModelReal): Promise<void> {
  const seen = await real.operator.inspect(real.key);
  const { grant } = model;
  expectMatch(
    seen,
    {
      exists: model.exists,
      token: model.token,
      recoveryRequired: model.recoveryRequired,
      ending: model.ending === null ? null : { kind: model.ending.kind, token: model.ending.token },
      checkpoint: model.checkpoint === null ? null : { value: model.checkpoint.value, token: model.checkpoint.token },
      grant:
        grant === null
          ? null
          : {
              token: grant.token,
              holder: `w${grant.worker}`,
              runId: grant.runId,
              attributes: grant.attributes,
              live: !isExpired(model, grant),
              ...(model.clocked || grant.expiresAt === null ? { expiresAt: grant.expiresAt } : {}),
            },
    },
    'the store (inspect) after the command',
  );
  if (model.clocked) expectSame(seen.now, model.now, 'the store now after the command');
  // NOTE: key state and holds on the Store itself (the lease API's inspect may not show them).
  const record = await real.harness.store.inspect(real.key);
  expectEqual(record.state, model.state, 'the key state (store inspect) after the command');
  if (model.clocked) expectSame(record.heldUntil, isHeldBack(model) ? model.heldUntil : null, 'heldUntil after the command');
  else expectSame(record.heldUntil !== null, model.heldUntil !== null, 'whether the key is held back after the command');
  expectEqual(
    record.waiters.map((waiter) => [waiter.waiterId, waiter.holder]),
    liveModelWaiters(model).map((waiter) => [waiter.id, `w${waiter.worker}`]),
    'the queue (store inspect) after the command',
  );
}

/** Wraps each command so the store is compared with the model right after it ran. */
function checkedAfterEach(command: fc.AsyncCommand<ModelState, ModelReal>): fc.AsyncCommand<ModelState, ModelReal> {
  return {
    check: (model) => command.check(model),
    run: async (model, real) => {
      await command.run(model, real);
      await expectStoreMatchesModel(model, real);
    },
    toString: () => command.toString(),
  };
}

/** What the model-based property states; a failure report starts with it. */
export const MODEL_PROPERTY = 'every operation answers as the reference model and leaves the store as the model says';

/** The model-based property over the harness `harnessOf()` returns when a run starts (one fresh key per run). */
export function modelProperty(
  harnessOf: () => StoreHarness<Store>,
): fc.IAsyncPropertyWithHooks<[Iterable<fc.AsyncCommand<ModelState, ModelReal>>]> {
  const commands = fc.commands(
    commandArbs().map((arb) => arb.map(checkedAfterEach)),
    { maxCommands: 40, size: 'medium' },
  );
  return fc.asyncProperty(commands, async (cmds) => {
    const harness = harnessOf();
    const clocked = harness.advanceClock !== null;
    const ttlMs = clocked ? CLOCKED_TTL_MS : SERVER_TTL_MS;
    // NOTE: a run with an acquirePermit command (on a store that offers it) works on permit 1 of a fresh semaphore,
    // so every command exercises a permit key; from the commands alone, so a shrunk counterexample keeps it.
    // (fast-check wraps each command; its text is the command's own.)
    const permits =
      typeof harness.store.acquirePermit === 'function' &&
      [...cmds].some((command) => String(command).startsWith(AcquirePermitCommand.NAME));
    const semaphore = permits ? harness.freshKey('sem').replace(/[{}]/g, '_') : null;
    const key = semaphore === null ? harness.freshKey('model') : permitKey(semaphore, 1);
    const workers = Array.from({ length: WORKERS }, (_, i) => createLeases(harness.store, { holder: `w${i}`, ttlMs }));
    const operator = createLeases(harness.store, { holder: 'ops', ttlMs });
    const start = (await operator.inspect(key)).now;
    await fc.asyncModelRun(
      () => ({
        model: initialModel(clocked, start, WORKERS, permits),
        real: { harness, key, semaphore, workers, operator, handles: workers.map(() => []), ttlMs },
      }),
      cmds,
    );
  });
}

/** Registers the model-based suite for one store. */
export function describeStoreModel<S extends Store>(
  runner: TestRunner,
  name: string,
  makeHarness: MakeStoreHarness<S>,
  options: SuiteOptions = {},
): void {
  const { modelRuns, seed } = suiteOptions(options);
  runner.describe(`${name}: model-based`, () => {
    const context = useHarness(runner, makeHarness);
    const property = modelProperty(() => context.harness as unknown as StoreHarness<Store>);
    runner.it(
      MODEL_PROPERTY,
      () => assertProperty(MODEL_PROPERTY, property, { numRuns: modelRuns, ...(seed === undefined ? {} : { seed }) }),
      PROPERTY_SUITE_TIMEOUT_MS,
    );
    // NOTE: semaphores over several permits (the property above runs acquirePermit on one); skipped on a store without them.
    const permits = permitModelProperty(() => context.harness as unknown as StoreHarness<Store>);
    runner.it(
      PERMIT_MODEL_PROPERTY,
      async (...runnerArguments) => {
        if (typeof context.harness.store.acquirePermit !== 'function') {
          skipTest(runnerArguments, 'the store does not offer semaphores');
          return;
        }
        await assertProperty(PERMIT_MODEL_PROPERTY, permits, { numRuns: modelRuns, ...(seed === undefined ? {} : { seed }) });
      },
      PROPERTY_SUITE_TIMEOUT_MS,
    );
  });
}
