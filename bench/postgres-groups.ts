/**
 * `npm run bench`, PostgreSQL: claim + release cycles against the raw single-statement baseline (an
 * INSERT ... ON CONFLICT claim and an UPDATE release: a token, no secret, no history), and fenced writes
 * (one ledger INSERT in a transaction) against a raw transaction that checks the lease row FOR SHARE.
 * Every contender has a pool of its own with as many connections as workers (pg `Pool` or postgres.js
 * `max`), named by `application_name`, so that its backends' CPU time (`/proc/<pid>/sched`, see
 * postgres-probes.ts) is its own. Both lease tables hold the same 10,000 idle keys (index scans, as in a
 * table in use). Also measured: leasefence on postgres.js, leasefence with `prepare: false`, withLease,
 * and with BENCH_COMPARE another checkout's leasefence; both
 * trees run bundled (library.ts).
 */
import pg from 'pg';
import postgres from 'postgres';
import type { PostgresStore } from '../src/adapters/postgres/index.js';
import type { Leases } from '../src/leases-types.js';
import { comparedLibrary, thisLibrary, type Library } from './library.js';
import { runtimeNs } from './postgres-probes.js';
import { LEDGER_INSERT, RAW_CLAIM, RAW_FENCE_CHECK, RAW_RELEASE, RAW_RELEASE_NOTIFY, RAW_SCHEMA } from './postgres-raw.js';
import type { Contender, Group } from './slices.js';

// NOTE: this checkout bundled like dist/ (library.ts), as BENCH_COMPARE's tree is.
const {
  root: { createLeases },
  postgres: { createPostgresStore, fromPostgresJs },
  cycles: { claimRelease: cycle },
} = await thisLibrary();

const TTL_MS = 60_000;
const SEED_KEYS = 10_000;

/** One Postgres run: the server's URL and an admin connection. */
export interface PostgresTarget {
  readonly url: string;
  readonly admin: pg.Client;
  /** Pools and postgres.js instances opened, closed by `closePools`. */
  readonly closers: (() => Promise<void>)[];
}

/** Creates the raw tables and leasefence's, each with SEED_KEYS idle keys. */
export async function preparePostgres(target: PostgresTarget): Promise<void> {
  const { admin } = target;
  await createPostgresStore({ client: (await openPool(target, 'migrate', 1)) as pg.Pool }).migrate();
  for (const statement of RAW_SCHEMA) await admin.query(statement);
  await admin.query(`INSERT INTO leasefence_leases (key, token) SELECT 'idle:' || g, 1 FROM generate_series(1, $1::int) AS g`, [SEED_KEYS]);
  await admin.query(
    `INSERT INTO raw_leases (name, token, expires_at) SELECT 'idle:' || g, 1, now() FROM generate_series(1, $1::int) AS g`,
    [SEED_KEYS],
  );
  await admin.query('VACUUM ANALYZE');
}

let pools = 0;

/** A new `application_name` for a contender's connections, so that its backends' CPU is its own. */
export const nextApplication = (): string => `bench-${++pools}`;

async function openPool(target: PostgresTarget, name: string, max: number, options?: string): Promise<pg.Pool> {
  const pool = new pg.Pool({
    connectionString: target.url,
    max,
    idleTimeoutMillis: 0,
    application_name: name,
    ...(options === undefined ? {} : { options }),
  });
  pool.on('error', () => undefined);
  target.closers.push(() => pool.end());
  return pool;
}

/** CPU µs so far of the backends whose application_name is `name`. */
export async function backendCpuUs(admin: pg.Client, name: string): Promise<number> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [name]);
  return rows.reduce((sum, row) => sum + runtimeNs(row.pid), 0) / 1000;
}

/**
 * A contender with a pool of its own (`open`, its connections started with `options`, e.g. `-c name=value`),
 * measured with its backends' CPU.
 */
export function pooled(
  target: PostgresTarget,
  name: string,
  baseline: string | undefined,
  workers: number,
  cycle: (pool: pg.Pool, worker: number) => Promise<() => Promise<unknown>>,
  options?: string,
): Contender {
  const application = nextApplication();
  let pool: Promise<pg.Pool> | undefined;
  return {
    name,
    ...(baseline === undefined ? {} : { baseline }),
    prepare: async (worker) => {
      pool ??= openPool(target, application, workers, options);
      return cycle(await pool, worker);
    },
    serverCpuUs: () => backendCpuUs(target.admin, application),
  };
}

/**
 * The raw claim + release; `notify`: the release also `pg_notify`s the key, as leasefence's does; `options`:
 * its connections' start-up options (`-c synchronous_commit=off`).
 */
export function rawCycle(
  target: PostgresTarget,
  name: string,
  workers: number,
  baseline?: string,
  notify = false,
  options?: string,
): Contender {
  const release = notify ? { name: 'raw-release-notify', text: RAW_RELEASE_NOTIFY } : { name: 'raw-release', text: RAW_RELEASE };
  return pooled(
    target,
    name,
    baseline,
    workers,
    async (pool, worker) => {
      const key = `raw:${name}:${workers}:${worker}`;
      return async () => {
        const { rows } = await pool.query<{ token: string }>({ name: 'raw-claim', text: RAW_CLAIM, values: [key, 'bench', TTL_MS] });
        if (rows[0] === undefined) throw new Error('raw: not granted');
        await pool.query({ ...release, values: [key, 'bench', rows[0].token] });
      };
    },
    options,
  );
}

const claimRelease = (leases: Leases, key: string): (() => Promise<void>) => cycle(leases, key, key);

/** leasefence's claim + release through this tree's bundle; `commit`: the store's `leaseCommit`. */
export function leasefenceCycle(
  target: PostgresTarget,
  name: string,
  baseline: string | undefined,
  workers: number,
  prepare: boolean,
  leaseCommit: 'durable' | 'fast' = 'durable',
): Contender {
  let leases: Leases<PostgresStore> | undefined;
  return pooled(target, name, baseline, workers, async (pool, worker) => {
    leases ??= createLeases(createPostgresStore({ client: pool, prepare, leaseCommit }), { holder: 'bench', ttlMs: TTL_MS });
    return claimRelease(leases, `cycle:${name}:${workers}:${worker}`);
  });
}

/**
 * leasefence claim + release from another checkout's `src/` (BENCH_COMPARE, e.g. `git archive main src |
 * tar -x -C /tmp/before`), on the same table (this checkout migrated it; earlier statements ignore newer
 * columns): before and after in the same slices.
 */
function comparedCycle(target: PostgresTarget, name: string, baseline: string, workers: number): Contender {
  let leases: Promise<Leases> | undefined;
  return pooled(target, name, baseline, workers, async (pool, worker) => {
    leases ??= (async () => {
      const { root, postgres: adapter } = (await comparedLibrary()) as Library;
      return root.createLeases(adapter.createPostgresStore({ client: pool }), { holder: 'bench', ttlMs: TTL_MS }) as unknown as Leases;
    })();
    const key = `before:${name}:${workers}:${worker}`;
    return ((await comparedLibrary()) as Library).cycles.claimRelease(await leases, key, key);
  });
}

function postgresJsCycle(target: PostgresTarget, name: string, baseline: string, workers: number, which: 'raw' | 'leasefence'): Contender {
  const application = nextApplication();
  let sql: postgres.Sql | undefined;
  let leases: Leases<PostgresStore> | undefined;
  return {
    name,
    baseline,
    prepare: async (worker) => {
      if (sql === undefined) {
        const opened = postgres(target.url, { max: workers, onnotice: () => undefined, connection: { application_name: application } });
        target.closers.push(() => opened.end({ timeout: 1 }));
        sql = opened;
      }
      const key = `pgjs:${name}:${workers}:${worker}`;
      if (which === 'leasefence') {
        leases ??= createLeases(createPostgresStore({ client: fromPostgresJs(sql) }), { holder: 'bench', ttlMs: TTL_MS });
        return claimRelease(leases, key);
      }
      const session = sql;
      return async () => {
        const rows = await session.unsafe<{ token: string }[]>(RAW_CLAIM, [key, 'bench', TTL_MS], { prepare: true });
        if (rows[0] === undefined) throw new Error('raw: not granted');
        await session.unsafe(RAW_RELEASE, [key, 'bench', rows[0].token], { prepare: true });
      };
    },
    serverCpuUs: () => backendCpuUs(target.admin, application),
  };
}

/** The claim + release group at `workers` clients; `full: false` keeps only raw, control and leasefence. */
export function postgresCycleGroup(target: PostgresTarget, workers: number, title: string, full: boolean): Group {
  const raw = 'raw single-statement claim/release (pg Pool)';
  const mine = 'leasefence claim + release (pg Pool)';
  const contenders = [
    rawCycle(target, raw, workers),
    rawCycle(target, 'raw (control)', workers),
    leasefenceCycle(target, mine, undefined, workers, true),
    // NOTE: leasefence's release notifies waiters (pg_notify) only when a waiter marked interest; this row
    // shows what notifying at every release would cost raw SQL.
    rawCycle(target, 'raw, release also pg_notify (pg Pool)', workers, raw, true),
  ];
  const compare = process.env['BENCH_COMPARE'];
  if (compare !== undefined && compare !== '')
    contenders.push(comparedCycle(target, 'leasefence, BENCH_COMPARE src (pg Pool)', mine, workers));
  if (full) {
    let leases: Leases<PostgresStore> | undefined;
    contenders.push(
      postgresJsCycle(target, 'raw, postgres.js (prepare: true)', raw, workers, 'raw'),
      postgresJsCycle(target, 'leasefence, postgres.js', mine, workers, 'leasefence'),
      leasefenceCycle(target, 'leasefence, prepare: false (pg Pool)', mine, workers, false),
      pooled(target, 'leasefence withLease((lease) => n) (pg Pool)', mine, workers, async (pool, worker) => {
        leases ??= createLeases(createPostgresStore({ client: pool }), { holder: 'bench', ttlMs: TTL_MS });
        const own = leases;
        const work = async (_lease: unknown): Promise<number> => worker; // NOTE: one parameter: no AbortSignal (see with-lease.ts runFn)
        return async () => {
          const outcome = await own.withLease(`with:${workers}:${worker}`, work);
          if (!outcome.ok) throw new Error(`withLease: ${outcome.reason}`);
        };
      }),
    );
  }
  // NOTE: every contender holds `workers` connections for the whole group; the throwaway server allows 300
  // (test/support/postgres-server.ts), so at 32 clients with BENCH_COMPARE the last row (withLease) is left out.
  return { title, workers, contenders: contenders.slice(0, Math.floor(MAX_BENCH_CONNECTIONS / workers)) };
}

/** Connections a group's contenders may hold together (the server's 300, less the admin's and some room). */
const MAX_BENCH_CONNECTIONS = 290;

/** The fenced write group at `workers` clients: one INSERT in a transaction, under a held lease. */
export function postgresWriteGroup(target: PostgresTarget, workers: number, title: string): Group {
  const rawWrite = (name: string): Contender =>
    pooled(target, name, undefined, workers, async (pool, worker) => {
      const key = `rawfw:${name}:${workers}:${worker}`;
      const token = (await pool.query<{ token: string }>(RAW_CLAIM, [key, 'bench', 600_000])).rows[0]?.token;
      if (token === undefined) throw new Error('raw: not granted');
      return async () => {
        const connection = await pool.connect();
        try {
          await connection.query('BEGIN');
          const checked = await connection.query({ name: 'raw-fence-check', text: RAW_FENCE_CHECK, values: [key, 'bench', token] });
          if (checked.rowCount !== 1) throw new Error('raw: fenced');
          await connection.query({ name: 'raw-insert', text: LEDGER_INSERT, values: [key, token] });
          await connection.query('COMMIT');
        } finally {
          connection.release();
        }
      };
    });
  let leases: Leases<PostgresStore> | undefined;
  return {
    title,
    workers,
    contenders: [
      rawWrite('raw transaction: FOR SHARE check + INSERT (pg Pool)'),
      rawWrite('raw (control)'),
      pooled(target, 'leasefence fencedWrite(INSERT) (pg Pool)', undefined, workers, async (pool, worker) => {
        leases ??= createLeases(createPostgresStore({ client: pool }), { holder: 'bench', ttlMs: 600_000 });
        const own = leases;
        const lease = await own.claimOrThrow(`write:${workers}:${worker}`);
        return async () => {
          const outcome = await own.fencedWrite(lease, (tx) => tx.query(LEDGER_INSERT, [tx.key, tx.token.toString()]));
          if (!outcome.ok) throw new Error('leasefence: fenced');
        };
      }),
    ],
  };
}
