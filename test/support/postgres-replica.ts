/**
 * A throwaway PostgreSQL primary with one asynchronous streaming standby, for failover tests: the primary
 * from `startPostgres` (wal_level replica), the standby a `pg_basebackup -R` copy of it (its own temp
 * dir, free loopback port, replication slot), hot standby, streaming. Both are torn down by `stop()`, on
 * process exit, and by a watchdog if this process dies; a failed start stops what it started.
 *
 * The failover steps are methods: `waitForStandby('replayed')` (the standby has replayed everything the
 * primary committed; `'received'`: has it in its pg_wal), `detachStandby()` (the standby stops receiving WAL: commits after it are the ones an
 * asynchronous replica misses), `pauseReplay()`, `crashPrimary()` (immediate stop: no checkpoint, no
 * more WAL), `promote()` (the standby becomes a primary; `pg_ctl promote -w`). NOTE: a paused replay
 * alone loses nothing: promotion ends the pause and replays all the WAL the standby received first. What a
 * promotion loses is the WAL the standby never received, which `detachStandby()` makes deterministic.
 *
 * `takeBaseBackup(primary)` copies a running primary (`pg_basebackup -X stream`) to `restore()` later as a
 * new primary: the crash-restore case, a server back at an older state than the one clients saw.
 *
 * ```ts
 * const pair = await startPostgresReplica();
 * await pair.waitForStandby('replayed');
 * await pair.detachStandby();
 * // ... commits on pair.primary.url that the standby never receives ...
 * await pair.crashPrimary();
 * await pair.promote();
 * // ... pair.standby.url is now the primary ...
 * await pair.stop();
 * ```
 */
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { asPostgres, asPostgresSync, findBinDir, postgresUid, startPostgres, type PostgresServer } from './postgres-server.js';
import { freePort, isRoot, watchForOrphan } from './provision.js';

/** The standby server (a primary after `promote()`). */
export interface PostgresStandby {
  readonly host: string;
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth, loopback only). */
  readonly url: string;
  readonly dataDir: string;
}

/** A running primary + standby pair. */
export interface PostgresReplica {
  readonly primary: PostgresServer;
  readonly standby: PostgresStandby;
  /** Resolves once the standby has received (written to its pg_wal) or replayed the primary's current WAL position. */
  waitForStandby(progress: 'received' | 'replayed'): Promise<void>;
  /**
   * Stops the standby's WAL receiver (clears `primary_conninfo`) and waits until it is gone: from now on
   * the standby receives nothing the primary commits, as an asynchronous replica that lags behind.
   */
  detachStandby(): Promise<void>;
  /** `pg_wal_replay_pause()` on the standby, once the pause took effect. */
  pauseReplay(): Promise<void>;
  /** Stops the primary with `-m immediate` (a crash: no shutdown checkpoint, nothing more sent). */
  crashPrimary(): Promise<void>;
  /** Promotes the standby (`pg_ctl promote -w`): resolves once it accepts writes. */
  promote(): Promise<void>;
  /** Stops both servers and removes their temp dirs. Idempotent. */
  stop(): Promise<void>;
}

const SLOT = 'leasefence_standby';

/** Runs `sql` on a fresh connection to `url` and returns its rows. */
async function query<Row>(url: string, sql: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(sql)).rows as Row[];
  } finally {
    await client.end();
  }
}

/** Polls `check` every 50 ms until it returns true, or throws after `timeoutMs` saying `what`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`postgres replica: timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A copy of a primary's data directory (`pg_basebackup`), in its own temp dir, removed on exit at the latest. */
interface DataCopy {
  readonly dir: string;
  readonly dataDir: string;
  readonly logFile: string;
  /** Stops a server running on the copy (if any) and removes the temp dir, synchronously. Idempotent. */
  discard(): void;
}

/** A server started on a `DataCopy`: a standby, or a restored backup. */
export interface CopiedServer extends PostgresStandby {
  /** Stops the server (fast shutdown) and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
}

/** Takes a base backup of `primary` (`-X stream`: consistent on its own) with extra `pg_basebackup` args. */
async function copyOf(primary: PostgresServer, label: string, args: string[]): Promise<DataCopy> {
  const bin = findBinDir();
  const dir = mkdtempSync(join(tmpdir(), `leasefence-pg-${label}-`));
  if (isRoot) {
    const { uid, gid } = postgresUid();
    chownSync(dir, uid, gid);
  }
  const dataDir = join(dir, 'data');
  let discarded = false;
  const discard = (): void => {
    if (discarded) return;
    discarded = true;
    process.removeListener('exit', discard);
    asPostgresSync(join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'immediate', '-w']);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', discard);
  const pgCtl = isRoot ? `runuser -u postgres -- "${bin}/pg_ctl"` : `"${bin}/pg_ctl"`;
  watchForOrphan(`leasefence-pg-${label}-watchdog`, dir, `${pgCtl} stop -D "${dataDir}" -m immediate -w`);
  try {
    await asPostgres(join(bin, 'pg_basebackup'), [
      '-D',
      dataDir,
      '-h',
      primary.host,
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
      ...args,
    ]);
  } catch (error) {
    discard();
    throw error;
  }
  return { dir, dataDir, logFile: join(dir, 'server.log'), discard };
}

/** Starts a server on `copy` on a free loopback port; on failure discards the copy and says why. */
async function startCopy(copy: DataCopy, what: string): Promise<CopiedServer> {
  const bin = findBinDir();
  let port = 0;
  for (let attempt = 1; ; attempt += 1) {
    port = await freePort();
    // NOTE: a hot standby refuses to start with max_connections below the primary's (300 in startPostgres).
    const serverOptions = [
      `-p ${port}`,
      `-k ${copy.dir}`,
      '-c listen_addresses=127.0.0.1',
      '-c fsync=off',
      '-c hot_standby=on',
      '-c max_connections=300',
    ].join(' ');
    try {
      await asPostgres(join(bin, 'pg_ctl'), ['start', '-D', copy.dataDir, '-l', copy.logFile, '-w', '-t', '60', '-o', serverOptions]);
      break;
    } catch (error) {
      // NOTE: another process may take the port between probing and binding; try another one.
      if (attempt >= 3) {
        const log = existsSync(copy.logFile) ? readFileSync(copy.logFile, 'utf8').slice(-2000) : '';
        copy.discard();
        throw new Error(`could not start the PostgreSQL ${what}: ${(error as Error).message}\n${log}`);
      }
    }
  }
  const host = '127.0.0.1';
  let stopped = false;
  return {
    host,
    port,
    url: `postgres://postgres@${host}:${port}/postgres`,
    dataDir: copy.dataDir,
    async stop() {
      if (stopped) return;
      stopped = true;
      await asPostgres(join(bin, 'pg_ctl'), ['stop', '-D', copy.dataDir, '-m', 'fast', '-w']).catch(() => undefined);
      copy.discard();
    },
  };
}

/** A base backup of a running server, to restore later (after the server went on without it). */
export interface BaseBackup {
  /** Starts a new primary on the backup: the server as it was when the backup was taken. */
  restore(): Promise<CopiedServer>;
  /** Removes the backup (and stops its server, if restored). Idempotent. */
  discard(): void;
}

/** Takes a base backup of `primary` now. */
export async function takeBaseBackup(primary: PostgresServer): Promise<BaseBackup> {
  const copy = await copyOf(primary, 'backup', []);
  return { restore: () => startCopy(copy, 'restored backup'), discard: () => copy.discard() };
}

/** The primary's settings: replication on (wal_level replica is the default; explicit here). */
const PRIMARY_SETTINGS = { wal_level: 'replica', max_wal_senders: '4', max_replication_slots: '4' };

/** Starts a primary alone, ready for `takeBaseBackup` or `startPostgresReplica`'s standby. */
export const startReplicationPrimary = (): Promise<PostgresServer> => startPostgres({ settings: PRIMARY_SETTINGS });

/** Starts a primary and a streaming standby. See the module comment. */
export async function startPostgresReplica(): Promise<PostgresReplica> {
  const primary = await startReplicationPrimary();
  const bin = findBinDir();
  let standby: CopiedServer;
  try {
    // NOTE: -R writes standby.signal and primary_conninfo; -C -S a physical slot, so the primary keeps
    // the WAL the standby has not received yet (whatever the test does in between).
    standby = await startCopy(await copyOf(primary, 'standby', ['-R', '-C', '-S', SLOT]), 'standby');
  } catch (error) {
    await primary.stop();
    throw error;
  }
  const replica: PostgresReplica = {
    primary,
    standby,
    async waitForStandby(progress) {
      const [position] = await query<{ lsn: string }>(primary.url, 'SELECT pg_current_wal_lsn()::text AS lsn');
      const standbyPosition = progress === 'received' ? 'pg_last_wal_receive_lsn()' : 'pg_last_wal_replay_lsn()';
      await until(`the standby ${progress} the primary's WAL`, async () => {
        const [row] = await query<{ caught: boolean }>(standby.url, `SELECT ${standbyPosition} >= '${position!.lsn}'::pg_lsn AS caught`);
        return row?.caught === true;
      });
    },
    async detachStandby() {
      await query(standby.url, `ALTER SYSTEM SET primary_conninfo = ''`);
      await query(standby.url, 'SELECT pg_reload_conf()');
      // NOTE: a standby whose replay is paused applies the new conninfo only when it resumes; ending the
      // WAL sender ends its receiver now, and the cleared conninfo keeps it from reconnecting.
      await query(primary.url, `SELECT pg_terminate_backend(pid) FROM pg_stat_replication`);
      await until(
        'the standby stopped receiving WAL',
        async () => (await query(standby.url, 'SELECT 1 FROM pg_stat_wal_receiver')).length === 0,
      );
    },
    async pauseReplay() {
      await query(standby.url, 'SELECT pg_wal_replay_pause()');
      await until(
        'the standby paused replay',
        async () => (await query<{ state: string }>(standby.url, 'SELECT pg_get_wal_replay_pause_state() AS state'))[0]?.state === 'paused',
      );
    },
    async crashPrimary() {
      await asPostgres(join(bin, 'pg_ctl'), ['stop', '-D', primary.dataDir, '-m', 'immediate', '-w']);
    },
    async promote() {
      await asPostgres(join(bin, 'pg_ctl'), ['promote', '-D', standby.dataDir, '-w', '-t', '60']);
    },
    async stop() {
      await standby.stop();
      await primary.stop();
    },
  };
  return replica;
}
