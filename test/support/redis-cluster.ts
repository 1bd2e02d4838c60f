/**
 * A throwaway Redis Cluster for tests: 3 masters + 3 replicas (by default), each a `startRedis` server in
 * cluster mode on a free loopback port with its own temp dir, joined with `redis-cli --cluster create`,
 * returned once every node reports `cluster_state:ok`, agrees on who serves every slot, and every replica's
 * link to its master is up. `stop()` (and the exit of this process, through `startRedis`) stops every node
 * and removes its dir; a failed start stops the nodes it started.
 *
 * Failover is fast: `cluster-node-timeout` is short, and `cluster-replica-validity-factor 0` lets a replica
 * that lost its master long ago (frozen, on purpose) still take over, as the failover tests need.
 *
 * ```ts
 * const cluster = await startRedisCluster();
 * const client = new Cluster(cluster.seeds);
 * const master = await cluster.masterOf(clusterSlot('{job:42}'));
 * await cluster.stop();
 * ```
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { adminConnections } from './redis-admin.js';
import { freePort } from './provision.js';
import { startRedis, type RedisServer } from './redis-server.js';

const run = promisify(execFile);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One line of `CLUSTER NODES`, as seen by a live node. */
export interface ClusterNodeInfo {
  readonly id: string;
  readonly port: number;
  readonly role: 'master' | 'replica';
  /** Flagged `fail` (or `fail?`) by the node that answered. */
  readonly failing: boolean;
  /** The master's node id (replicas), else `null`. */
  readonly masterId: string | null;
  /** The slot ranges it serves (masters), `[first, last]` inclusive. */
  readonly slots: ReadonlyArray<readonly [number, number]>;
}

/** A running throwaway Redis Cluster. */
export interface RedisCluster {
  /** Every node server, in creation order (their roles change with failovers: ask `topology()`). */
  readonly servers: readonly RedisServer[];
  /** Startup nodes for cluster clients: `{ host, port }` of every node. */
  readonly seeds: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /** The server listening on `port`. */
  server(port: number): RedisServer;
  /** `CLUSTER NODES` as seen by the first node that answers. */
  topology(): Promise<ClusterNodeInfo[]>;
  /** The master serving `slot` (as the first answering node sees it). */
  masterOf(slot: number): Promise<ClusterNodeInfo>;
  /** The replicas of the master with id `masterId`. */
  replicasOf(masterId: string): Promise<ClusterNodeInfo[]>;
  /** A plain (non-cluster) admin connection to one node; closed by `stop()`. */
  admin(port: number): Redis;
  /**
   * Starts moving `slot` to the master on port `to`: `IMPORTING` on the target, then `MIGRATING` on the
   * source. Keys then move with the returned `migrate` / `migrateRest`, and `finish` assigns the slot.
   */
  moveSlot(slot: number, to: number): Promise<SlotMove>;
  /** Waits until every running node says `cluster_state:ok` and they all agree on every slot's master. */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /** Stops every node and removes its dir. Idempotent. */
  stop(): Promise<void>;
}

/** A slot being moved between masters (see `RedisCluster.moveSlot`). */
export interface SlotMove {
  /** The source master's port. */
  readonly from: number;
  /** The target master's port. */
  readonly to: number;
  /** Moves these keys of the slot now (`MIGRATE ... KEYS`), atomically per call. */
  migrate(keys: readonly string[]): Promise<void>;
  /** Moves every key left in the slot; returns how many. */
  migrateRest(): Promise<number>;
  /** Assigns the slot to the target (`CLUSTER SETSLOT ... NODE`: target, source, then every other master). */
  finish(): Promise<void>;
}

export interface StartRedisClusterOptions {
  /** @default 3 */
  readonly masters?: number;
  /** @default 1 */
  readonly replicasPerMaster?: number;
  /** `cluster-node-timeout`: how long a node is unreachable before it is failed over. @default 1_500 */
  readonly nodeTimeoutMs?: number;
}

/** Parses `CLUSTER NODES`. */
export function parseClusterNodes(text: string): ClusterNodeInfo[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', address = '', flags = '', master = '-', , , , , ...slots] = line.trim().split(' ');
      const flagList = flags.split(',');
      return {
        id,
        port: Number(/:(\d+)/.exec(address)?.[1]),
        role: flagList.includes('master') ? ('master' as const) : ('replica' as const),
        failing: flagList.includes('fail') || flagList.includes('fail?'),
        masterId: master === '-' ? null : master,
        slots: slots
          .filter((range) => /^\d/.test(range))
          .map((range) => {
            const [first = '', last = first] = range.split('-');
            return [Number(first), Number(last)] as const;
          }),
      };
    });
}

/** Starts a throwaway cluster. See the module comment. */
export async function startRedisCluster(options: StartRedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const size = masters * (1 + (options.replicasPerMaster ?? 1));
  const extraArgs = [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-node-timeout',
    String(options.nodeTimeoutMs ?? 1_500),
    '--cluster-replica-validity-factor',
    '0',
  ];
  /** One node; its cluster bus port is chosen here (the default, port + 10000, may be taken or past 65535). */
  const startNode = async (): Promise<RedisServer> => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await startRedis({ persistence: 'none', extraArgs: [...extraArgs, '--cluster-port', String(await freePort())] });
      } catch (error) {
        if (attempt >= 3) throw error;
      }
    }
  };
  const started = await Promise.allSettled(Array.from({ length: size }, startNode));
  const servers = started.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : []));
  const { admin, close: closeAdmins } = adminConnections();
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    closeAdmins();
    await Promise.all(servers.map((server) => server.stop()));
  };

  const ask = async (port: number, ...args: string[]): Promise<string | null> => {
    try {
      return String(await admin(port).call(args[0] ?? '', ...args.slice(1)));
    } catch {
      return null;
    }
  };
  const running = (): RedisServer[] => servers.filter((server) => server.pid !== null);

  const topology = async (): Promise<ClusterNodeInfo[]> => {
    for (const server of running()) {
      const text = await ask(server.port, 'CLUSTER', 'NODES');
      if (text !== null) return parseClusterNodes(text);
    }
    throw new Error('no cluster node answers CLUSTER NODES');
  };

  /** Whether every running node is ok and they all name the same master for every slot. */
  const healthy = async (): Promise<boolean> => {
    const views = new Set<string>();
    for (const server of running()) {
      if (!(await ask(server.port, 'CLUSTER', 'INFO'))?.includes('cluster_state:ok')) return false;
      const text = await ask(server.port, 'CLUSTER', 'NODES');
      if (text === null) return false;
      const nodes = parseClusterNodes(text);
      const owners = nodes
        .filter((node) => node.role === 'master' && !node.failing && node.slots.length > 0)
        .map((node) => `${node.port}:${JSON.stringify(node.slots)}`);
      views.add(owners.sort().join(' '));
      // NOTE: a replica is only useful for failover once its link to its master is up; a restarted master
      // stays a master without slots until it has heard of its replacement, and only then starts to replicate.
      const replication = await ask(server.port, 'INFO', 'replication');
      if (replication?.includes('role:slave') && !replication.includes('master_link_status:up')) return false;
      const myself = nodes.find((node) => node.port === server.port);
      if (replication?.includes('role:master') && (myself === undefined || myself.slots.length === 0)) return false;
    }
    return views.size === 1;
  };

  const waitUntilHealthy = async (timeoutMs = 30_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!(await healthy())) {
      if (Date.now() > deadline)
        throw new Error(
          `redis cluster not healthy within ${timeoutMs} ms:\n${await topology().then((nodes) => JSON.stringify(nodes), String)}`,
        );
      await sleep(50);
    }
  };

  try {
    const failure = started.find((start) => start.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    const addresses = servers.map((server) => `${server.host}:${server.port}`);
    await run(
      'redis-cli',
      ['--cluster', 'create', ...addresses, '--cluster-replicas', String(options.replicasPerMaster ?? 1), '--cluster-yes'],
      { timeout: 60_000 },
    );
    await waitUntilHealthy();
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    servers,
    seeds: servers.map((server) => ({ host: server.host, port: server.port })),
    server(port) {
      const found = servers.find((server) => server.port === port);
      if (found === undefined) throw new Error(`no cluster node on port ${port}`);
      return found;
    },
    topology,
    async masterOf(slot) {
      // NOTE: right after a failover, the node asked may not have heard of the promotion yet (its view still
      // has the dead master, flagged failing, and no other master for the slot): ask again until one does.
      const deadline = Date.now() + 30_000;
      for (;;) {
        const master = (await topology()).find(
          (node) => node.role === 'master' && !node.failing && node.slots.some(([first, last]) => first <= slot && slot <= last),
        );
        if (master !== undefined) return master;
        if (Date.now() > deadline) throw new Error(`no master serves slot ${slot} within 30 s`);
        await sleep(50);
      }
    },
    async replicasOf(masterId) {
      return (await topology()).filter((node) => node.masterId === masterId);
    },
    admin,
    async moveSlot(slot, to) {
      const nodes = await topology();
      const source = nodes.find((node) => node.role === 'master' && node.slots.some(([first, last]) => first <= slot && slot <= last));
      const target = nodes.find((node) => node.port === to && node.role === 'master');
      if (source === undefined || target === undefined || source.port === to) throw new Error(`cannot move slot ${slot} to ${to}`);
      const call = (port: number, ...args: string[]): Promise<unknown> => admin(port).call(args[0] ?? '', ...args.slice(1));
      // NOTE: the order Redis documents: IMPORTING on the target before MIGRATING on the source.
      await call(to, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', source.id);
      await call(source.port, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', target.id);
      const migrate = async (keys: readonly string[]): Promise<void> => {
        if (keys.length > 0) await call(source.port, 'MIGRATE', '127.0.0.1', String(to), '', '0', '5000', 'KEYS', ...keys);
      };
      return {
        from: source.port,
        to,
        migrate,
        async migrateRest() {
          let moved = 0;
          for (;;) {
            const keys = (await call(source.port, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '100')) as string[];
            if (keys.length === 0) return moved;
            await migrate(keys);
            moved += keys.length;
          }
        },
        async finish() {
          await call(to, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id);
          await call(source.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id);
          for (const other of nodes.filter(
            (node) => node.role === 'master' && !node.failing && node.port !== to && node.port !== source.port,
          )) {
            await call(other.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id);
          }
        },
      };
    },
    waitUntilHealthy,
    stop,
  };
}
