/**
 * A throwaway PgBouncer in front of a test PostgreSQL: a free loopback port, a temp dir for its config, log
 * and pid file, transaction pooling by default (what Supabase's and Neon's poolers do too). `stop()` (and
 * the exit of this process, or its death: a watchdog) kills it and removes the temp dir. Never touches a
 * system-wide instance or the default port 6432.
 *
 * Clients connect with any user name (`auth_type = any`): PgBouncer logs in to the backend as the user
 * (and password) of the backend URL it was given, so the backend must accept that user (the test
 * clusters use trust auth on loopback).
 *
 * When pgbouncer is not installed, root installs it from the OS packages (`apt-get install -y pgbouncer`,
 * Debian 12 ships 1.18); anyone else gets an error saying how. PgBouncer refuses to run as root, so as root
 * it runs as the `postgres` OS user (its `user` setting).
 *
 * ```ts
 * const bouncer = await startPgBouncer(process.env.LEASEFENCE_PG_URL);
 * const pool = new pg.Pool({ connectionString: bouncer.url });
 * await bouncer.restart(); // every server and client connection is cut
 * await bouncer.stop();
 * ```
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOrInstall, freePort, isRoot, watchForOrphan } from './provision.js';
import { postgresUid } from './postgres-server.js';

/** A running throwaway PgBouncer. */
export interface PgBouncer {
  readonly host: string;
  readonly port: number;
  /** The backend URL with PgBouncer's host and port: same user, password and database. */
  readonly url: string;
  /** The pooling mode it runs in. */
  readonly poolMode: PoolMode;
  /** The process id, or `null` while it is not running (read it late: `restart()` changes it). */
  readonly pid: number | null;
  /** Stops it (SIGKILL: PgBouncer has nothing to save) and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Kills it at once (SIGKILL): every client and server connection is cut. `restart()` brings it back. */
  kill(): Promise<void>;
  /** Kills it if running and starts it again on the same port: a pooler restart as clients see it. */
  restart(): Promise<void>;
}

export type PoolMode = 'transaction' | 'session' | 'statement';

export interface StartPgBouncerOptions {
  /** @default 'transaction' */
  readonly poolMode?: PoolMode;
  /** Server connections per database and user. @default 10 */
  readonly poolSize?: number;
}

/** The pgbouncer binary, installing the OS package as root when none is present. */
export function findPgBouncer(): string {
  return findOrInstall(
    'pgbouncer',
    installedBinary,
    'pgbouncer not found on PATH. Install it with `sudo apt-get update && sudo apt-get install -y pgbouncer` ' +
      '(Debian/Ubuntu; then `sudo systemctl disable --now pgbouncer`, the tests start their own) or `brew install pgbouncer` (macOS).',
  );
}

function installedBinary(): string | null {
  for (const candidate of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer'])
    if (existsSync(candidate)) return candidate;
  const which = spawnSync('which', ['pgbouncer'], { encoding: 'utf8' });
  const path = which.status === 0 ? which.stdout.trim() : '';
  return path === '' ? null : path;
}

/** Whether something accepts TCP connections on the loopback `port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => done(true));
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** A libpq connection-string value, quoted. */
const value = (text: string): string => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The config file's text for a backend at `backend`, listening on `port`. */
function configText(backend: URL, port: number, dir: string, poolMode: PoolMode, poolSize: number): string {
  const user = decodeURIComponent(backend.username || 'postgres');
  const server = [`host=${backend.hostname}`, `port=${backend.port || '5432'}`, `user=${value(user)}`];
  if (backend.password !== '') server.push(`password=${value(decodeURIComponent(backend.password))}`);
  return [
    '[databases]',
    // NOTE: the fallback entry: every database name a client asks for, on the backend, as the backend's user.
    `* = ${server.join(' ')}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = any',
    `pool_mode = ${poolMode}`,
    'max_client_conn = 2000',
    `default_pool_size = ${poolSize}`,
    'max_db_connections = 0',
    `logfile = ${join(dir, 'pgbouncer.log')}`,
    `pidfile = ${join(dir, 'pgbouncer.pid')}`,
    // NOTE: PgBouncer 1.18 refuses a startup parameter it does not know, as it would in production; only
    // this common one is let through (JDBC and others send it). Timeouts belong on the role there.
    'ignore_startup_parameters = extra_float_digits',
    'server_check_delay = 0',
    'log_connections = 0',
    'log_disconnections = 0',
    ...(isRoot ? ['user = postgres'] : []),
    '',
  ].join('\n');
}

/** Starts a PgBouncer in front of the PostgreSQL at `backendUrl`. See the module comment. */
export async function startPgBouncer(backendUrl: string, options: StartPgBouncerOptions = {}): Promise<PgBouncer> {
  const binary = findPgBouncer();
  const poolMode = options.poolMode ?? 'transaction';
  const backend = new URL(backendUrl);
  const dir = mkdtempSync(join(tmpdir(), 'leasefence-pgbouncer-'));
  if (isRoot) {
    const { uid, gid } = postgresUid();
    chownSync(dir, uid, gid);
  }
  const configFile = join(dir, 'pgbouncer.ini');
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

  const launch = async (): Promise<void> => {
    output = '';
    writeFileSync(configFile, configText(backend, port, dir, poolMode, options.poolSize ?? 10));
    if (isRoot) {
      const { uid, gid } = postgresUid();
      chownSync(configFile, uid, gid);
    }
    const started = spawn(binary, ['-q', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
    started.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (started.exitCode !== null || started.signalCode !== null) throw new Error(`pgbouncer exited during start:\n${output}`);
      if (await accepts(port)) return;
      await sleep(20);
    }
    started.kill('SIGKILL');
    throw new Error(`pgbouncer did not listen within 30 s:\n${output}`);
  };

  const halt = async (): Promise<void> => {
    const running = child;
    if (running === null) return;
    child = null;
    running.kill('SIGKILL');
    await exited(running);
  };

  for (let attempt = 1; ; attempt += 1) {
    port = await freePort();
    try {
      await launch();
      // NOTE: the pid file stays in the dir, so the watchdog finds the process across restart().
      watchForOrphan('leasefence-pgbouncer-watchdog', dir, `kill -KILL "$(cat '${join(dir, 'pgbouncer.pid')}')"`);
      break;
    } catch (error) {
      // NOTE: another process may take the port between probing and binding; try another one.
      await halt();
      if (attempt >= 3) {
        cleanupOnExit();
        throw error;
      }
    }
  }

  const host = '127.0.0.1';
  const url = new URL(backendUrl);
  url.hostname = host;
  url.port = String(port);
  return {
    host,
    port,
    url: url.toString(),
    poolMode,
    get pid() {
      return child?.pid ?? null;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', cleanupOnExit);
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
    async kill() {
      await halt();
    },
    async restart() {
      if (stopped) throw new Error('pgbouncer was stopped; start a new one');
      await halt();
      await launch();
    },
  };
}
