/**
 * A throwaway Sentinel setup for tests: one master and its replicas (`startRedis` servers, replicas with
 * `--replicaof`), and three Sentinels (`redis-server <conf> --sentinel`, quorum 2, `down-after-milliseconds`
 * short) on free loopback ports, each Sentinel with a temp dir for the config file it rewrites. Returned
 * once every replica's link is up and every Sentinel knows the replicas and the two other Sentinels.
 * `stop()` (and the exit of this process) stops every process and removes every temp dir; a failed start
 * stops what it started.
 *
 * ```ts
 * const setup = await startRedisSentinel();
 * const client = new Redis({ sentinels: setup.sentinels, name: setup.name });
 * await setup.stop();
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { adminConnections } from './redis-admin.js';
import { freePort, watchForOrphan } from './provision.js';
import { ping, startRedis, type RedisServer } from './redis-server.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A running Sentinel setup. */
export interface RedisSentinelSetup {
  /** The name the Sentinels monitor the master under. */
  readonly name: string;
  /** The data servers: the first one starts as the master. */
  readonly servers: readonly RedisServer[];
  /** `{ host, port }` of every Sentinel, as ioredis' `sentinels` option takes them. */
  readonly sentinels: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /** The master's port as the first answering Sentinel reports it. */
  masterPort(): Promise<number>;
  /** The server listening on `port`. */
  server(port: number): RedisServer;
  /** A plain admin connection to one data server; closed by `stop()`. */
  admin(port: number): Redis;
  /**
   * Waits until the Sentinels agree on a master that answers, every running server replicates from it
   * with its link up, and the Sentinels know every running replica.
   */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /** Stops every Sentinel and server and removes their dirs. Idempotent. */
  stop(): Promise<void>;
}

export interface StartRedisSentinelOptions {
  /** @default 1 */
  readonly replicas?: number;
  /** How long the master is unreachable before a Sentinel considers it down. @default 1_000 */
  readonly downAfterMs?: number;
}

/** One Sentinel process. */
interface Sentinel {
  readonly port: number;
  stop(): Promise<void>;
}

async function startSentinel(masterName: string, masterPort: number, downAfterMs: number): Promise<Sentinel> {
  const dir = mkdtempSync(join(tmpdir(), 'leasefence-sentinel-'));
  const port = await freePort();
  const config = join(dir, 'sentinel.conf');
  writeFileSync(
    config,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `pidfile ${join(dir, 'sentinel.pid')}`,
      `sentinel monitor ${masterName} 127.0.0.1 ${masterPort} 2`,
      `sentinel down-after-milliseconds ${masterName} ${downAfterMs}`,
      `sentinel failover-timeout ${masterName} 10000`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('redis-server', [config, '--sentinel'], { stdio: 'ignore' });
  let stopped = false;
  const cleanupOnExit = (): void => {
    if (stopped) return;
    stopped = true;
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanupOnExit);
  watchForOrphan('leasefence-sentinel-watchdog', dir, `kill -KILL "$(cat '${join(dir, 'sentinel.pid')}')"`);
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', cleanupOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  while (!(await ping(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis sentinel on port ${port} did not answer PING`);
    }
    await sleep(20);
  }
  return { port, stop };
}

/** Starts a throwaway Sentinel setup. See the module comment. */
export async function startRedisSentinel(options: StartRedisSentinelOptions = {}): Promise<RedisSentinelSetup> {
  const name = 'leasefence';
  const servers: RedisServer[] = [];
  const sentinels: Sentinel[] = [];
  const { admin, close: closeAdmins } = adminConnections();
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    closeAdmins();
    await Promise.all(sentinels.map((sentinel) => sentinel.stop()));
    await Promise.all(servers.map((server) => server.stop()));
  };

  /** Whether the setup is healthy (see `RedisSentinelSetup.waitUntilHealthy`). */
  const healthy = async (): Promise<boolean> => {
    const views = await Promise.all(
      sentinels.map(
        async (sentinel) =>
          (await admin(sentinel.port)
            .call('SENTINEL', 'MASTER', name)
            .catch(() => [])) as string[],
      ),
    );
    const field = (view: string[], name: string): string => String(view[view.indexOf(name) + 1]);
    const masterPorts = new Set(views.map((view) => field(view, 'port')));
    const running = servers.filter((server) => server.pid !== null);
    if (masterPorts.size !== 1 || !running.some((server) => masterPorts.has(String(server.port)))) return false;
    if (
      !views.every(
        (view) =>
          field(view, 'flags') === 'master' &&
          Number(field(view, 'num-other-sentinels')) === 2 &&
          Number(field(view, 'num-slaves')) >= running.length - 1,
      )
    )
      return false;
    const links = await Promise.all(
      running
        .filter((server) => !masterPorts.has(String(server.port)))
        .map(async (server) => {
          const info = String(
            await admin(server.port)
              .info('replication')
              .catch(() => ''),
          );
          return masterPorts.has(/master_port:(\d+)/.exec(info)?.[1] ?? '') && info.includes('master_link_status:up');
        }),
    );
    return links.every(Boolean);
  };
  const waitUntilHealthy = async (timeoutMs = 30_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!(await healthy())) {
      if (Date.now() > deadline) throw new Error(`sentinel setup not healthy within ${timeoutMs} ms`);
      await sleep(100);
    }
  };

  try {
    const master = await startRedis({ persistence: 'none' });
    servers.push(master);
    for (let index = 0; index < (options.replicas ?? 1); index += 1) {
      servers.push(await startRedis({ persistence: 'none', extraArgs: ['--replicaof', master.host, String(master.port)] }));
    }
    for (let index = 0; index < 3; index += 1) sentinels.push(await startSentinel(name, master.port, options.downAfterMs ?? 1_000));
    await waitUntilHealthy();
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    name,
    servers,
    sentinels: sentinels.map((sentinel) => ({ host: '127.0.0.1', port: sentinel.port })),
    async masterPort() {
      for (const sentinel of sentinels) {
        const address = (await admin(sentinel.port)
          .call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)
          .catch(() => null)) as string[] | null;
        if (address !== null) return Number(address[1]);
      }
      throw new Error('no sentinel answers');
    },
    server(port) {
      const found = servers.find((server) => server.port === port);
      if (found === undefined) throw new Error(`no server on port ${port}`);
      return found;
    },
    admin,
    waitUntilHealthy,
    stop,
  };
}
