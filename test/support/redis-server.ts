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
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { findOrInstall, installedBinary } from './provision.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { assertTierMayStart } from './tiers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A running throwaway redis-server: `stop()` and `restart()` shut it down cleanly (SIGTERM, SIGKILL after 5 s). */
export interface RedisServer extends ServerProcess {
  readonly host: string;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** The server's working dir (AOF files live here); removed by `stop()`. */
  readonly dir: string;
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
    () => installedBinary('redis-server', ['/usr/bin/redis-server', '/usr/local/bin/redis-server']),
    'redis-server not found on PATH. Install it with `sudo apt-get update && sudo apt-get install -y redis-server` ' +
      '(Debian/Ubuntu) or `brew install redis` (macOS), or set LEASEFENCE_REDIS_URL to a disposable redis-server ' +
      '(tests only use fresh keys under their own prefixes).',
  );
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

/** Starts a throwaway redis-server. See the module comment. */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  assertTierMayStart('redis-server');
  const binary = findBinary();
  const persistence = options.persistence ?? 'aof';
  const dir = mkdtempSync(join(tmpdir(), 'leasefence-redis-'));
  const args = (port: number): string[] => [
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

  const server = await startServerProcess({
    name: 'redis-server',
    binary,
    dir,
    args,
    ready: ping,
    readyMeans: 'answer PING',
    stopSignal: 'SIGTERM',
    pidFile: 'redis.pid',
  });
  const host = '127.0.0.1';
  return {
    host,
    port: server.port,
    url: `redis://${host}:${server.port}`,
    dir,
    get pid() {
      return server.pid;
    },
    stop: () => server.stop(),
    kill: () => server.kill(),
    restart: () => server.restart(),
  };
}
