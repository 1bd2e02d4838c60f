/**
 * A throwaway single-member etcd for tests and benchmarks: free loopback ports (client and peer), a temp
 * dir for its data, fsync as etcd does by default. `stop()` (and the exit of this process) kills it and
 * removes the temp dir; a detached watchdog does the same if this process dies without running its exit
 * hooks. Never touches a system-wide instance or the default ports.
 *
 * When etcd is not installed, root installs it from the OS packages (`apt-get install -y etcd-server`,
 * Debian's etcd 3.4); anyone else gets an error saying how.
 *
 * ```ts
 * const server = await startEtcd();
 * const client = new Etcd3({ hosts: server.url });
 * await server.kill(); // a crash; restart() brings it back with its data
 * await server.stop();
 * ```
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOrInstall, freePort, watchForOrphan } from './provision.js';

/** A running throwaway etcd member. */
export interface EtcdServer {
  readonly host: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>` (the client URL). */
  readonly url: string;
  /** The member's data dir's parent; removed by `stop()`. */
  readonly dir: string;
  /** The etcd process id, or `null` while it is not running. */
  readonly pid: number | null;
  /** Stops etcd (SIGTERM, then SIGKILL after 5 s) and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Kills etcd at once (SIGKILL): a crash. `restart()` brings it back with its data. */
  kill(): Promise<void>;
  /** Stops etcd if running (SIGTERM) and starts it again on the same ports and data dir. */
  restart(): Promise<void>;
}

/** The etcd binary, installing the OS package as root when none is present. */
export function findEtcdBinary(): string {
  return findOrInstall(
    'etcd-server',
    installedBinary,
    'etcd not found on PATH. Install it with `sudo apt-get update && sudo apt-get install -y etcd-server` (Debian/Ubuntu) ' +
      'or `brew install etcd` (macOS), or download a release from https://github.com/etcd-io/etcd/releases and put `etcd` on PATH.',
  );
}

function installedBinary(): string | null {
  for (const candidate of ['/usr/bin/etcd', '/usr/local/bin/etcd']) if (existsSync(candidate)) return candidate;
  const which = spawnSync('which', ['etcd'], { encoding: 'utf8' });
  const path = which.status === 0 ? which.stdout.trim() : '';
  return path === '' ? null : path;
}

/** Whether the member at `url` answers its `/health` endpoint with health true. */
export async function etcdHealthy(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) });
    const body = (await response.json()) as { health?: unknown };
    return body.health === 'true' || body.health === true;
  } catch {
    return false;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts a throwaway single-member etcd. See the module comment. */
export async function startEtcd(): Promise<EtcdServer> {
  const binary = findEtcdBinary();
  const dir = mkdtempSync(join(tmpdir(), 'leasefence-etcd-'));
  const pidFile = join(dir, 'etcd.pid');
  let child: ChildProcess | null = null;
  let stopped = false;
  let port = 0;
  let peerPort = 0;
  let output = '';

  const cleanupOnExit = (): void => {
    if (stopped) return;
    stopped = true;
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanupOnExit);

  const url = (): string => `http://127.0.0.1:${port}`;
  const peerUrl = (): string => `http://127.0.0.1:${peerPort}`;
  const args = (): string[] => [
    '--name', 'member-1',
    '--data-dir', join(dir, 'data'),
    '--listen-client-urls', url(),
    '--advertise-client-urls', url(),
    '--listen-peer-urls', peerUrl(),
    '--initial-advertise-peer-urls', peerUrl(),
    '--initial-cluster', `member-1=${peerUrl()}`,
    '--initial-cluster-state', 'new',
    '--initial-cluster-token', `leasefence-${port}`,
    '--logger', 'zap',
    '--log-level', 'error',
  ];

  const launch = async (): Promise<void> => {
    output = '';
    const started = spawn(binary, args(), { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    writeFileSync(pidFile, String(started.pid));
    started.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
    started.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (started.exitCode !== null || started.signalCode !== null) throw new Error(`etcd exited during start:\n${output}`);
      if (await etcdHealthy(url())) return;
      await sleep(50);
    }
    started.kill('SIGKILL');
    throw new Error(`etcd did not report healthy within 30 s:\n${output}`);
  };

  const halt = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    if (running === null) return;
    child = null;
    running.kill(signal);
    const timer = setTimeout(() => running.kill('SIGKILL'), 5_000);
    await exited(running);
    clearTimeout(timer);
  };

  for (let attempt = 1; ; attempt += 1) {
    port = await freePort();
    peerPort = await freePort();
    try {
      await launch();
      // NOTE: the pid file is rewritten by each launch, so the watchdog finds the member across restart().
      watchForOrphan('leasefence-etcd-watchdog', dir, `kill -KILL "$(cat '${pidFile}')"`);
      break;
    } catch (error) {
      // NOTE: another process may take a port between probing and binding; try other ones.
      await halt('SIGKILL');
      rmSync(join(dir, 'data'), { recursive: true, force: true });
      if (attempt >= 3) {
        cleanupOnExit();
        throw error;
      }
    }
  }

  const host = '127.0.0.1';
  return {
    host,
    port,
    url: url(),
    dir,
    get pid() {
      return child?.pid ?? null;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', cleanupOnExit);
      await halt('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
    async kill() {
      await halt('SIGKILL');
    },
    async restart() {
      if (stopped) throw new Error('etcd was stopped; start a new one');
      await halt('SIGTERM');
      await launch();
    },
  };
}
