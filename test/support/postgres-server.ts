/**
 * A throwaway PostgreSQL cluster for tests and benchmarks: `initdb` into a temp dir, a free loopback port,
 * a Unix socket in the same temp dir, started with `pg_ctl`, torn down (stop + rm -rf) by `stop()` and on
 * process exit. Never touches a system-wide instance or the default port.
 *
 * As root, the server runs as the `postgres` OS user (`runuser -u postgres --`), because postgres refuses
 * to run as root. When no PostgreSQL binaries are installed, root installs them from the OS packages
 * (`apt-get install -y postgresql`); anyone else gets an error saying how.
 *
 * ```ts
 * const server = await startPostgres();
 * const pool = new pg.Pool({ connectionString: server.url });
 * // ...
 * await pool.end();
 * await server.stop();
 * ```
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { findOrInstall, freePort, isRoot, watchForOrphan } from './provision.js';
import { assertTierMayStart } from './tiers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A running throwaway cluster. */
export interface PostgresServer {
  readonly host: string;
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth, loopback only). */
  readonly url: string;
  /** The cluster's data directory (inside a temp dir that `stop()` removes). */
  readonly dataDir: string;
  /** Stops the server (fast shutdown) and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
  /**
   * Restarts the server on the same port and data. `fast` (default) is a clean shutdown; `immediate` is a
   * crash (no checkpoint): the restart runs crash recovery, as after `kill -9`.
   */
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  /** The postmaster's pid followed by its children's pids (backends, checkpointer, ...). */
  pids(): Promise<number[]>;
}

export interface StartPostgresOptions {
  /** Extra server settings (`-c name=value`). */
  readonly settings?: Readonly<Record<string, string>>;
}

const BIN_ROOT = '/usr/lib/postgresql';

/** The newest installed PostgreSQL bin dir, installing the OS package as root when none is present. */
export function findBinDir(): string {
  return findOrInstall(
    'postgresql',
    installedBinDir,
    'PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin. Install them with ' +
      '`sudo apt-get update && sudo apt-get install -y postgresql` (Debian/Ubuntu), or set LEASEFENCE_PG_URL ' +
      'to a disposable database (tests create and use their own tables in it).',
  );
}

function installedBinDir(): string | null {
  if (!existsSync(BIN_ROOT)) return null;
  const versions = readdirSync(BIN_ROOT)
    .filter((version) => existsSync(join(BIN_ROOT, version, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? null : join(BIN_ROOT, versions[0], 'bin');
}

/** Runs a PostgreSQL binary, as the `postgres` OS user when we are root. */
export function asPostgres(binary: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const [file, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
  return run(file, argv, { maxBuffer: 16 * 1024 * 1024 });
}

/** `asPostgres`, synchronously, ignoring failures: for exit hooks. */
export function asPostgresSync(binary: string, args: string[]): void {
  const [file, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
  spawnSync(file, argv, { stdio: 'ignore' });
}

/** The `postgres` OS user's uid and gid (the owner of data directories when we are root). */
export function postgresUid(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

/** Starts a throwaway cluster. See the module comment. */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  assertTierMayStart('PostgreSQL server');
  const bin = findBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'leasefence-pg-'));
  if (isRoot) {
    const { uid, gid } = postgresUid();
    chownSync(dir, uid, gid);
  }
  const dataDir = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  let stopped = false;
  const cleanupOnExit = (): void => {
    if (stopped) return;
    stopped = true;
    asPostgresSync(join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'immediate', '-w']);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanupOnExit);
  const pgCtl = isRoot ? `runuser -u postgres -- "${bin}/pg_ctl"` : `"${bin}/pg_ctl"`;
  watchForOrphan('leasefence-pg-watchdog', dir, `${pgCtl} stop -D "${dataDir}" -m immediate -w`);
  try {
    await asPostgres(join(bin, 'initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
  } catch (error) {
    cleanupOnExit();
    throw error;
  }
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    // NOTE: fsync off is safe for process crashes (the OS page cache survives); synchronous_commit stays on,
    // because with it off an immediate restart lost acknowledged commits (and would roll tokens back).
    fsync: 'off',
    synchronous_commit: 'on',
    max_connections: '300',
    ...options.settings,
  };
  let port = 0;
  const start = async (): Promise<void> => {
    const serverOptions = [`-p ${port}`, `-k ${dir}`, ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)].join(' ');
    await asPostgres(join(bin, 'pg_ctl'), ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', serverOptions]);
  };
  for (let attempt = 1; ; attempt += 1) {
    port = await freePort();
    try {
      await start();
      break;
    } catch (error) {
      // NOTE: another process may take the port between probing and binding; try another one.
      if (attempt >= 3) {
        const log = existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-2000) : '';
        cleanupOnExit();
        throw new Error(`could not start PostgreSQL: ${(error as Error).message}\n${log}`);
      }
    }
  }
  const host = '127.0.0.1';
  return {
    host,
    port,
    url: `postgres://postgres@${host}:${port}/postgres`,
    dataDir,
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', cleanupOnExit);
      await asPostgres(join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'fast', '-w']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
    async restart(mode = 'fast') {
      await asPostgres(join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', mode, '-w']);
      await start();
    },
    async pids() {
      const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(postmaster)]).catch(() => ({ stdout: '' }));
      const children = stdout
        .split('\n')
        .map((line) => Number(line.trim()))
        .filter((pid) => Number.isInteger(pid) && pid > 0);
      return [postmaster, ...children];
    },
  };
}
