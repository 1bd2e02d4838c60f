/**
 * Runs one chaos scenario against one store: start (or reuse) the server, put a fault proxy in front of
 * each worker, fork the workers, let the nemesis inject faults for the duration, heal everything, stop the
 * workers, read the store's final state and check the merged history.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { startPgBouncer } from '../support/pgbouncer.js';
import { startPostgres } from '../support/postgres-server.js';
import { startRedis } from '../support/redis-server.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { startRedisSentinel, type RedisSentinelSetup } from '../support/redis-sentinel.js';
import { startEtcd, startEtcdCluster, type EtcdCluster, type EtcdMember } from '../support/etcd-server.js';
import { etcdRunUrl } from './backend-etcd.js';
import { startPostgresReplica } from '../support/postgres-replica.js';
import { ROLE_TIMEOUTS } from './backend-postgres.js';
import { clusterUrl, redisRecordKey, sentinelUrl } from './backend-redis.js';
import { CLIENTS, type ClientKind, type StoreAdmin, type StoreKind } from './backend.js';
import { createAdmin } from './backends.js';
import { checkHistory, type CheckReport } from './checker.js';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';
import { Fleet, type WorkerCrash } from './fleet.js';
import type { InProcessStore } from './in-process-fleet.js';
import { decodeEntry, diedInWritePath, HistoryWriter, readHistory, type FinalKeyState, type HistoryEvent } from './history.js';
import type { MutantName } from './mutants.js';
import {
  inject,
  type FailoverServer,
  type FreezableServer,
  type KleppmannTally,
  type NemesisContext,
  type RestartableServer,
} from './nemesis.js';
import { createRandom, type Random } from './prng.js';
import { Recorder } from './recorder.js';
import { TTL_MS, type Scenario } from './scenarios.js';
import { randomSkew } from './skew.js';

/** One scenario run: which store, which faults, how long, with which seed. */
export interface RunOptions {
  readonly store: StoreKind;
  readonly scenario: Scenario;
  readonly seed: number;
  readonly durationMs: number;
  /** A planted bug in every worker (`null`: the real adapter). */
  readonly variant?: MutantName | null;
  /** The workers campaign for the keys with `createElection` instead of claiming them. @default false */
  readonly election?: boolean;
  /** Where the JSONL histories go (one sub-directory per run). */
  readonly dir: string;
  /** A running server to use when the scenario does not need its own. */
  readonly sharedUrl?: string | null;
  /** A running Redis Cluster to use (`redis-cluster`), so a file's scenarios share one cluster's startup. */
  readonly sharedCluster?: RedisCluster | null;
  /** A running Sentinel setup to use (`redis-sentinel`). */
  readonly sharedSentinel?: RedisSentinelSetup | null;
  /**
   * The drivers of the workers, by slot (slot i uses `clients[i % length]`), so one run mixes them on one
   * store. Planted bugs always run on the store's first driver.
   * @default every driver of the store (CLIENTS)
   */
  readonly clients?: readonly ClientKind[];
  readonly log?: (line: string) => void;
  /**
   * Checked after each fault: once it holds, the run stops early (`durationMs` is then a ceiling). Planted-bug
   * tests stop as soon as the exposing event is in the history, instead of hoping a fixed window holds it.
   */
  readonly stopWhen?: (progress: RunProgress) => Promise<boolean>;
}

/** What `stopWhen` sees of a run in progress. */
export interface RunProgress {
  readonly kleppmann: KleppmannTally;
  readonly historyDir: string;
  /** Reads the store's state of the run's keys now (as at the end of a run). */
  readFinal(): Promise<FinalKeyState[]>;
}

/** What a run produced: the checker's verdict and figures, the pauses, the crashes. */
export interface RunResult {
  /** The store (the in-process runs: `memory`, `pglite`). */
  readonly store: StoreKind | InProcessStore;
  readonly scenario: string;
  readonly variant: MutantName | null;
  readonly seed: number;
  readonly durationMs: number;
  readonly historyDir: string;
  readonly report: CheckReport;
  readonly kleppmann: KleppmannTally;
  /** Worker processes that died on their own (each one fails the run). */
  readonly crashes: readonly WorkerCrash[];
  /** Worker processes killed by a known driver bug (fleet.ts `KNOWN_DRIVER_CRASHES`): reported, respawned. */
  readonly driverCrashes: readonly WorkerCrash[];
  /**
   * Workers killed inside a fenced write, holding its transaction open (`kill-in-write`), and how many of
   * those uncommitted writes are in the store anyway (must be 0).
   */
  readonly diedInWrite: { readonly died: number; readonly applied: number };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface ServerHandle {
  readonly url: string;
  /** Where the harness's admin connects, when not `url` (behind a pooler: the server itself). */
  readonly adminUrl?: string;
  readonly restartable: RestartableServer | null;
  readonly freezable: FreezableServer | null;
  readonly failover?: FailoverServer;
  stop(): Promise<void>;
}

/**
 * Master kills behind Sentinel: the master is SIGKILLed, the Sentinels promote the replica, and the killed
 * server is restarted (empty, no persistence): the Sentinels make it a replica of the new master.
 */
export function sentinelFailover(setup: RedisSentinelSetup): FailoverServer {
  return {
    failOver: async () => {
      const port = await setup.masterPort();
      const victim = setup.server(port);
      await victim.kill();
      const deadline = Date.now() + 60_000;
      while ((await setup.masterPort().catch(() => port)) === port) {
        if (Date.now() > deadline) throw new Error(`the Sentinels did not promote a replica of ${port} within 60 s`);
        await sleep(50);
      }
      await victim.restart();
      await setup.waitUntilHealthy(60_000);
    },
  };
}

/**
 * Master kills on a Redis Cluster: the master serving the key's record is SIGKILLed, a replica takes its
 * slots, and the killed node is restarted (empty, no persistence: it rejoins as a replica and resyncs).
 */
export function clusterFailover(cluster: RedisCluster): FailoverServer {
  return {
    failOver: async (key) => {
      const slot = clusterSlot(redisRecordKey(key));
      const master = await cluster.masterOf(slot);
      const victim = cluster.server(master.port);
      await victim.kill();
      const deadline = Date.now() + 60_000;
      while ((await cluster.masterOf(slot).catch(() => master)).port === master.port) {
        if (Date.now() > deadline) throw new Error(`no replica took slot ${slot} over from ${master.port} within 60 s`);
        await sleep(50);
      }
      await victim.restart();
      await cluster.waitUntilHealthy(60_000);
    },
  };
}

/** The member the others follow, waiting up to `ms` for an election. */
async function etcdLeader(cluster: EtcdCluster, ms = 60_000): Promise<EtcdMember> {
  const deadline = Date.now() + ms;
  for (;;) {
    const leader = await cluster.leader();
    if (leader !== null) return leader;
    if (Date.now() > deadline) throw new Error(`the etcd cluster elected no leader within ${ms} ms`);
    await sleep(50);
  }
}

/**
 * Faults of a 3-member etcd cluster: leader kills (SIGKILL, wait for a new leader, restart the killed member on
 * its data dir), quorum loss (two members SIGKILLed, restarted after a while), leader freezes (SIGSTOP), and
 * member restarts (a random member SIGKILLed and restarted). Every member keeps its data: Raft loses nothing.
 */
export function etcdClusterFaults(
  cluster: EtcdCluster,
  random: Random,
): { failover: FailoverServer; freezable: FreezableServer; restartable: RestartableServer } {
  const restartAll = async (members: readonly EtcdMember[]): Promise<void> => {
    // NOTE: together: a member alone has no quorum and would not report healthy.
    await Promise.all(members.map((member) => member.restart()));
    await etcdLeader(cluster);
  };
  return {
    failover: {
      failOver: async () => {
        const victim = await etcdLeader(cluster);
        await victim.kill();
        const deadline = Date.now() + 60_000;
        while ((await cluster.leader()) === null) {
          if (Date.now() > deadline) throw new Error(`no etcd member took over from ${victim.name} within 60 s`);
          await sleep(50);
        }
        await restartAll([victim]);
      },
      loseQuorum: async (ms) => {
        const leader = await etcdLeader(cluster);
        const others = cluster.members.filter((member) => member !== leader);
        const victims = [leader, random.pick(others)];
        for (const victim of victims) await victim.kill();
        await sleep(ms);
        await restartAll(victims);
      },
    },
    freezable: {
      freeze: async (ms) => {
        const leader = await etcdLeader(cluster);
        leader.pause();
        try {
          await sleep(ms);
        } finally {
          leader.resume();
        }
      },
    },
    restartable: {
      losesData: false,
      crashAndRestart: async () => {
        const victim = random.pick(cluster.members);
        await victim.kill();
        await restartAll([victim]);
      },
    },
  };
}

/** Sends `signal` to each pid, skipping processes that are gone. */
function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // NOTE: a backend that exited between listing and signalling.
    }
  }
}

/**
 * Freezes a server whole: `head` first (the postmaster, so it forks no new backend while the rest are
 * listed), then every process `rest` lists; SIGCONT in reverse order, always.
 */
function freezer(head: () => Promise<number | null>, rest: () => Promise<readonly number[]>): FreezableServer {
  return {
    freeze: async (ms) => {
      const stopped: number[] = [];
      try {
        const first = await head();
        if (first !== null) {
          signalAll([first], 'SIGSTOP');
          stopped.push(first);
        }
        const others = (await rest()).filter((pid) => pid !== first);
        signalAll(others, 'SIGSTOP');
        stopped.push(...others);
        await sleep(ms);
      } finally {
        signalAll([...stopped].reverse(), 'SIGCONT');
      }
    },
  };
}

async function openServer(options: RunOptions, historyDir: string): Promise<ServerHandle> {
  const { scenario, store } = options;
  if (store === 'sqlite') {
    // NOTE: no server: the workers share one WAL database file, as processes on one VM would.
    return { url: join(historyDir, 'leases.db'), restartable: null, freezable: null, stop: async () => undefined };
  }
  if (store === 'postgres-promotion') {
    const pair = await startPostgresReplica();
    try {
      // NOTE: workers and admin reach the primary through one proxy, retargeted to the standby once promoted, as a
      // virtual IP or a failover manager's DNS would.
      const front = await startFaultProxy(pair.primary.port);
      let promoted = false;
      const failover: FailoverServer = {
        failOver: async () => {
          if (promoted) return;
          promoted = true;
          await pair.crashPrimary();
          await pair.promote();
          front.retarget(pair.standby.port);
        },
      };
      const stop = async (): Promise<void> => {
        await front.close();
        await pair.stop();
      };
      return { url: withPort(pair.primary.url, front.port), restartable: null, freezable: null, failover, stop };
    } catch (error) {
      await pair.stop();
      throw error;
    }
  }
  if (store === 'redis-sentinel') {
    const shared = options.sharedSentinel ?? null;
    const setup = shared ?? (await startRedisSentinel());
    return {
      url: sentinelUrl(setup.sentinels, setup.name),
      restartable: null,
      freezable: null,
      failover: sentinelFailover(setup),
      stop: async () => (shared === null ? setup.stop() : undefined),
    };
  }
  if (store === 'redis-cluster') {
    const shared = options.sharedCluster ?? null;
    const cluster = shared ?? (await startRedisCluster());
    return {
      url: clusterUrl(cluster.seeds),
      restartable: null,
      freezable: null,
      failover: clusterFailover(cluster),
      stop: async () => (shared === null ? cluster.stop() : undefined),
    };
  }
  if (store === 'postgres-pgbouncer') return openPooledPostgres();
  if (store === 'etcd-cluster') {
    const cluster = await startEtcdCluster(3);
    const faults = etcdClusterFaults(cluster, createRandom(options.seed).fork('etcd-members'));
    return {
      url: etcdRunUrl(cluster.urls, join(historyDir, 'gate.db')),
      restartable: faults.restartable,
      freezable: faults.freezable,
      failover: faults.failover,
      stop: () => cluster.stop(),
    };
  }
  if (store === 'etcd') {
    // NOTE: the gated resource lives outside etcd, in a SQLite file of the run (backend-etcd.ts).
    const gateFile = join(historyDir, 'gate.db');
    if (!scenario.ownServer && options.sharedUrl !== undefined && options.sharedUrl !== null) {
      return { url: etcdRunUrl([options.sharedUrl], gateFile), restartable: null, freezable: null, stop: async () => undefined };
    }
    const server = await startEtcd();
    return {
      url: etcdRunUrl([server.url], gateFile),
      restartable: {
        losesData: false,
        crashAndRestart: async () => {
          await server.kill();
          await server.restart();
        },
      },
      freezable: freezer(
        async () => server.pid,
        async () => [],
      ),
      stop: () => server.stop(),
    };
  }
  if (!scenario.ownServer && options.sharedUrl !== undefined && options.sharedUrl !== null) {
    return { url: options.sharedUrl, restartable: null, freezable: null, stop: async () => undefined };
  }
  if (store === 'postgres') {
    const server = await startPostgres();
    return {
      url: server.url,
      restartable: { losesData: false, crashAndRestart: () => server.restart('immediate') },
      // NOTE: `pids()` lists the postmaster first, then its children (backends, checkpointer, walwriter, ...).
      freezable: freezer(
        async () => (await server.pids())[0] ?? null,
        () => server.pids(),
      ),
      stop: () => server.stop(),
    };
  }
  const server = await startRedis({ persistence: scenario.redisPersistence });
  return {
    url: server.url,
    restartable: {
      losesData: scenario.redisPersistence === 'none',
      crashAndRestart: async () => {
        await server.kill();
        await server.restart();
      },
    },
    freezable: freezer(
      async () => server.pid,
      async () => [],
    ),
    stop: () => server.stop(),
  };
}

/**
 * A server of its own behind a PgBouncer in transaction mode: the workers reach it through the pooler, the
 * admin directly, and the nemesis's `restart` kills the pooler and starts it again on the same port (every
 * client and server connection cut; the database untouched).
 */
async function openPooledPostgres(): Promise<ServerHandle> {
  const server = await startPostgres();
  try {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    for (const setting of ROLE_TIMEOUTS) await admin.query(`ALTER ROLE CURRENT_USER SET ${setting}`);
    await admin.end();
    const bouncer = await startPgBouncer(server.url, { poolMode: 'transaction', poolSize: 10 });
    return {
      url: bouncer.url,
      adminUrl: server.url,
      restartable: { losesData: false, crashAndRestart: () => bouncer.restart() },
      freezable: null,
      stop: async () => {
        await bouncer.stop();
        await server.stop();
      },
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

const withPort = (url: string, port: number): string => {
  const parsed = new URL(url);
  parsed.port = String(port);
  return parsed.toString();
};

/** Runs one scenario; never leaves a process, proxy or server behind. */
export async function runScenario(options: RunOptions): Promise<RunResult> {
  const { store, scenario, seed, durationMs } = options;
  const variant = options.variant ?? null;
  const random = createRandom(seed).fork(`${store}:${scenario.name}:${variant ?? 'real'}`);
  const runName = `${store}-${scenario.name}${variant === null ? '' : `-${variant}`}-${seed}-${Date.now().toString(36)}`;
  const historyDir = join(options.dir, runName);
  mkdirSync(historyDir, { recursive: true });
  const keys = Array.from({ length: scenario.keys }, (_, i) => `chaos:${runName}:k${i}`);
  const server = await openServer(options, historyDir);
  const clients = variant === null ? (options.clients ?? CLIENTS[store]) : CLIENTS[store].slice(0, 1);
  const proxies: FaultProxy[] = [];
  let admin: StoreAdmin | null = null;
  let fleet: Fleet | null = null;
  const writer = new HistoryWriter(join(historyDir, 'nemesis.jsonl'));
  try {
    admin = await createAdmin(store, server.adminUrl ?? server.url);
    if (scenario.proxies && store !== 'sqlite') {
      const port = Number(new URL(server.url).port);
      for (let i = 0; i < scenario.workers; i += 1) proxies.push(await startFaultProxy(port));
    }
    const workerRandom = random.fork('workers');
    fleet = new Fleet((slot, proc) => ({
      store,
      url: scenario.proxies ? withPort(server.url, (proxies[slot] as FaultProxy).port) : server.url,
      client: clients[slot % clients.length] as ClientKind,
      variant,
      historyPath: join(historyDir, `${proc}.jsonl`),
      workload: {
        proc,
        keys,
        ttlMs: TTL_MS,
        seed: workerRandom.int(0, 2 ** 31),
        writesPerGrant: [2, 8],
        thinkMs: [10, 80],
        idleMs: [20, 120],
        skew: scenario.skewedClocks ? randomSkew(workerRandom.fork(proc), durationMs) : null,
        badInputChance: 0.05,
        election: options.election === true,
      },
    }));
    await fleet.start(scenario.workers);
    options.log?.(
      `  ${store} ${scenario.name}${variant === null ? '' : ` [${variant}]`}: ${scenario.workers} workers (${clients.join(', ')}) up, faults for ${durationMs} ms (seed ${seed})`,
    );
    const kleppmann: KleppmannTally = { rounds: 0, refused: 0, accepted: 0, unknown: 0, noTakeover: 0 };
    const context: NemesisContext = {
      store,
      fleet,
      proxies: scenario.proxies ? proxies : null,
      admin,
      server: server.restartable,
      freezable: server.freezable,
      failover: server.failover ?? null,
      keys,
      random: random.fork('nemesis'),
      recorder: new Recorder('nemesis', writer),
      ttlMs: TTL_MS,
      kleppmann,
      respawns: [],
    };
    const faults = scenario.faults.filter(
      (fault) => (fault !== 'script-flush' || store === 'redis') && (fault !== 'kill-in-write' || (store !== 'redis' && store !== 'etcd')),
    );
    const until = performance.now() + durationMs;
    const respawned = new Set<WorkerCrash>();
    let first = scenario.firstFault ?? null;
    while (performance.now() < until) {
      await sleep(context.random.int(...scenario.faultGapMs));
      if (performance.now() >= until && first === null) break;
      await inject(context, first ?? context.random.pick(faults));
      first = null;
      const storeAdmin = admin;
      if (
        options.stopWhen !== undefined &&
        (await options.stopWhen({ kleppmann, historyDir, readFinal: () => storeAdmin.readFinal(keys) }))
      )
        break;
      // NOTE: a crashed worker is reported, and respawned like a supervisor would, so the run goes on.
      const crashed = [...fleet.crashes, ...fleet.driverCrashes];
      for (const crash of crashed.filter((candidate) => !respawned.has(candidate))) {
        respawned.add(crash);
        const slot = fleet.slots.find((worker) => worker.proc === crash.proc);
        if (slot !== undefined) context.respawns.push(fleet.respawn(slot).catch(() => undefined));
      }
    }
    await Promise.allSettled(context.respawns);
    for (const proxy of proxies) {
      proxy.heal();
      proxy.latency(0);
    }
    await fleet.stop();
    // NOTE: let held bytes and aborted sessions settle before the final read.
    await sleep(300);
    const final = await admin.readFinal(keys);
    writeFileSync(join(historyDir, 'final.json'), JSON.stringify(final));
    const history = readHistories(historyDir);
    const report = checkHistory(history, final, { takeoverBoundMs: scenario.takeoverBoundMs });
    return {
      store,
      scenario: scenario.name,
      variant,
      seed,
      durationMs,
      historyDir,
      report,
      kleppmann,
      crashes: [...fleet.crashes],
      driverCrashes: [...fleet.driverCrashes],
      diedInWrite: diedInWrite(historyDir, final),
    };
  } finally {
    await fleet?.stop(1000).catch(() => undefined);
    writer.close();
    for (const proxy of proxies) await proxy.close().catch(() => undefined);
    await admin?.close().catch(() => undefined);
    await server.stop().catch(() => undefined);
  }
}

/** The writes whose workers died inside them (see `diedInWritePath`), and how many the store holds. */
function diedInWrite(dir: string, final: readonly FinalKeyState[]): RunResult['diedInWrite'] {
  const path = diedInWritePath(dir);
  const entries = existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
    : [];
  const stored = new Set(final.flatMap((state) => state.ledger.map((entry) => entry.reqId)));
  return { died: entries.length, applied: entries.filter((entry) => stored.has(decodeEntry(entry).reqId)).length };
}

/** Merges every JSONL file of a run. */
export function readHistories(dir: string): HistoryEvent[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.jsonl'))
    .flatMap((name) => readHistory(join(dir, name)));
}
