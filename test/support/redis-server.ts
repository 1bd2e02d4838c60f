/**
 * A throwaway redis-server for tests and benchmarks: a free loopback port, a temp dir for its files, no
 * RDB snapshots (`--save ''`), AOF with `appendfsync always` (or no persistence at all), `DEBUG` allowed
 * from loopback. `stop()` (and the exit of this process) kills it and removes the temp dir. Never touches
 * a system-wide instance or the default port.
 *
 * When redis-server is not installed, root installs it from the OS packages (`apt-get install -y
 * redis-server`); anyone else gets an error saying how.
 *
 * ```ts
 * const server = await startRedis({ persistence: 'none' });
 * const client = new Redis(server.url);
 * await server.restart(); // without persistence: every key is gone
 * await server.stop();
 * ```
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { findOrInstall, freePort, watchForOrphan } from './provision.js';
import { assertTierMayStart } from './tiers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A running throwaway redis-server. */
export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** The server's working dir (AOF files live here); removed by `stop()`. */
  readonly dir: string;
  /** The server process id, or `null` while it is not running (read it late: `restart()` changes it). */
  readonly pid: number | null;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Kills the server at once (SIGKILL): a crash. `restart()` brings it back. */
  kill(): Promise<void>;
  /** Stops the server if running (a clean SIGTERM shutdown) and starts it again on the same port and dir. */
  restart(): Promise<void>;
}

export interface StartRedisOptions {
  /**
   * `aof`: every write is appended and fsynced before the reply, so data survives a restart or a crash.
   * `none`: data lives in memory only and a restart loses every key.
   * @default 'aof'
   */
  readonly persistence?: 'aof' | 'none';
  /** More `--name value` arguments for redis-server (cluster mode, replication), after the defaults. */
  readonly extraArgs?: readonly string[];
}

/** The redis-server binary, installing the OS package as root when none is present. */
function findBinary(): string {
  return findOrInstall(
    'redis-server',
    installedBinary,
    'redis-server not found on PATH. Install it with `sudo apt-get update && sudo apt-get install -y redis-server` ' +
      '(Debian/Ubuntu) or `brew install redis` (macOS), or set LEASEFENCE_REDIS_URL to a disposable redis-server ' +
      '(tests only use fresh keys under their own prefixes).',
  );
}

function installedBinary(): string | null {
  for (const candidate of ['/usr/bin/redis-server', '/usr/local/bin/redis-server']) if (existsSync(candidate)) return candidate;
  const which = spawnSync('which', ['redis-server'], { encoding: 'utf8' });
  const path = which.status === 0 ? which.stdout.trim() : '';
  return path === '' ? null : path;
}

/** One raw `PING` over RESP: `true` when the server answers `+PONG` (not `-LOADING`, not refused). */
export function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts a throwaway redis-server. See the module comment. */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  assertTierMayStart('redis-server');
  const binary = findBinary();
  const persistence = options.persistence ?? 'aof';
  const dir = mkdtempSync(join(tmpdir(), 'leasefence-redis-'));
  let child: ChildProcess | null = null;
  let stopped = false;
  let port = 0;
  let output = '';

  const cleanupOnExit = (): void => {
    if (stopped) return;
    stopped = true;
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanupOnExit);

  const args = (): string[] => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    persistence === 'aof' ? 'yes' : 'no',
    ...(persistence === 'aof' ? ['--appendfsync', 'always'] : []),
    '--enable-debug-command',
    'local',
    '--daemonize',
    'no',
    '--pidfile',
    join(dir, 'redis.pid'),
    '--logfile',
    '',
    '--loglevel',
    'warning',
    ...(options.extraArgs ?? []),
  ];

  const launch = async (): Promise<void> => {
    output = '';
    const started = spawn(binary, args(), { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
    started.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (started.exitCode !== null || started.signalCode !== null) throw new Error(`redis-server exited during start:\n${output}`);
      if (await ping(port)) return;
      await sleep(20);
    }
    started.kill('SIGKILL');
    throw new Error(`redis-server did not answer PING within 30 s:\n${output}`);
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
    try {
      await launch();
      // NOTE: redis-server keeps its pid file in the dir, so the watchdog finds it across restart().
      watchForOrphan('leasefence-redis-watchdog', dir, `kill -KILL "$(cat '${join(dir, 'redis.pid')}')"`);
      break;
    } catch (error) {
      // NOTE: another process may take the port between probing and binding; try another one.
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
    url: `redis://${host}:${port}`,
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
      if (stopped) throw new Error('redis-server was stopped; start a new one');
      await halt('SIGTERM');
      await launch();
    },
  };
}
