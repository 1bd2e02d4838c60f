/**
 * The semaphore race on a store in this process (the memory store, or a planted-bug look-alike), interleaved by
 * `fc.scheduler()`: acquirers that each run a program of fates (release, release with a hold, a fenced write then
 * release, crash and let the permit expire, an operator's revoke, a re-delivered acquire) while a ticker moves the
 * store's clock. It answers the grants the acquirers saw, with their store times, for `race-checks.ts`.
 */
import fc from 'fast-check';
import type { ManualClock } from '../../src/clock.js';
import type { AcquirePermitCommand, AcquirePermitOutcome } from '../../src/fence/permits.js';
import type { Fence } from '../../src/fence/types.js';
import type { Store } from '../../src/store.js';
import { permitCommand, type PermitGrantSeen } from './race-checks.js';

/** What an acquirer does with a permit it was granted. */
export type Fate = 'release' | 'release-hold' | 'write-then-release' | 'crash' | 'revoked' | 'redeliver';
export const fateArb: fc.Arbitrary<Fate> = fc.constantFrom<Fate>(
  'release',
  'release',
  'release-hold',
  'write-then-release',
  'crash',
  'revoked',
  'redeliver',
);

/** The store calls the race makes. */
export type RaceStore = Pick<Store, 'release' | 'revoke' | 'fencedWrite'> & Required<Pick<Store, 'acquirePermit'>>;

export const SEMAPHORE = 'pool';
export const TTL_MS = 50;

/** A run: how many may hold at once, each acquirer's fates, the clock's steps. */
export interface RaceScenario {
  readonly limit: number;
  /** Each acquirer's own limit, when they differ (else every acquire has `limit`). */
  readonly limits?: readonly number[];
  readonly programs: readonly (readonly Fate[])[];
  readonly ticks: readonly number[];
}

/** Scenarios of `acquirers` acquirers with `limit`, or with a limit each from 1 to `limit` (`mixed`). */
export const raceScenarioArb = (limit: number, acquirers: number, mixed = false): fc.Arbitrary<RaceScenario> =>
  fc.record({
    limit: fc.constant(limit),
    ...(mixed ? { limits: fc.array(fc.integer({ min: 1, max: limit }), { minLength: acquirers, maxLength: acquirers }) } : {}),
    programs: fc.array(fc.array(fateArb, { minLength: 3, maxLength: 10 }), { minLength: acquirers, maxLength: acquirers }),
    ticks: fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 5, maxLength: 30 }),
  });

/** Runs scheduled steps until none is left; before each, every chain reaches its next scheduled step. */
async function runAll(s: fc.Scheduler): Promise<void> {
  for (;;) {
    await new Promise((resolve) => setImmediate(resolve));
    if (s.count() === 0) return;
    await s.waitOne();
  }
}

/** Runs `scenario` on `store` and answers every grant seen (its end: a release's or revoke's now, else its expiry). */
export async function runPermitRace(
  s: fc.Scheduler,
  store: RaceStore,
  clock: ManualClock,
  scenario: RaceScenario,
): Promise<PermitGrantSeen[]> {
  const grants: PermitGrantSeen[] = [];
  const violations: string[] = [];
  /** `call` applied and answered when the scheduler says. */
  const scheduled =
    <A extends unknown[], R>(label: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await s.schedule(Promise.resolve(), `${label} applies`);
      const outcome = await call(...args);
      return s.schedule(Promise.resolve(outcome), `${label} answered`);
    };
  const acquire = scheduled('acquirePermit', (command: AcquirePermitCommand) => store.acquirePermit(command));
  const release = scheduled('release', store.release.bind(store));
  const revoke = scheduled('revoke', store.revoke.bind(store));
  const seen = (outcome: AcquirePermitOutcome, limit: number): PermitGrantSeen | null => {
    if (!outcome.ok) return null;
    const known = grants.find((grant) => grant.key === outcome.key && grant.token === outcome.token);
    if (known !== undefined) return known;
    const grant = {
      key: outcome.key,
      token: outcome.token,
      acquiredAt: outcome.acquiredAt,
      end: outcome.expiresAt ?? Number.POSITIVE_INFINITY,
      limit,
    };
    grants.push(grant);
    return grant;
  };
  const ended = (grant: PermitGrantSeen, outcome: { ok: boolean; now: number; alreadyReleased?: boolean }): void => {
    if (outcome.ok && outcome.alreadyReleased !== true) grant.end = Math.min(grant.end, outcome.now);
  };

  const acquirer = async (index: number, fates: readonly Fate[]): Promise<void> => {
    const holder = `w${index}`;
    for (const fate of fates) {
      const limit = scenario.limits?.[index] ?? scenario.limit;
      const command = permitCommand(SEMAPHORE, holder, limit, TTL_MS);
      let grant = seen(await acquire(command), limit);
      if (grant === null) continue;
      const fenceOf = (of: PermitGrantSeen): Fence => ({
        key: of.key,
        token: of.token,
        secret: command.secret,
        holder,
        runId: command.runId,
      });
      if (fate === 'crash') continue;
      if (fate === 'revoked') {
        ended(grant, await revoke({ key: grant.key, reason: 'race', by: 'ops', requireRecovery: false, expectedToken: grant.token }));
        continue;
      }
      if (fate === 'redeliver') {
        const again = await acquire(command);
        // NOTE: while the first grant lives, a re-delivery answers it; once it ended, the same command may be a new grant.
        if (again.ok && again.token !== grant.token && again.acquiredAt < grant.end)
          violations.push(
            `a re-delivery of ${holder}'s acquire answered ${again.key} ${again.token} while ${grant.key} ${grant.token} lived`,
          );
        grant = seen(again, limit) ?? grant;
      }
      if (fate === 'write-then-release') {
        // NOTE: the callback waits for the scheduler while the store holds the permit's key: an acquire must not grant it.
        await store.fencedWrite(fenceOf(grant), async () => {
          await s.schedule(Promise.resolve(), `${holder} writes ${grant?.key}`);
        });
      }
      ended(grant, await release({ fence: fenceOf(grant), ...(fate === 'release-hold' ? { holdMs: 20 } : {}) }));
    }
  };
  const ticker = async (): Promise<void> => {
    for (const ms of scenario.ticks) {
      await s.schedule(Promise.resolve(), `clock +${ms}`);
      clock.advance(ms);
    }
  };
  const all = Promise.all([...scenario.programs.map((fates, index) => acquirer(index, fates)), ticker()]);
  await runAll(s);
  await all;
  if (violations.length > 0) throw new Error(`semaphore race: ${violations.join('; ')}`);
  return grants;
}
