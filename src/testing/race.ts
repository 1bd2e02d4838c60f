/**
 * The race suite: several workers (each its own `createLeases` on its own store connection) run random
 * programs of claim / pause / renew / fenced write / checkpoint / release / revoke against one key while a
 * nemesis advances the store's clock (memory) or expires the current grant (every store). `fc.scheduler()`
 * decides when each request reaches the store and when each response comes back, so a worker may act on a
 * belief the store has long moved past (the GC pause of Kleppmann's article). Every run's history is
 * checked against DESIGN.md invariants 1-5 (`invariants.ts`).
 *
 * On real servers the scheduler only orders dispatch and delivery; the server applies what it receives
 * in real time, and the checkers fall back from the exact apply order to real-time order.
 */
import fc from 'fast-check';
import { createLeases } from '../leases.js';
import type { Lease } from '../lease.js';
import type { StoreInspection } from '../fence/operations.js';
import type { Store } from '../store.js';
import { useHarness } from './context.js';
import { suiteOptions, type MakeStoreHarness, type StoreHarness, type SuiteOptions } from './harness.js';
import { assertProperty } from './property.js';
import {
  HistoryRecorder,
  scheduledStore,
  type RaceHistory,
  type RaceOpKind,
  type RaceOutcome,
  type ScheduledStore,
} from './race-history.js';
import { assertRaceInvariants } from './race-invariants.js';
import { QUEUE_RACE_PROPERTY, queueRaceProperty } from './race-queue.js';
import type { TestRunner } from './runner.js';
import { PROPERTY_SUITE_TIMEOUT_MS } from './timeouts.js';

/** One step of a worker's program. */
export type RaceStep = 'claim' | 'renew' | 'write' | 'checkpoint' | 'release' | 'revoke' | 'pause';
/** What the nemesis does between workers' steps: move the store's clock, or expire the current grant. */
export type NemesisStep = { readonly advance: number } | 'expire';

/** What one race run does: each worker's program, and the nemesis's steps. */
export interface RaceScenario {
  readonly programs: readonly (readonly RaceStep[])[];
  readonly nemesis: readonly NemesisStep[];
}

/** Bound on one race run; a run that takes longer fails (and shrinks) as a deadlock. */
const RACE_RUN_TIMEOUT_MS = 10_000;

/** TTL on a controlled clock; nemesis ticks are a sizeable fraction of it. */
export const RACE_TTL_MS = 100;
/** TTL on real servers: long, so only the expire-now hook ends a grant by time during a run. */
export const SERVER_RACE_TTL_MS = 120_000;

const stepArb: fc.Arbitrary<RaceStep> = fc.constantFrom<RaceStep>(
  'claim',
  'claim',
  'write',
  'write',
  'write',
  'renew',
  'renew',
  'checkpoint',
  'release',
  'revoke',
  'pause',
  'pause',
);
const nemesisArb: fc.Arbitrary<NemesisStep> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 60 }).map((advance) => ({ advance })) },
  { weight: 1, arbitrary: fc.constant('expire' as const) },
);

/** Programs for `workers` workers and a nemesis schedule. */
export function raceScenarioArb(workers: number): fc.Arbitrary<RaceScenario> {
  return fc.record({
    programs: fc.array(fc.array(stepArb, { minLength: 1, maxLength: 8 }), { minLength: workers, maxLength: workers }),
    nemesis: fc.array(nemesisArb, { maxLength: 12 }),
  });
}

/** What a race runs against: the harness, and one store (connection) per worker. */
export interface RaceSetup<S extends Store> {
  readonly harness: StoreHarness<S>;
  readonly stores: readonly S[];
}

/** What a race run leaves to check: the history, the ledger, the store's final view of the key. */
export interface RaceResult {
  readonly history: RaceHistory;
  readonly ledger: string[];
  readonly final: StoreInspection;
}

interface WorkerEnv<S extends Store> {
  readonly index: number;
  readonly key: string;
  readonly harness: StoreHarness<S>;
  readonly scheduler: fc.Scheduler;
  readonly recorder: HistoryRecorder;
  readonly network: ScheduledStore<S>;
  readonly ttlMs: number;
}

async function runWorker<S extends Store>(env: WorkerEnv<S>, program: readonly RaceStep[]): Promise<void> {
  const { index, key, harness, scheduler, recorder, network } = env;
  const leases = createLeases(network.store, { holder: `w${index}`, ttlMs: env.ttlMs });
  const call = async <T extends RaceOutcome>(
    kind: RaceOpKind,
    presented: bigint | null,
    entry: string | null,
    action: () => Promise<T>,
  ): Promise<T> => {
    const op = recorder.begin(index, kind, presented, entry);
    const outcome = await action();
    recorder.end(op, outcome, network.lastApply);
    return outcome;
  };
  // NOTE: a worker keeps its last lease after losing or releasing it: stale operations are the point.
  let lease: Lease | null = null;
  let writes = 0;
  for (const step of program) {
    if (step === 'pause') await scheduler.schedule(Promise.resolve(`w${index}:pause`));
    else if (step === 'claim') {
      const claimed = await call('claim', null, null, () => leases.claim(key));
      if (claimed.ok) lease = claimed.lease;
    } else if (step === 'revoke') await call('revoke', null, null, () => leases.revoke(key, { reason: 'race', by: `w${index}` }));
    else if (lease !== null) {
      const held = lease;
      if (step === 'renew') await call('renew', held.token, null, () => leases.renew(held));
      if (step === 'checkpoint') await call('checkpoint', held.token, null, () => leases.checkpoint(held, { worker: index, writes }));
      if (step === 'release') await call('release', held.token, null, () => leases.release(held));
      if (step === 'write') {
        const entry = `w${index}:t${held.token}:${writes++}`;
        await call('write', held.token, entry, () => harness.appendUnderFence(leases, held, entry));
      }
    }
  }
}

/** Runs one scenario under `scheduler` and returns the history, the ledger and the store's final view. */
export async function runRace<S extends Store>(scheduler: fc.Scheduler, scenario: RaceScenario, setup: RaceSetup<S>): Promise<RaceResult> {
  const { harness, stores } = setup;
  const clocked = harness.advanceClock !== null;
  // NOTE: a store whose clock the test controls lives in this process and applies each request within a
  // few microtasks of its delivery, so the order answers arrive in is its exact linearisation order.
  const recorder = new HistoryRecorder({ exactOrder: clocked, expiryHookMovesExpiry: !clocked });
  const key = harness.freshKey('race');
  const ttlMs = clocked ? RACE_TTL_MS : SERVER_RACE_TTL_MS;
  const workers = scenario.programs.map((program, index) => {
    const network = scheduledStore(stores[index % stores.length]!, scheduler, `w${index}`, recorder);
    return runWorker({ index, key, harness, scheduler, recorder, network, ttlMs }, program);
  });
  const nemesis = scheduler.scheduleSequence(
    scenario.nemesis.flatMap((step) => {
      if (step === 'expire') {
        const builder = async () => {
          const expire = recorder.beginExpire();
          await harness.expireNow(key);
          recorder.endExpire(expire);
        };
        return [{ label: 'expire-now', builder }];
      }
      const { advanceClock } = harness;
      return advanceClock === null ? [] : [{ label: `tick+${step.advance}`, builder: async () => advanceClock(step.advance) }];
    }),
  );
  await scheduler.waitFor(Promise.all([...workers, nemesis.task]));
  return { history: recorder.history, ledger: await harness.readLedger(key), final: await harness.store.inspect(key) };
}

/** Runs one scenario and asserts invariants 1-5 on what happened. */
export async function raceKeepsInvariants<S extends Store>(
  scheduler: fc.Scheduler,
  scenario: RaceScenario,
  setup: RaceSetup<S>,
): Promise<void> {
  const { history, ledger, final } = await runRace(scheduler, scenario, setup);
  assertRaceInvariants(history, ledger, final);
}

/** What the race property states; a failure report starts with it. */
export const RACE_PROPERTY =
  'under any interleaving: one live grant at a time, tokens never reused, only the current grant writes, in token order, stale renew/release change nothing';

/** Registers the race suite for one store. */
export function describeStoreRaces<S extends Store>(
  runner: TestRunner,
  name: string,
  makeHarness: MakeStoreHarness<S>,
  options: SuiteOptions = {},
): void {
  const { raceRuns, workers, seed } = suiteOptions(options);
  runner.describe(`${name}: races`, () => {
    const context = useHarness(runner, makeHarness);
    const stores: S[] = [];
    runner.beforeAll(async () => {
      for (let i = 0; i < workers; i += 1) stores.push(await context.harness.connect());
    });

    runner.it(
      RACE_PROPERTY,
      () =>
        assertProperty(
          RACE_PROPERTY,
          fc.asyncProperty(fc.scheduler(), raceScenarioArb(workers), (scheduler, scenario) =>
            raceKeepsInvariants(scheduler, scenario, { harness: context.harness, stores }),
          ),
          // NOTE: a per-run timeout turns a deadlocked store into a shrinkable failure instead of a hung test.
          { numRuns: raceRuns, timeout: RACE_RUN_TIMEOUT_MS, ...(seed === undefined ? {} : { seed }) },
        ),
      PROPERTY_SUITE_TIMEOUT_MS,
    );

    runner.it(
      QUEUE_RACE_PROPERTY,
      () =>
        assertProperty(
          QUEUE_RACE_PROPERTY,
          queueRaceProperty(
            () => context.harness,
            () => stores,
          ),
          { numRuns: raceRuns, timeout: RACE_RUN_TIMEOUT_MS, ...(seed === undefined ? {} : { seed }) },
        ),
      PROPERTY_SUITE_TIMEOUT_MS,
    );
  });
}
