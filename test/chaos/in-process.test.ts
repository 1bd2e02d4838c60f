/**
 * The harness tested on itself, in one process over the memory store: the workload, recorder and checker
 * agree that a correct store keeps every guarantee (plain claims, and the election workload), and the checker catches an unfenced write when the
 * workers' clocks lie. (The multi-process runs against Postgres and Redis are in chaos.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store.js';
import { createMemoryChaos } from './backend-memory.js';
import { checkHistory, formatViolations, type RunFigures } from './checker.js';
import { HistoryWriter, readHistory } from './history.js';
import { Recorder } from './recorder.js';
import { Workload, type WorkloadHooks } from './workload.js';
import { delegatingStore } from './mutants.js';
import { pausable } from './in-process-fleet.js';
import { mutantRepeats } from '../support/repeats.js';

const dir = mkdtempSync(join(tmpdir(), 'leasefence-chaos-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What the forced Kleppmann pause of a run did. */
interface PauseRound {
  readonly key: string;
  /** The paused worker's token, and the token the rescuer took the key over with. */
  readonly heldToken: bigint;
  readonly rescuerToken: bigint | null;
  /** Whether the store accepted the paused worker's write (`null`: unknown). */
  readonly accepted: boolean | null;
}

let runs = 0;

/** Ceiling on a run's wall-clock time: reaching it means the machine starved the run, and the test says so. */
const RUN_CEILING_MS = 60_000;

/**
 * Runs four workers for at least `minMs` over the memory store, and until one forced Kleppmann pause has
 * completed and `enough` holds for the figures so far. The pause is made deterministic in-process: worker
 * w1 passes its own validity check, then every request it sends (its renewals too, as in a stopped process)
 * is held until a rescuer has taken the key over and written under a newer token; then w1 sends its write.
 */
async function runInProcess(
  name: string,
  options: {
    wrap?: (store: Store) => Store;
    rate: number;
    minMs: number;
    enough: (figures: RunFigures) => boolean;
    /** The workers campaign with `createElection` (the rescuer still takes the paused leader's key over). */
    election?: boolean;
  },
) {
  const chaos = createMemoryChaos();
  // NOTE: one history file per run, so that a repeated test never checks an earlier run's history.
  runs += 1;
  const path = join(dir, `${name}-${runs}.jsonl`);
  const writer = new HistoryWriter(path);
  const keys = ['k1', 'k2'];
  const victim = pausable();
  const wrap = (store: Store): Store => lateRenewals(options.wrap === undefined ? store : options.wrap(store));
  const config = (n: number) => ({
    proc: `w${n}`,
    keys,
    ttlMs: 120,
    seed: 7,
    writesPerGrant: [2, 8] as const,
    thinkMs: [5, 40] as const,
    idleMs: [5, 30] as const,
    skew: {
      rate: options.rate,
      jumps: [
        { atMs: 100 * n, offsetMs: -3000 },
        { atMs: 700 + 50 * n, offsetMs: -6000 },
      ],
    },
    badInputChance: 0.2,
    election: options.election === true,
  });
  const rescuer = new Workload(config(5), chaos.backend(wrap), new Recorder('w5', writer));
  let round = null as PauseRound | null;
  let paused = false;
  const hooks: WorkloadHooks = {
    beforeWrite: async (key, heldToken) => {
      if (paused) return false;
      paused = true;
      victim.pause();
      // NOTE: no sleep decides this: the rescuer retries its claim until the store's clock has expired w1's grant.
      const rescuerToken = await rescuer.takeover(key, RUN_CEILING_MS);
      round = { key, heldToken, rescuerToken, accepted: null };
      victim.resume();
      return true;
    },
    afterHeldWrite: (_key, _token, accepted) => {
      if (round !== null) round = { ...round, accepted };
    },
  };
  const workloads = [1, 2, 3, 4].map(
    (n) =>
      new Workload(
        config(n),
        chaos.backend((store) => (n === 1 ? victim.wrap(wrap(store)) : wrap(store))),
        new Recorder(`w${n}`, writer),
        n === 1 ? hooks : undefined,
      ),
  );
  const started = performance.now();
  const running = workloads.map((workload) => workload.run());
  const figures = () => checkHistory(readHistory(path), [], { takeoverBoundMs: null }).figures;
  while (performance.now() - started < RUN_CEILING_MS) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (performance.now() - started >= options.minMs && round !== null && round.accepted !== null && options.enough(figures())) break;
  }
  for (const workload of workloads) workload.stop();
  await Promise.all(running);
  writer.close();
  const report = checkHistory(readHistory(path), await chaos.admin.readFinal(keys), { takeoverBoundMs: null });
  return { report, round };
}

/** Network trouble in-process: now and then a renewal reaches the store late, after the grant ran out. */
const lateRenewals = (store: Store): Store => {
  let n = 0;
  return {
    ...delegatingStore(store),
    renew: async (c) => {
      n += 1;
      if (n % 3 === 0) await new Promise((resolve) => setTimeout(resolve, 200));
      return store.renew(c);
    },
  };
};

/** A planted bug: the fenced write runs the user's write without checking the fence. */
const unfencedWrite = (store: Store): Store => ({
  ...delegatingStore(store),
  fencedWrite: async (fence, write) => {
    const now = Date.now();
    return { ok: true, value: await write({ token: fence.token, now } as never), token: fence.token, checkpoint: null, now };
  },
});

describe('chaos harness, in-process over the memory store', () => {
  it('a correct store passes every check, with grants, takeovers, refusals and bad input exercised', {
    timeout: RUN_CEILING_MS + 30_000,
  }, async () => {
    const { report, round } = await runInProcess('correct', {
      rate: 0.3,
      minMs: 1500,
      enough: (figures) => figures.grants > 5 && figures.writesAcked > 10,
    });
    expect(report.violations, formatViolations(report.violations)).toEqual([]);
    // NOTE: the forced pause guarantees one takeover and one refused write, whatever the machine's speed.
    expect(round?.rescuerToken).toBeGreaterThan(round?.heldToken ?? Number.POSITIVE_INFINITY);
    expect(round?.accepted).toBe(false);
    expect(report.figures.grants).toBeGreaterThan(5);
    expect(report.figures.writesAcked).toBeGreaterThan(10);
    expect(report.figures.takeovers).toBeGreaterThan(0);
    expect(Object.keys(report.figures.refusals).length).toBeGreaterThan(0);
  });

  it('the election workload: one live term at a time, no accepted write from a deposed leader (paused, taken over, expired)', {
    timeout: RUN_CEILING_MS + 30_000,
  }, async () => {
    const { report, round } = await runInProcess('election', {
      rate: 0.3,
      minMs: 1500,
      election: true,
      enough: (figures) => figures.grants > 5 && figures.writesAcked > 10,
    });
    expect(report.violations, formatViolations(report.violations)).toEqual([]);
    // NOTE: the paused leader's key was taken over under a newer token, and its write after the pause refused.
    expect(round?.rescuerToken).toBeGreaterThan(round?.heldToken ?? Number.POSITIVE_INFINITY);
    expect(round?.accepted).toBe(false);
    expect(report.figures.grants).toBeGreaterThan(5);
    expect(report.figures.writesAcked).toBeGreaterThan(10);
    expect(report.figures.takeovers).toBeGreaterThan(0);
  });

  it('the checker catches a fenced write without the fence check when a paused worker writes after its grant was taken over', {
    timeout: RUN_CEILING_MS + 30_000,
    repeats: mutantRepeats(),
  }, async () => {
    const { report, round } = await runInProcess('unfenced', { wrap: unfencedWrite, rate: 0.3, minMs: 0, enough: () => true });
    // NOTE: the exposing event happened by construction: a newer grant was returned, then the older write landed.
    expect(round?.rescuerToken).toBeGreaterThan(round?.heldToken ?? Number.POSITIVE_INFINITY);
    expect(round?.accepted).toBe(true);
    expect(report.ok).toBe(false);
    const fired = report.violations.map((v) => v.check);
    expect(fired.filter((check) => check === 'stale-accepted' || check === 'expired-accepted').length).toBeGreaterThan(0);
  });

  it("the checker catches, in the election workload too, a deposed leader's write that an unfenced store accepted", {
    timeout: RUN_CEILING_MS + 30_000,
    repeats: mutantRepeats(),
  }, async () => {
    const { report, round } = await runInProcess('election-unfenced', {
      wrap: unfencedWrite,
      rate: 0.3,
      minMs: 0,
      enough: () => true,
      election: true,
    });
    expect(round?.rescuerToken).toBeGreaterThan(round?.heldToken ?? Number.POSITIVE_INFINITY);
    expect(round?.accepted).toBe(true);
    const fired = report.violations.map((v) => v.check);
    expect(fired.filter((check) => check === 'stale-accepted' || check === 'expired-accepted').length).toBeGreaterThan(0);
  });
});
