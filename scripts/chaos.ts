/**
 * The long chaos run: `npm run chaos -- --duration 600`.
 *
 * Repeats every scenario (both stores, one after the other) with a fresh derived seed per round until the
 * total duration is spent, then prints the summary table and exits non-zero on any violation. Failing runs
 * keep their JSONL histories (the path is printed); `CHAOS_SEED=<seed>` replays the fault schedule.
 *
 * Options: --duration <s> (total, default 600), --scenario-duration <s> (default 30), --stores postgres,redis,sqlite
 * (also memory and pglite: an in-process fleet, for the kleppmann, crash and expiry-skew scenarios; and
 * redis-cluster: a 3+3 Redis Cluster, and redis-sentinel: a master, a replica and 3 Sentinels, each shared by
 * its runs, with the `failover` scenario's master kills; and postgres-promotion: a primary and standby per run,
 * the standby promoted once; and etcd: one etcd member, and etcd-cluster: 3 etcd members per run, with the
 * `consensus` scenario's leader kills, leader freezes, member restarts and quorum losses, where an acknowledged
 * grant or write lost counts as a violation),
 * --clients pg,postgres-js,ioredis,node-redis (the drivers the workers mix, by slot; default: all of each store),
 * --scenarios kleppmann,crash,... , --seed <n> (same as CHAOS_SEED), --keep (keep every history),
 * --variant unfenced-write|blind-renew|racy-claim (run a planted bug: the run must report violations),
 * --workload election (the server stores' workers campaign with createElection instead of claiming keys;
 * the checker's guarantees are the same: one live grant, i.e. term, at a time and no stale write accepted),
 * --workload queue (--stores memory,postgres,redis,sqlite,etcd; test/chaos/queue.ts: claim-next + idempotent
 * submissions with lost replies, pauses and crashes, each run a --scenario-duration fault phase and a drain;
 * a store without claim-next runs submit-only, as does every store with --submit-only; planted bugs:
 * --variant unrecorded-submission|unfenced-write),
 * --workload semaphore (--stores memory,postgres,redis,sqlite; test/chaos/semaphore.ts: 8 workers acquiring permits
 * of one semaphore, limit 3 (2 in shrunk windows), a fenced write under each grant, with lost replies, crashes,
 * pauses past the TTL, operator revokes and the connection nemesis; each run a --scenario-duration fault phase; a
 * store without acquirePermit is reported unsupported and skipped; planted bugs: --variant
 * over-limit|uncounted-above-limit|unfenced-write|racy-acquire, the last one on any store, with or without
 * acquirePermit).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLIENTS, type ClientKind, type StoreKind } from '../test/chaos/backend.js';
import { formatViolations } from '../test/chaos/checker.js';
import { MUTANTS, type MutantName } from '../test/chaos/mutants.js';
import { chaosSeed, createRandom } from '../test/chaos/prng.js';
import { runScenario, type RunResult } from '../test/chaos/run.js';
import { SCENARIOS, scenariosFor } from '../test/chaos/scenarios.js';
import { runInProcessScenario, runsInProcess, type InProcessStore } from '../test/chaos/in-process-fleet.js';
import { formatSummary } from '../test/chaos/summary.js';
import { QUEUE_STORES, QUEUE_VARIANTS, runQueueWorkload, type QueueRunResult, type QueueVariant } from '../test/chaos/queue.js';
import { formatQueueViolations } from '../test/chaos/queue-checker.js';
import {
  SEMAPHORE_STORES,
  SEMAPHORE_VARIANTS,
  runSemaphoreWorkload,
  type SemaphoreRunResult,
  type SemaphoreVariant,
} from '../test/chaos/semaphore.js';
import { formatSemaphoreViolations } from '../test/chaos/semaphore-checker.js';
import { etcdRunUrl } from '../test/chaos/backend-etcd.js';
import { CHAOS_USAGE, ChaosUsageError, parseChaosOptions, type ChaosCatalog, type ChaosOptions } from './chaos-options.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { startRedis } from '../test/support/redis-server.js';
import { startRedisCluster, type RedisCluster } from '../test/support/redis-cluster.js';
import { startRedisSentinel, type RedisSentinelSetup } from '../test/support/redis-sentinel.js';
import { startEtcd } from '../test/support/etcd-server.js';

/** Stores whose failovers must lose nothing: every acknowledged grant or write lost there is a violation. */
const consensus = (store: StoreKind | InProcessStore): boolean => store === 'etcd' || store === 'etcd-cluster';
const lostOf = (result: RunResult): number => result.report.figures.grantsLostToFailover + result.report.figures.writesLostToFailover;
const inProcess = (store: StoreKind | InProcessStore): store is InProcessStore => store === 'memory' || store === 'pglite';
const SERVER_STORES = Object.keys(CLIENTS) as StoreKind[];
const CATALOG: ChaosCatalog = {
  scenarios: {
    ...Object.fromEntries(SERVER_STORES.map((store) => [store, scenariosFor(store).map((scenario) => scenario.name)])),
    ...Object.fromEntries(
      (['memory', 'pglite'] as const).map((store) => [store, SCENARIOS.filter(runsInProcess).map((scenario) => scenario.name)]),
    ),
  },
  clients: CLIENTS,
  variants: MUTANTS,
  queue: { stores: QUEUE_STORES, variants: QUEUE_VARIANTS },
  semaphore: { stores: SEMAPHORE_STORES, variants: SEMAPHORE_VARIANTS },
};
let options: ChaosOptions;
try {
  options = parseChaosOptions(process.argv.slice(2), CATALOG);
} catch (error) {
  if (!(error instanceof ChaosUsageError)) throw error;
  console.error(`chaos: ${error.message}\n${CHAOS_USAGE}`);
  process.exit(2);
}
const { totalMs, scenarioMs } = options;
const only = options.scenarios;
const stores = options.stores as Array<StoreKind | InProcessStore>;
/** The drivers to mix (each store takes those of its own among them); default: every driver of each store. */
const clients = options.clients as ClientKind[] | undefined;
const clientsOf = (store: StoreKind): readonly ClientKind[] => {
  const chosen = clients?.filter((client) => CLIENTS[store].includes(client)) ?? [];
  return chosen.length > 0 ? chosen : CLIENTS[store];
};
const seed = options.seed === undefined ? chaosSeed() : chaosSeed({ CHAOS_SEED: options.seed });
const variant = options.variant as MutantName | null;
const dir = mkdtempSync(join(tmpdir(), 'leasefence-chaos-'));
const log = (line: string): void => console.log(line);

if (options.workload === 'queue') process.exit(await runQueue());
if (options.workload === 'semaphore') process.exit(await runSemaphore());

log(
  `leasefence chaos: total ${totalMs / 1000} s, ${scenarioMs / 1000} s per scenario, stores ${stores.join(', ')}, seed ${seed} (replay: CHAOS_SEED=${seed})`,
);
const started = performance.now();
const results: RunResult[] = [];
const shared = new Map<StoreKind, { url: string; stop(): Promise<void> }>();
let sharedCluster: RedisCluster | null = null;
let sharedSentinel: RedisSentinelSetup | null = null;
const startShared = async (store: StoreKind): Promise<void> => {
  await shared
    .get(store)
    ?.stop()
    .catch(() => undefined);
  // NOTE: SQLite has no server: each run makes its own database file; a promotion run its own primary and standby.
  if (store === 'sqlite' || store === 'postgres-promotion' || store === 'postgres-pgbouncer' || store === 'etcd-cluster') return;
  if (store === 'redis-cluster') {
    await sharedCluster?.stop().catch(() => undefined);
    sharedCluster = await startRedisCluster();
    return;
  }
  if (store === 'redis-sentinel') {
    await sharedSentinel?.stop().catch(() => undefined);
    sharedSentinel = await startRedisSentinel();
    return;
  }
  shared.set(
    store,
    store === 'postgres' ? await startPostgres() : store === 'etcd' ? await startEtcd() : await startRedis({ persistence: 'aof' }),
  );
};
/** Runs that could not complete (a server gone from under the harness, say): reported, and they fail the run. */
const harnessErrors: string[] = [];
let round = 0;
try {
  for (const store of stores) if (!inProcess(store)) await startShared(store);
  const seeds = createRandom(seed).fork('rounds');
  // NOTE: the first round always runs whole; later rounds stop when the duration is spent.
  while (round === 0 || performance.now() - started < totalMs) {
    round += 1;
    const roundSeed = round === 1 ? seed : seeds.int(0, 2 ** 32 - 1);
    log(`round ${round} (seed ${roundSeed})`);
    for (const store of stores) {
      const scenarios = inProcess(store) ? SCENARIOS.filter(runsInProcess) : scenariosFor(store);
      for (const scenario of scenarios) {
        if (only !== null && !only.includes(scenario.name)) continue;
        if (round > 1 && performance.now() - started >= totalMs) break;
        let result: RunResult;
        try {
          result = inProcess(store)
            ? await runInProcessScenario({ store, scenario, seed: roundSeed, durationMs: scenarioMs, dir, log })
            : await runScenario({
                store,
                scenario,
                seed: roundSeed,
                durationMs: scenarioMs,
                variant,
                election: options.workload === 'election',
                dir,
                sharedUrl: shared.get(store)?.url ?? null,
                sharedCluster,
                sharedSentinel,
                clients: clientsOf(store),
                log,
              });
        } catch (error) {
          const message = `${store} ${scenario.name} (seed ${roundSeed}): ${error instanceof Error ? error.message : String(error)}`;
          harnessErrors.push(message);
          log(`    HARNESS ERROR ${message}; restarting the shared ${store} server`);
          if (!inProcess(store)) await startShared(store);
          continue;
        }
        results.push(result);
        const { violations, figures } = result.report;
        const faults = Object.entries(figures.faults)
          .map(([name, count]) => `${name} ${count}`)
          .join(', ');
        log(
          `    ${figures.operations} ops, ${figures.grants} grants, ${figures.unknown} unknown; faults: ${faults || 'none'}; ${violations.length} violations`,
        );
        if (consensus(store) && lostOf(result) > 0)
          log(`    ${lostOf(result)} acknowledged grant(s) or write(s) LOST on a consensus store (a violation)`);
        if (result.diedInWrite.applied > 0)
          log(`    ${result.diedInWrite.applied} write(s) of workers killed before COMMIT are in the store`);
        if (violations.length > 0) log(`    history kept in ${result.historyDir}\n${formatViolations(violations)}`);
        for (const crash of result.driverCrashes)
          log(`    driver crash ${crash.proc} (a known driver bug, see KNOWN_DRIVER_CRASHES in test/chaos/fleet.ts)`);
        for (const crash of result.crashes) log(`    WORKER CRASH ${crash.proc} (exit ${crash.code ?? crash.signal}):\n${crash.stderr}`);
      }
    }
    // NOTE: the table so far after every round, so an interrupted long run still leaves its figures.
    log(`after round ${round}, ${((performance.now() - started) / 1000).toFixed(0)} s:\n${formatSummary(results)}`);
  }
} finally {
  for (const server of shared.values()) await server.stop().catch(() => undefined);
  // NOTE: assigned inside startShared, which the compiler's narrowing does not follow.
  await (sharedCluster as RedisCluster | null)?.stop().catch(() => undefined);
  await (sharedSentinel as RedisSentinelSetup | null)?.stop().catch(() => undefined);
}

const violations =
  results.reduce(
    (sum, result) =>
      sum +
      result.report.violations.length +
      result.crashes.length +
      result.diedInWrite.applied +
      (consensus(result.store) ? lostOf(result) : 0),
    0,
  ) + harnessErrors.length;
log(`\n${formatSummary(results)}`);
log(
  `\n${results.length} scenario runs in ${((performance.now() - started) / 1000).toFixed(0)} s, seed ${seed}, ${violations} violations, worker crashes and harness errors`,
);
for (const error of harnessErrors) log(`harness error: ${error}`);
if (violations === 0 && !options.keep) rmSync(dir, { recursive: true, force: true });
else log(`histories in ${dir}`);
// NOTE: with a planted bug, finding violations is the success.
process.exit((violations === 0) === (variant === null) ? 0 : 1);

/** `--workload queue`: rounds of one queue run per store until the duration is spent; exit as the main loop does. */
async function runQueue(): Promise<number> {
  const queueVariant = variant as QueueVariant | null;
  log(
    `leasefence chaos, queue workload: total ${totalMs / 1000} s, ${scenarioMs / 1000} s fault phase per run, stores ${stores.join(', ')}, seed ${seed} (replay: CHAOS_SEED=${seed})${queueVariant === null ? '' : `, planted bug ${queueVariant}`}`,
  );
  const started = performance.now();
  const results: QueueRunResult[] = [];
  const errors: string[] = [];
  const servers = new Map<string, { url: string; stop(): Promise<void> }>();
  try {
    for (const store of stores)
      if (store === 'postgres') servers.set(store, await startPostgres());
      else if (store === 'redis') servers.set(store, await startRedis({ persistence: 'aof' }));
      else if (store === 'etcd') servers.set(store, await startEtcd());
    const seeds = createRandom(seed).fork('queue-rounds');
    for (let round = 1; round === 1 || performance.now() - started < totalMs; round += 1) {
      const roundSeed = round === 1 ? seed : seeds.int(0, 2 ** 32 - 1);
      for (const store of stores as Array<(typeof QUEUE_STORES)[number]>) {
        if (round > 1 && performance.now() - started >= totalMs) break;
        const server = servers.get(store)?.url ?? null;
        // NOTE: SQLite's database and etcd's gate (unused here, but the backend opens it) are files of the run.
        const url =
          store === 'sqlite'
            ? join(dir, `queue-${round}.db`)
            : store === 'etcd' && server !== null
              ? etcdRunUrl([server], join(dir, `queue-gate-${round}.db`))
              : server;
        try {
          const result = await runQueueWorkload({
            store,
            url,
            seed: roundSeed,
            durationMs: scenarioMs,
            variant: queueVariant,
            submitOnly: options.submitOnly,
            ...(clients === undefined ? {} : { clients }),
            log,
          });
          results.push(result);
          const f = result.figures;
          log(
            `  round ${round} ${store} ${result.mode} (seed ${roundSeed}): ${f.items} items, ${f.grants} grants (${f.unreleased} ended unreleased), ${f.submissions} runs submitted: ${f.applied} applied, ${f.replayed} replayed, ${f.refused} refused (${f.conflicts} replay-conflict), ${f.lostReplies} requests/replies lost; ${result.mode === 'queue' ? `${f.abandonedRecorded} abandoned runs recorded, ${f.finalized} finalized, ${result.blocked} blocked for recovery; ` : ''}${result.connectionKills} connections cut, ${result.driverUnknowns} submissions answered by a driver error; ${result.violations.length} violations`,
          );
          if (result.violations.length > 0) log(formatQueueViolations(result.violations.slice(0, 20)));
        } catch (error) {
          const message = `${store} (seed ${roundSeed}): ${error instanceof Error ? error.message : String(error)}`;
          errors.push(message);
          log(`  HARNESS ERROR ${message}`);
        }
      }
    }
  } finally {
    for (const server of servers.values()) await server.stop().catch(() => undefined);
  }
  const violations = results.reduce((sum, result) => sum + result.violations.length, 0) + errors.length;
  log(
    `\n${results.length} queue runs in ${((performance.now() - started) / 1000).toFixed(0)} s, seed ${seed}, ${violations} violations and harness errors`,
  );
  rmSync(dir, { recursive: true, force: true });
  // NOTE: with a planted bug, finding violations is the success (in every run).
  if (queueVariant !== null) return errors.length === 0 && results.every((result) => result.violations.length > 0) ? 0 : 1;
  return violations === 0 ? 0 : 1;
}

/**
 * `--workload semaphore`: rounds of one semaphore run per store until the duration is spent; a store without
 * `acquirePermit` is reported unsupported once and not run again. Exits as the main loop does.
 */
async function runSemaphore(): Promise<number> {
  const byRule = (violations: SemaphoreRunResult['violations']): string => {
    const counts = new Map<string, number>();
    for (const violation of violations) counts.set(violation.rule, (counts.get(violation.rule) ?? 0) + 1);
    return counts.size === 0 ? '' : ` (${[...counts].map(([rule, count]) => `${rule} ${count}`).join(', ')})`;
  };
  const semaphoreVariant = variant as SemaphoreVariant | null;
  log(
    `leasefence chaos, semaphore workload: total ${totalMs / 1000} s, ${scenarioMs / 1000} s fault phase per run, stores ${stores.join(', ')}, seed ${seed} (replay: CHAOS_SEED=${seed})${semaphoreVariant === null ? '' : `, planted bug ${semaphoreVariant}`}`,
  );
  const started = performance.now();
  const results: SemaphoreRunResult[] = [];
  const unsupported = new Set<string>();
  const errors: string[] = [];
  const servers = new Map<string, { url: string; stop(): Promise<void> }>();
  try {
    for (const store of stores)
      if (store === 'postgres') servers.set(store, await startPostgres());
      else if (store === 'redis') servers.set(store, await startRedis({ persistence: 'aof' }));
    const seeds = createRandom(seed).fork('semaphore-rounds');
    for (let round = 1; round === 1 || performance.now() - started < totalMs; round += 1) {
      const roundSeed = round === 1 ? seed : seeds.int(0, 2 ** 32 - 1);
      const runnable = (stores as Array<(typeof SEMAPHORE_STORES)[number]>).filter((store) => !unsupported.has(store));
      if (runnable.length === 0) break;
      for (const store of runnable) {
        if (round > 1 && performance.now() - started >= totalMs) break;
        // NOTE: SQLite's database is a file of the run.
        const url = store === 'sqlite' ? join(dir, `semaphore-${round}.db`) : (servers.get(store)?.url ?? null);
        try {
          const result = await runSemaphoreWorkload({
            store,
            url,
            seed: roundSeed,
            durationMs: scenarioMs,
            variant: semaphoreVariant,
            ...(clients === undefined ? {} : { clients }),
            log,
          });
          if (!result.supported) {
            unsupported.add(store);
            log(`  round ${round} ${store}: skipped from now on`);
            continue;
          }
          results.push(result);
          const f = result.figures as NonNullable<SemaphoreRunResult['figures']>;
          log(
            `  round ${round} ${store} (seed ${roundSeed}): ${f.grants} grants (${f.lowLimitGrants} under the lowered limit, at most ${f.mostLive} live), ${result.full} answered full, ${result.redelivered} re-delivered, ${f.released} released, ${f.revoked} revoked, ${f.unreleased} ended unreleased; ${f.writes} writes: ${f.applied} applied, ${f.refused} refused, ${f.lostReplies} replies lost; ${result.connectionKills} connections cut, ${result.driverUnknowns} calls answered by a driver error; ${result.violations.length} violations${byRule(result.violations)}`,
          );
          if (result.violations.length > 0) log(formatSemaphoreViolations(result.violations.slice(0, 20)));
        } catch (error) {
          const message = `${store} (seed ${roundSeed}): ${error instanceof Error ? error.message : String(error)}`;
          errors.push(message);
          log(`  HARNESS ERROR ${message}`);
        }
      }
    }
  } finally {
    for (const server of servers.values()) await server.stop().catch(() => undefined);
  }
  const violations = results.reduce((sum, result) => sum + result.violations.length, 0) + errors.length;
  log(
    `\n${results.length} semaphore runs in ${((performance.now() - started) / 1000).toFixed(0)} s, seed ${seed}, ${violations} violations and harness errors${unsupported.size === 0 ? '' : `; unsupported (no acquirePermit), skipped: ${[...unsupported].join(', ')}`}`,
  );
  rmSync(dir, { recursive: true, force: true });
  // NOTE: with a planted bug, finding violations is the success (in every run).
  if (semaphoreVariant !== null)
    return errors.length === 0 && results.length > 0 && results.every((result) => result.violations.length > 0) ? 0 : 1;
  // NOTE: a run that ran nothing (every store unsupported) proves nothing: it fails.
  return violations === 0 && results.length > 0 ? 0 : 1;
}
