/**
 * Chaos on the replicated topologies: a Redis Cluster (3 masters + 3 replicas, one for the file; workers on
 * ioredis' `Cluster`), Sentinel (a master, a replica, 3 Sentinels; workers on ioredis asking the Sentinels),
 * and a Postgres primary with an asynchronous streaming standby (pg and postgres.js workers through a proxy
 * that follows the promotion: the primary crashed, the standby promoted, once per run, first). On Redis the
 * nemesis kills the master serving a key (the first fault of a run, then drawn with Kleppmann
 * pauses, worker kills and pauses), a replica is promoted and the killed node rejoins as a replica. A failover
 * may lose acknowledged grants and writes (asynchronous replication): the checker counts them apart and still
 * fails every real violation; a planted bug run through a promotion must be caught (above LEASEFENCE_TEST_SCALE=1).
 * The long runs:
 * `npm run chaos -- --stores redis-cluster` / `redis-sentinel` / `postgres-promotion`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { startRedisSentinel, type RedisSentinelSetup } from '../support/redis-sentinel.js';
import { CLIENTS } from './backend.js';
import { checkHistory, formatViolations } from './checker.js';
import type { FinalKeyState } from './history.js';
import { assembleOps } from './ops.js';
import { chaosSeed } from './prng.js';
import { readHistories, runScenario, type RunProgress, type RunResult } from './run.js';
import { SCENARIOS } from './scenarios.js';
import { formatSummary } from './summary.js';
import { measuring, scaled } from '../support/scale.js';

const seed = chaosSeed();
const dir = mkdtempSync(join(tmpdir(), 'leasefence-chaos-cluster-'));
process.env['LEASEFENCE_RACY_CLAIM_DIR'] = join(dir, 'racy-claim');
const results: RunResult[] = [];
let failed = false;
let cluster: RedisCluster | null = null;
let sentinel: RedisSentinelSetup | null = null;

const failover = SCENARIOS.find((scenario) => scenario.name === 'failover');
const promotion = SCENARIOS.find((scenario) => scenario.name === 'promotion');
if (failover === undefined || promotion === undefined) throw new Error('no failover or promotion scenario');

/** Fenced writes invoked after the run's first failover started that the final store holds. */
function writesKeptAfterFailover(historyDir: string): number {
  const ops = assembleOps(readHistories(historyDir));
  const first = ops.find((op) => op.op === 'failover');
  if (first === undefined) return 0;
  const final = JSON.parse(readFileSync(join(historyDir, 'final.json'), 'utf8')) as FinalKeyState[];
  const kept = new Set(final.flatMap((state) => state.ledger.map((entry) => entry.reqId)));
  return ops.filter((op) => op.op === 'write' && op.start > first.start && kept.has(op.reqId)).length;
}

beforeAll(async () => {
  [cluster, sentinel] = await Promise.all([startRedisCluster(), startRedisSentinel()]);
}, 120_000);

afterAll(async () => {
  await Promise.all([cluster?.stop(), sentinel?.stop()]);
  console.log(`\nchaos on Redis Cluster and Sentinel, seed ${seed} (replay with CHAOS_SEED=${seed})\n${formatSummary(results)}`);
  if (failed) console.log(`histories of the failing runs are kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
});

describe.sequential(`chaos on Redis Cluster and Sentinel (seed ${seed})`, () => {
  for (const [store, scenario] of [
    ['redis-cluster', failover],
    ['redis-sentinel', failover],
    ['postgres-promotion', promotion],
  ] as const) {
    it(`${store} / ${scenario.name} (${CLIENTS[store].join(' + ')}): ${scenario.summary}; every check holds`, {
      timeout: 300_000,
    }, async () => {
      const result = await runScenario({
        store,
        scenario,
        seed,
        durationMs: scaled(scenario.shortMs ?? 6_000),
        dir,
        sharedCluster: cluster,
        sharedSentinel: sentinel,
      });
      results.push(result);
      const { report, crashes } = result;
      failed ||= !report.ok || crashes.length > 0;
      expect(crashes.map((crash) => `${crash.proc} exited ${crash.code ?? crash.signal}: ${crash.stderr.slice(-600)}`)).toEqual([]);
      expect(report.violations.length, `seed ${seed}, history in ${result.historyDir}\n${formatViolations(report.violations)}`).toBe(0);
      expect(report.figures.faults['failover']).toBeGreaterThan(0);
      // The workers found the promoted master: a fenced write sent after the first kill is in the final store.
      expect(writesKeptAfterFailover(result.historyDir)).toBeGreaterThan(0);
      expect(report.figures.grants).toBeGreaterThan(5);
      expect(report.figures.writesAcked).toBeGreaterThan(10);
      expect(result.kleppmann.accepted).toBe(0);
    });
  }

  // NOTE: the racy claim's read-write gap is held open until a second claimer has read (mutants.ts), so two
  // claims of a free key collide by construction; the run's first fault is the failover, so the allowances of
  // the lost-by-design mode are in force when the checker looks. On the Postgres promotion: its failover
  // takes 0.3 s where a cluster's takes 5-10 s (same check: `npm run chaos -- --stores redis-cluster
  // --variant racy-claim`).
  // NOTE: outside npm test's budget (60 s for the topologies), run above LEASEFENCE_TEST_SCALE=1; in npm test
  // the same mode meets its planted bugs in checker.test.ts, forced into synthetic histories.
  it.runIf(measuring())(
    'a planted bug (racy-claim) run through a promotion is caught: token-reused / two-live-grants / token-order',
    { timeout: 300_000 },
    async () => {
      const exposed = async (progress: RunProgress): Promise<boolean> => {
        const final = await progress.readFinal();
        return checkHistory(readHistories(progress.historyDir), final, { takeoverBoundMs: null }).violations.some(
          (violation) => violation.check === 'token-reused',
        );
      };
      const result = await runScenario({
        store: 'postgres-promotion',
        scenario: promotion,
        seed,
        durationMs: 60_000,
        dir,
        variant: 'racy-claim',
        stopWhen: exposed,
      });
      results.push(result);
      const fired = new Set(result.report.violations.map((violation) => violation.check));
      expect(result.report.figures.faults['failover']).toBeGreaterThan(0);
      expect(
        ['token-reused', 'two-live-grants', 'token-order'].some((check) => fired.has(check)),
        `fired: ${[...fired].join(', ')}`,
      ).toBe(true);
    },
  );
});
