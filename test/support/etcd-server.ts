/**
 * A throwaway etcd for tests and benchmarks: a single member (`startEtcd`) or a cluster on loopback
 * (`startEtcdCluster`), free loopback ports (client and peer) per member, a temp dir for the data, fsync
 * as etcd does by default. `stop()` (and the exit of this process) kills every member and removes the temp
 * dir; a detached watchdog does the same if this process dies without running its exit hooks. Never
 * touches a system-wide instance or the default ports.
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

/** A running throwaway single-member etcd. */
export interface EtcdServer {
  readonly host: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>` (the client URL). */
  readonly url: string;
  /** The temp dir holding the data dir; removed by `stop()`. */
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

/** One member of a throwaway cluster: its process can be killed, paused and restarted with its data. */
export interface EtcdMember {
  readonly name: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>` (the client URL). */
  readonly url: string;
  /** The process id, or `null` while the member is not running. */
  readonly pid: number | null;
  /** Kills the member at once (SIGKILL): a crash. */
  kill(): Promise<void>;
  /** SIGSTOP: the process freezes (a long pause, a stalled VM) until `resume()` (SIGCONT). */
  pause(): void;
  resume(): void;
  /** Starts the member again with its data dir (after a clean SIGTERM stop if it is running). */
  restart(): Promise<void>;
}

/** A running throwaway cluster. */
export interface EtcdCluster {
  readonly members: readonly EtcdMember[];
  /** Every member's client URL, for a client that fails over between them. */
  readonly urls: readonly string[];
  readonly dir: string;
  /** The member the others follow now, as a running member reports it (`null`: no leader known). */
  leader(): Promise<EtcdMember | null>;
  /** Stops every member (SIGTERM, then SIGKILL after 5 s) and removes the temp dir. Idempotent. */
  stop(): Promise<void>;
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

/** Whether the member at `url` answers its `/health` endpoint with health true (it has a leader and quorum). */
export async function etcdHealthy(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) });
    const body = (await response.json()) as { health?: unknown };
    return body.health === 'true' || body.health === true;
  } catch {
    return false;
  }
}

/** The member's own id and its leader's, through etcd's JSON gateway (`null`: no answer). */
async function statusOf(url: string): Promise<{ member: string; leader: string } | null> {
  try {
    const response = await fetch(`${url}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(1_000) });
    const body = (await response.json()) as { header?: { member_id?: string }; leader?: string };
    const member = body.header?.member_id;
    return member === undefined || body.leader === undefined || body.leader === '0' ? null : { member, leader: body.leader };
  } catch {
    return null;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

const urlOf = (port: number): string => `http://127.0.0.1:${port}`;

interface MemberPorts {
  readonly name: string;
  readonly port: number;
  readonly peerPort: number;
}

/** Launches a cluster's members on `ports` and waits until every one reports healthy; throws (leaving processes to `halt`) otherwise. */
async function launchCluster(
  binary: string,
  dir: string,
  ports: readonly MemberPorts[],
  children: Map<string, ChildProcess>,
): Promise<(member: MemberPorts) => Promise<void>> {
  const initialCluster = ports.map(({ name, peerPort }) => `${name}=${urlOf(peerPort)}`).join(',');
  const outputs = new Map<string, string>();
  const args = ({ name, port, peerPort }: MemberPorts): string[] => [
    '--name',
    name,
    '--data-dir',
    join(dir, name),
    '--listen-client-urls',
    urlOf(port),
    '--advertise-client-urls',
    urlOf(port),
    '--listen-peer-urls',
    urlOf(peerPort),
    '--initial-advertise-peer-urls',
    urlOf(peerPort),
    '--initial-cluster',
    initialCluster,
    '--initial-cluster-state',
    'new',
    '--initial-cluster-token',
    `leasefence-${ports[0]!.port}`,
    '--logger',
    'zap',
    '--log-level',
    'error',
  ];
  const spawnMember = (member: MemberPorts): ChildProcess => {
    const started = spawn(binary, args(member), { stdio: ['ignore', 'pipe', 'pipe'] });
    children.set(member.name, started);
    writeFileSync(join(dir, `${member.name}.pid`), String(started.pid));
    outputs.set(member.name, '');
    const keep = (chunk: Buffer): void =>
      void outputs.set(member.name, ((outputs.get(member.name) ?? '') + chunk.toString()).slice(-4_000));
    started.stdout?.on('data', keep);
    started.stderr?.on('data', keep);
    return started;
  };
  /** Waits until the member reports healthy (it needs a quorum of the others running). */
  const healthy = async (member: MemberPorts, started: ChildProcess): Promise<void> => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (started.exitCode !== null || started.signalCode !== null)
        throw new Error(`etcd ${member.name} exited during start:\n${outputs.get(member.name)}`);
      if (await etcdHealthy(urlOf(member.port))) return;
      await sleep(50);
    }
    throw new Error(`etcd ${member.name} did not report healthy within 30 s:\n${outputs.get(member.name)}`);
  };
  const started = ports.map((member) => spawnMember(member));
  await Promise.all(ports.map((member, i) => healthy(member, started[i]!)));
  return async (member) => healthy(member, spawnMember(member));
}

/** Starts a throwaway cluster of `size` members (3 by default) on loopback. See the module comment. */
export async function startEtcdCluster(size = 3): Promise<EtcdCluster> {
  const binary = findEtcdBinary();
  const dir = mkdtempSync(join(tmpdir(), 'leasefence-etcd-'));
  const children = new Map<string, ChildProcess>();
  let stopped = false;

  const cleanupOnExit = (): void => {
    if (stopped) return;
    stopped = true;
    for (const child of children.values()) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanupOnExit);

  const halt = async (name: string, signal: NodeJS.Signals): Promise<void> => {
    const running = children.get(name);
    if (running === undefined) return;
    children.delete(name);
    running.kill('SIGCONT');
    running.kill(signal);
    const timer = setTimeout(() => running.kill('SIGKILL'), 5_000);
    await exited(running);
    clearTimeout(timer);
  };
  const haltAll = (signal: NodeJS.Signals): Promise<unknown> => Promise.all([...children.keys()].map((name) => halt(name, signal)));

  let ports: MemberPorts[] = [];
  let relaunch: (member: MemberPorts) => Promise<void>;
  for (let attempt = 1; ; attempt += 1) {
    ports = [];
    for (let i = 1; i <= size; i += 1) ports.push({ name: `member-${i}-${attempt}`, port: await freePort(), peerPort: await freePort() });
    try {
      relaunch = await launchCluster(binary, dir, ports, children);
      // NOTE: each launch rewrites its member's pid file, so the watchdog finds the members across restarts.
      watchForOrphan(
        'leasefence-etcd-watchdog',
        dir,
        `for f in '${dir}'/*.pid; do kill -CONT "$(cat "$f")"; kill -KILL "$(cat "$f")"; done`,
      );
      break;
    } catch (error) {
      // NOTE: another process may take a port between probing and binding; try other ones.
      await haltAll('SIGKILL');
      if (attempt >= 3) {
        cleanupOnExit();
        throw error;
      }
    }
  }

  const members: EtcdMember[] = ports.map((member) => ({
    name: member.name,
    port: member.port,
    url: urlOf(member.port),
    get pid() {
      return children.get(member.name)?.pid ?? null;
    },
    kill: () => halt(member.name, 'SIGKILL'),
    pause: () => void children.get(member.name)?.kill('SIGSTOP'),
    resume: () => void children.get(member.name)?.kill('SIGCONT'),
    async restart() {
      if (stopped) throw new Error('the etcd cluster was stopped; start a new one');
      await halt(member.name, 'SIGTERM');
      await relaunch(member);
    },
  }));

  return {
    members,
    urls: members.map((member) => member.url),
    dir,
    async leader() {
      for (const member of members) {
        if (member.pid === null) continue;
        const status = await statusOf(member.url);
        if (status === null) continue;
        const index = (
          await Promise.all(members.map(async (other) => (other.pid === null ? null : (await statusOf(other.url))?.member)))
        ).indexOf(status.leader);
        if (index >= 0) return members[index]!;
      }
      return null;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', cleanupOnExit);
      await haltAll('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Starts a throwaway single-member etcd. See the module comment. */
export async function startEtcd(): Promise<EtcdServer> {
  const cluster = await startEtcdCluster(1);
  const member = cluster.members[0]!;
  return {
    host: '127.0.0.1',
    port: member.port,
    url: member.url,
    dir: cluster.dir,
    get pid() {
      return member.pid;
    },
    stop: () => cluster.stop(),
    kill: () => member.kill(),
    restart: () => member.restart(),
  };
}
