/**
 * Short chaos runs on etcd (the long ones: `npm run chaos -- --stores etcd,etcd-cluster`):
 * - `etcd-cluster / consensus`: 3 members on loopback, the leader SIGKILLed (first fault) and SIGSTOPped, a
 *   member restarted, quorum lost and regained, with Kleppmann pauses, worker kills and pauses; every check
 *   holds and NOTHING acknowledged is lost: the checker's "lost to failover" counts must be zero (Raft
 *   commits a grant or write on a majority before etcd acknowledges it).
 * - `etcd / kleppmann`, `restart` and `freeze` on one member: the deterministic pause refused, a kill -9 and
 *   restart on the data dir losing nothing, the whole server frozen.
 * `CHAOS_SEED` replays a fault schedule; `LEASEFENCE_TEST_SCALE` lengthens each run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatViolations } from './checker.js';
import { chaosSeed } from './prng.js';
import { runScenario, type RunResult } from './run.js';
import { SCENARIOS } from './scenarios.js';
import type { StoreKind } from './backend.js';
import { formatSummary } from './summary.js';
import { scaled } from '../support/scale.js';

const seed = chaosSeed();
const dir = mkdtempSync(join(tmpdir(), 'leasefence-chaos-etcd-'));
const results: RunResult[] = [];
let failed = false;

afterAll(() => {
  console.log(`\nchaos on etcd, seed ${seed} (replay with CHAOS_SEED=${seed})\n${formatSummary(results)}`);
  if (failed) console.log(`histories of the failing runs are kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
});

const scenario = (name: string) => {
  const found = SCENARIOS.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no scenario ${name}`);
  return found;
};

const RUNS: ReadonlyArray<readonly [StoreKind, string, number]> = [
  ['etcd-cluster', 'consensus', 15_000],
  ['etcd', 'kleppmann', 4_000],
  ['etcd', 'restart', 5_000],
  ['etcd', 'freeze', 4_000],
];

describe.sequential(`chaos on etcd (seed ${seed})`, () => {
  for (const [store, name, ms] of RUNS) {
    const chosen = scenario(name);
    it(`${store} / ${name}: ${chosen.summary}; every check holds, nothing acknowledged is lost`, {
      timeout: scaled(ms) + 240_000,
    }, async () => {
      const result = await runScenario({ store, scenario: chosen, seed, durationMs: scaled(ms), dir });
      results.push(result);
      const { report, crashes, kleppmann } = result;
      failed ||= !report.ok || crashes.length > 0;
      expect(crashes.map((crash) => `${crash.proc} exited ${crash.code ?? crash.signal}: ${crash.stderr.slice(-600)}`)).toEqual([]);
      expect(report.violations.length, `seed ${seed}, history in ${result.historyDir}\n${formatViolations(report.violations)}`).toBe(0);
      expect({
        grants: report.figures.grantsLostToFailover,
        writes: report.figures.writesLostToFailover,
        amnesia: report.figures.lostToAmnesia,
      }).toEqual({ grants: 0, writes: 0, amnesia: 0 });
      expect(report.figures.grants).toBeGreaterThan(5);
      expect(report.figures.writesAcked).toBeGreaterThan(10);
      expect(kleppmann.accepted).toBe(0);
      if (name === 'consensus') expect(report.figures.faults['failover'] ?? 0).toBeGreaterThan(0);
      if (name === 'kleppmann') {
        expect(kleppmann.rounds).toBeGreaterThan(0);
        expect(kleppmann.refused).toBe(kleppmann.rounds - kleppmann.unknown);
      }
      if (name === 'restart') expect(report.figures.faults['restart'] ?? 0).toBeGreaterThan(0);
    });
  }
});
