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
import { chownSync, mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOrInstall, installedBinary, isRoot } from './provision.js';
import { postgresUid } from './postgres-server.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

/**
 * A running throwaway PgBouncer: `stop()`, `kill()` and `restart()` all SIGKILL it (it has nothing to save),
 * which cuts every client and server connection; `restart()` brings it back on the same port.
 */
export interface PgBouncer extends ServerProcess {
  readonly host: string;
  /** The backend URL with PgBouncer's host and port: same user, password and database. */
  readonly url: string;
  /** The pooling mode it runs in. */
  readonly poolMode: PoolMode;
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
    () => installedBinary('pgbouncer', ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']),
    'pgbouncer not found on PATH. Install it with `sudo apt-get update && sudo apt-get install -y pgbouncer` ' +
      '(Debian/Ubuntu; then `sudo systemctl disable --now pgbouncer`, the tests start their own) or `brew install pgbouncer` (macOS).',
  );
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
  const server = await startServerProcess({
    name: 'pgbouncer',
    binary,
    dir,
    args: (port) => {
      writeFileSync(configFile, configText(backend, port, dir, poolMode, options.poolSize ?? 10));
      if (isRoot) {
        const { uid, gid } = postgresUid();
        chownSync(configFile, uid, gid);
      }
      return ['-q', configFile];
    },
    ready: accepts,
    readyMeans: 'listen',
    stopSignal: 'SIGKILL',
    pidFile: 'pgbouncer.pid',
  });

  const host = '127.0.0.1';
  const url = new URL(backendUrl);
  url.hostname = host;
  url.port = String(server.port);
  return {
    host,
    port: server.port,
    url: url.toString(),
    poolMode,
    get pid() {
      return server.pid;
    },
    stop: () => server.stop(),
    kill: () => server.kill(),
    restart: () => server.restart(),
  };
}
