/**
 * Where leasefence's Postgres time goes, measured: server execution and planning time of each statement
 * of a claim + release and of a fenced write, against the raw single-statement baselines, from EXPLAIN
 * (ANALYZE, BUFFERS, WAL) of the exact statements and parameters the store sent (each inside BEGIN ...
 * ROLLBACK, so the state stays as it was); and the library's own JS per claim + release on a client that
 * answers from recorded rows (no I/O): validation, parameters, the pre-image parse, the pure core, the handle.
 * EXPLAIN of a text statement plans it every time: what the prepared statements really cost is the last
 * table, from pg_stat_statements (track_planning on) and pg_prepared_statements after BENCH_N × 20 cycles on
 * one connection each, durable and `leaseCommit: 'fast'`, against the raw statements: whether each runs a
 * generic plan, its execution and planning time per call, and its WAL per call.
 *
 *   npx tsx bench/postgres-breakdown.ts     (BENCH_N=300 EXPLAINs per statement, medians)
 */
import pg from 'pg';
import { createPostgresStore, type PostgresClient } from '../src/adapters/postgres/index.js';
import { createLeases } from '../src/leases.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { cpuPerCycleUs } from './cpu-per-cycle.js';
import { RAW_CLAIM, RAW_RELEASE, RAW_SCHEMA } from './postgres-raw.js';

const N = Number(process.env['BENCH_N'] ?? 300);
const TTL_MS = 600_000;

interface Sent {
  readonly text: string;
  readonly values: unknown[];
}

/** A client that sends through `pool` and records every statement (prepared configs too). */
function recordingClient(pool: pg.Pool, sent: Sent[]): PostgresClient {
  const recording = <Q extends pg.Pool | pg.PoolClient>(queryable: Q) =>
    ((config: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
      const text = typeof config === 'string' ? config : config.text;
      sent.push({ text, values: (typeof config === 'string' ? values : config.values) ?? [] });
      return typeof config === 'string' ? queryable.query(config, values) : queryable.query(config);
    }) as PostgresClient['query'];
  return {
    acceptsNamedStatements: true,
    query: recording(pool),
    // NOTE: a transaction's connection records too (the fenced write's statements run on it).
    connect: async () => {
      const connection = await pool.connect();
      return { query: recording(connection), release: (error?: Error) => connection.release(error) };
    },
  } as unknown as PostgresClient;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

interface Explained {
  readonly exec: number[];
  readonly plan: number[];
  readonly hit: number[];
  readonly wal: number[];
}

/** EXPLAIN ANALYZE of `text` with `values`, inside BEGIN ... ROLLBACK (after `setup`, also rolled back). */
async function explain(client: pg.Client, into: Explained, text: string, values: unknown[], setup?: Sent): Promise<void> {
  await client.query('BEGIN');
  try {
    if (setup !== undefined) {
      await client.query(setup.text, setup.values);
      // NOTE: the setup's claim minted a new token: the statement under test presents that one.
      const table = setup.text.includes('raw_leases') ? 'raw_leases WHERE name' : 'leasefence_leases WHERE key';
      const minted = await client.query<{ token: string }>(`SELECT token::text AS token FROM ${table} = $1`, [setup.values[0]]);
      values = values.slice();
      values[setup.text.includes('raw_leases') ? 2 : 1] = minted.rows[0]?.token;
    }
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) ${text}`, values);
    const [plan] = rows[0]!['QUERY PLAN'] as [
      { 'Execution Time': number; 'Planning Time': number; Plan: { 'Shared Hit Blocks'?: number; 'WAL Bytes'?: number } },
    ];
    into.exec.push(plan['Execution Time'] * 1000);
    into.plan.push(plan['Planning Time'] * 1000);
    into.hit.push(plan.Plan['Shared Hit Blocks'] ?? 0);
    into.wal.push(plan.Plan['WAL Bytes'] ?? 0);
  } finally {
    await client.query('ROLLBACK');
  }
}

/** leasefence's JS per claim + release on a client answering from recorded rows. */
async function cannedCycleUs(pool: pg.Pool): Promise<number> {
  const replies = new Map<string, unknown>();
  const recorder = {
    acceptsNamedStatements: true,
    query: async (config: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
      const result = typeof config === 'string' ? await pool.query(config, values) : await pool.query(config);
      replies.set(typeof config === 'string' ? config : config.text, { rows: result.rows, rowCount: result.rowCount });
      return result;
    },
  } as unknown as PostgresClient;
  const recorded = createLeases(createPostgresStore({ client: recorder }), { holder: 'bench', ttlMs: TTL_MS });
  await recorded.release(await recorded.claimOrThrow('canned'));
  const canned = {
    acceptsNamedStatements: true,
    query: async (config: string | { text: string }) => replies.get(typeof config === 'string' ? config : config.text),
  } as unknown as PostgresClient;
  const leases = createLeases(createPostgresStore({ client: canned }), { holder: 'bench', ttlMs: TTL_MS });
  return cpuPerCycleUs(async () => leases.release(await leases.claimOrThrow('canned')), 10_000);
}

/** One connection's prepared statements after `cycles` claim + release cycles of leasefence (each mode) and raw. */
async function preparedCosts(url: string, admin: pg.Client, cycles: number): Promise<void> {
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await admin.query('SELECT pg_stat_statements_reset()');
  const plans: string[] = [];
  const run = async (label: string, cycle: (pool: pg.Pool) => Promise<() => Promise<unknown>>) => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      const once = await cycle(pool);
      for (let i = 0; i < cycles; i += 1) await once();
      const { rows } = await pool.query<{ generic: string; custom: string }>(
        'SELECT generic_plans::text AS generic, custom_plans::text AS custom FROM pg_prepared_statements ORDER BY prepare_time',
      );
      plans.push(`${label}: ${rows.map((row) => `${row.generic} generic / ${row.custom} custom`).join('; ')}`);
    } finally {
      await pool.end();
    }
  };
  for (const leaseCommit of ['durable', 'fast'] as const) {
    await run(`leasefence ${leaseCommit}`, async (pool) => {
      const leases = createLeases(createPostgresStore({ client: pool, leaseCommit }), { holder: 'bench', ttlMs: TTL_MS });
      return async () => leases.release(await leases.claimOrThrow(`prepared:${leaseCommit}`));
    });
  }
  await run('raw', async (pool) => async () => {
    const { rows } = await pool.query<{ token: string }>({ name: 'raw-claim', text: RAW_CLAIM, values: ['prepared', 'bench', TTL_MS] });
    await pool.query({ name: 'raw-release', text: RAW_RELEASE, values: ['prepared', 'bench', rows[0]?.token] });
  });
  const { rows } = await admin.query<Record<string, string>>(
    `SELECT CASE WHEN query LIKE '%raw_leases%' THEN 'raw ' || pg_catalog.split_part(pg_catalog.ltrim(query), ' ', 1)
        ELSE 'leasefence ' || CASE WHEN query LIKE '%try_claim%' THEN 'claim' ELSE 'release' END
        -- NOTE: pg_stat_statements shows constants as $n: the fast statements are the ones calling set_config.
        || CASE WHEN query LIKE '%set_config%' THEN ', fast' ELSE ', durable' END END AS statement,
      calls::text, plans::text, round((mean_exec_time * 1000)::numeric, 1)::text AS exec,
      round((mean_plan_time * 1000)::numeric, 1)::text AS plan, round(wal_records::numeric / calls, 2)::text AS records,
      round(wal_bytes::numeric / calls)::text AS bytes
    FROM pg_stat_statements WHERE calls >= $1 ORDER BY query LIKE '%raw_leases%', statement`,
    [cycles],
  );
  console.log(`\nPrepared statements, ${cycles} cycles on one connection each (pg_stat_statements, track_planning on):\n`);
  console.log(
    '| statement | calls | plans | execution µs | planning µs per plan | WAL records per call | WAL bytes per call |\n|---|---:|---:|---:|---:|---:|---:|',
  );
  for (const row of rows)
    console.log(
      `| ${row['statement']} | ${row['calls']} | ${row['plans']} | ${row['exec']} | ${row['plan']} | ${row['records']} | ${row['bytes']} |`,
    );
  console.log(`\npg_prepared_statements: ${plans.join('. ')}`);
}

async function main(): Promise<void> {
  const server = await startPostgres({
    settings: { fsync: 'on', shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track_planning': 'on' },
  });
  const pool = new pg.Pool({ connectionString: server.url, max: 2 });
  const admin = new pg.Client({ connectionString: server.url });
  try {
    await admin.connect();
    const sent: Sent[] = [];
    await createPostgresStore({ client: pool }).migrate();
    const store = createPostgresStore({ client: recordingClient(pool, sent) });
    for (const statement of RAW_SCHEMA) await admin.query(statement);
    await admin.query(`INSERT INTO leasefence_leases (key, token) SELECT 'idle:' || g, 1 FROM generate_series(1, 10000) AS g`);
    await admin.query(`INSERT INTO raw_leases (name, token, expires_at) SELECT 'idle:' || g, 1, now() FROM generate_series(1, 10000) AS g`);
    await admin.query('VACUUM ANALYZE');
    const leases = createLeases(store, { holder: 'bench', ttlMs: TTL_MS });
    await leases.release(await leases.claimOrThrow('probe'));
    sent.length = 0;
    const lease = await leases.claimOrThrow('probe');
    const claim = sent[0] as Sent;
    await leases.release(lease);
    const release = sent[1] as Sent;
    const held = await leases.claimOrThrow('write');
    sent.length = 0;
    await leases.fencedWrite(held, (tx) => tx.query('SELECT 1'));
    const lockShared = sent.find((statement) => statement.text.includes('FOR SHARE')) as Sent;

    await admin.query(RAW_CLAIM, ['raw', 'bench', TTL_MS]);
    const rawToken = (await admin.query<{ token: string }>('SELECT token::text FROM raw_leases WHERE name = $1', ['raw'])).rows[0]?.token;
    await admin.query(RAW_RELEASE, ['raw', 'bench', rawToken]);
    const withoutAttributes = release.text.replace(
      'AND pre.attributes OPERATOR(pg_catalog.@>) $6::text::jsonb',
      'AND $6::text IS NOT NULL',
    );
    if (withoutAttributes === release.text) throw new Error('the attributes check was not found in the release statement');
    const shortRow = release.text.replace(
      /\nSELECT pg_catalog\.json_build_array\([\s\S]*\)::text AS r\n/,
      '\nSELECT EXISTS (SELECT 1 FROM applied) AS applied, (SELECT pre.now FROM pre) AS now\n',
    );
    if (shortRow === release.text) throw new Error('the pre-image of the release statement was not found');
    const rows: Record<string, Explained> = {};
    const entry = (name: string): Explained => (rows[name] ??= { exec: [], plan: [], hit: [], wal: [] });
    for (let i = 0; i < N; i += 1) {
      await explain(admin, entry('leasefence claim (free key)'), claim.text, claim.values);
      await explain(admin, entry('leasefence release (held)'), release.text, release.values, claim);
      await explain(admin, entry('leasefence fencedWrite lock + check (FOR SHARE)'), lockShared.text, lockShared.values);
      // NOTE: counterfactual (pricing only): the fence check without its attribute containment test.
      await explain(admin, entry('variant: release without the attributes @> check'), withoutAttributes, release.values, claim);
      // NOTE: counterfactual (pricing only): a success row of (applied, now) instead of the JSON pre-image.
      await explain(admin, entry('variant: release replying (applied, now) only'), shortRow, release.values, claim);
      await explain(admin, entry('raw claim (free key)'), RAW_CLAIM, ['raw', 'bench', TTL_MS]);
      await explain(admin, entry('raw release (held)'), RAW_RELEASE, ['raw', 'bench', rawToken], {
        text: RAW_CLAIM,
        values: ['raw', 'bench', TTL_MS],
      });
    }
    console.log(
      `PostgreSQL ${(await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v}, fsync on; ${N} EXPLAIN (ANALYZE, BUFFERS, WAL) per statement (medians; text statements, planned each time)\n`,
    );
    console.log('| statement | execution µs | planning µs | shared hits | WAL bytes |\n|---|---:|---:|---:|---:|');
    for (const [name, explained] of Object.entries(rows)) {
      console.log(
        `| ${name} | ${median(explained.exec).toFixed(1)} | ${median(explained.plan).toFixed(1)} | ${median(explained.hit)} | ${median(explained.wal)} |`,
      );
    }
    console.log(
      `\nleasefence's own JS per claim + release on a client answering from recorded rows (no I/O): ${(await cannedCycleUs(pool)).toFixed(2)} µs`,
    );
    console.log(`pre-image sizes: claim ${JSON.stringify((await pool.query(claim.text, claim.values)).rows).length} bytes of JSON`);
    await preparedCosts(server.url, admin, N * 20);
  } finally {
    await admin.end().catch(() => undefined);
    await pool.end().catch(() => undefined);
    await server.stop();
  }
}

await main();
