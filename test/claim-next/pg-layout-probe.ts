/**
 * A probe (not a test: run by hand with `npx tsx test/claim-next/pg-layout-probe.ts`) of the PostgreSQL layout that
 * docs/design/claim-next.md weighs: `available_at` on the lease row, as a generated column or set by each statement,
 * keeps updates of ordinary keys HOT; the claim-next pick reads O(1) index rows with SKIP LOCKED (and every entry of
 * the set when its bound is the volatile `clock_timestamp()` itself); and what each variant costs a renew-like UPDATE
 * of an ordinary key (server-side loop, a commit per UPDATE, best of 7). Starts a throwaway PostgreSQL
 * (test/support/postgres-server.ts). Figures of one run on a shared 2-core machine are in the design note.
 */
import pg from 'pg';
import { startPostgres } from '../support/postgres-server.js';

const COLUMNS = `key text PRIMARY KEY, token bigint NOT NULL, holder text, run_id text, secret_hash text,
  acquired_at timestamptz(3), expires_at timestamptz(3), attributes jsonb, ending_kind text, ending_at timestamptz(3),
  checkpoint_json text, recovery_required boolean NOT NULL DEFAULT false, held_until timestamptz(3), state jsonb NOT NULL DEFAULT '{}'`;
const ITEM_COLUMNS = `, item_set text, item_due_at timestamptz(3),
  available_at timestamptz(3) GENERATED ALWAYS AS (
    CASE WHEN item_set IS NULL OR recovery_required THEN NULL
         WHEN holder IS NOT NULL AND expires_at IS NULL THEN NULL
         ELSE GREATEST(item_due_at, CASE WHEN holder IS NOT NULL THEN expires_at ELSE ending_at END, held_until)
    END) STORED,
  item_secret text GENERATED ALWAYS AS (CASE WHEN item_set IS NULL THEN NULL ELSE secret_hash END) STORED`;

/** The availableSince expression over a row's columns (as the generated column and the SET variant compute it). */
const AVAILABLE = `CASE WHEN item_set IS NULL OR recovery_required THEN NULL
         WHEN holder IS NOT NULL AND expires_at IS NULL THEN NULL
         ELSE GREATEST(item_due_at, CASE WHEN holder IS NOT NULL THEN expires_at ELSE ending_at END, held_until) END`;
const RENEW = (table: string) =>
  table === 'set_in_statement'
    ? // NOTE: the columns' new values, as the statement's SET computes them (an UPDATE's SET reads the old row).
      `UPDATE ${table} SET expires_at = clock_timestamp() + interval '30 seconds', secret_hash = md5($2), holder = 'w',
        available_at = CASE WHEN item_set IS NULL THEN NULL ELSE GREATEST(item_due_at, clock_timestamp() + interval '30 seconds', held_until) END
        WHERE key = $1`
    : `UPDATE ${table} SET expires_at = clock_timestamp() + interval '30 seconds', secret_hash = md5($2), holder = 'w' WHERE key = $1`;

async function hotShare(client: pg.Client, table: string, key: string, updates: number): Promise<{ upd: number; hot: number }> {
  await client.query('SELECT pg_stat_reset()');
  for (let i = 0; i < updates; i += 1) await client.query(RENEW(table), [key, String(i)]);
  await client.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await client.query<{ upd: string; hot: string }>(
    'SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = $1',
    [table],
  );
  return { upd: Number(rows[0]?.upd), hot: Number(rows[0]?.hot) };
}

const server = await startPostgres();
const client = new pg.Client({ connectionString: server.url });
await client.connect();
try {
  console.log((await client.query('SHOW server_version')).rows[0]);
  await client.query(`CREATE TABLE plain_leases (${COLUMNS})`);
  await client.query(`CREATE TABLE item_leases (${COLUMNS}${ITEM_COLUMNS})`);
  await client.query(`CREATE INDEX item_leases_ready ON item_leases (item_set, available_at, key) WHERE item_set IS NOT NULL`);
  await client.query(`CREATE INDEX item_leases_secret ON item_leases (item_set, item_secret) WHERE item_secret IS NOT NULL`);
  for (const table of ['plain_leases', 'item_leases']) {
    await client.query(`INSERT INTO ${table} (key, token) SELECT 'ordinary-' || g, 1 FROM generate_series(1, 1000) AS g`);
  }
  // 1,000 items: 500 held (live grants), 500 available since their due time.
  await client.query(`INSERT INTO item_leases (key, token, item_set, item_due_at, holder, secret_hash, expires_at)
    SELECT '{s}:' || lpad(g::text, 4, '0'), 1, 's', clock_timestamp() - interval '1 hour',
      CASE WHEN g % 2 = 0 THEN 'w' END, CASE WHEN g % 2 = 0 THEN md5(g::text) END,
      CASE WHEN g % 2 = 0 THEN clock_timestamp() + interval '1 hour' END
    FROM generate_series(1, 1000) AS g`);
  await client.query('VACUUM ANALYZE plain_leases, item_leases');

  console.log('HOT, ordinary key, table without item columns:', await hotShare(client, 'plain_leases', 'ordinary-7', 500));
  console.log('HOT, ordinary key, table with item columns:   ', await hotShare(client, 'item_leases', 'ordinary-7', 500));
  console.log('HOT, item key, table with item columns:        ', await hotShare(client, 'item_leases', '{s}:0002', 500));

  const pick = `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
    SELECT key FROM item_leases WHERE item_set = 's' AND available_at <= clock_timestamp() AND state @> '{}'
    ORDER BY available_at, key LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED`;
  console.log((await client.query(pick)).rows.map((row) => row['QUERY PLAN']).join('\n'));

  // NOTE: clock_timestamp() is volatile, so `available_at <= clock_timestamp()` is a filter, not an index bound: with
  // nothing claimable the scan reads every entry of the set. An InitPlan makes it a bound.
  await client.query(
    `UPDATE item_leases SET holder = 'w', secret_hash = md5(key), expires_at = clock_timestamp() + interval '1 hour' WHERE item_set = 's'`,
  );
  for (const bound of ['clock_timestamp()', '(SELECT clock_timestamp())']) {
    const idle = `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
      SELECT key FROM item_leases WHERE item_set = 's' AND available_at <= ${bound}
      ORDER BY available_at, key LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED`;
    console.log(`idle set (1,000 live grants), bound ${bound}:`);
    console.log((await client.query(idle)).rows.map((row) => row['QUERY PLAN']).join('\n'));
  }

  await client.query(`CREATE TABLE generated_only (${COLUMNS}${ITEM_COLUMNS})`);
  await client.query(`CREATE TABLE set_in_statement (${COLUMNS}, item_set text, item_due_at timestamptz(3), available_at timestamptz(3))`);
  await client.query(`CREATE INDEX set_in_statement_ready ON set_in_statement (item_set, available_at, key) WHERE item_set IS NOT NULL`);
  await client.query(`CREATE TABLE wide (${COLUMNS}, item_set text, item_due_at timestamptz(3), available_at timestamptz(3))`);
  for (const table of ['generated_only', 'set_in_statement', 'wide']) {
    await client.query(`INSERT INTO ${table} (key, token) SELECT 'ordinary-' || g, 1 FROM generate_series(1, 1000) AS g`);
    await client.query(`VACUUM ANALYZE ${table}`);
  }
  void AVAILABLE;
  console.log('HOT, ordinary key, available_at set by the statement:', await hotShare(client, 'set_in_statement', 'ordinary-7', 500));
  const tables = ['plain_leases', 'wide', 'generated_only', 'item_leases', 'set_in_statement'];
  // NOTE: server-side loops (plpgsql: a cached plan, executor start per UPDATE, as a prepared statement), the
  // best of 7 alternating rounds per table: the client round trip and a shared machine's noise stay out.
  const best = new Map(tables.map((table) => [table, Number.POSITIVE_INFINITY]));
  for (let round = 0; round < 7; round += 1) {
    for (const table of [...tables.slice(round % tables.length), ...tables.slice(0, round % tables.length)]) {
      const text = RENEW(table).replace('$1', `'ordinary-9'`).replace('$2', 'i::text');
      const start = performance.now();
      await client.query(`DO $$ BEGIN FOR i IN 1..5000 LOOP ${text}; COMMIT; END LOOP; END $$`);
      best.set(table, Math.min(best.get(table) ?? 0, performance.now() - start));
    }
  }
  const base = best.get('plain_leases') ?? 1;
  for (const [table, ms] of best) {
    console.log(
      `renew-like UPDATE of an ordinary key, server-side, best of 7 x 5,000 (a commit each): ${table} ${((ms * 1000) / 5000).toFixed(2)} µs (ratio ${(ms / base).toFixed(3)})`,
    );
  }
} finally {
  await client.end();
  await server.stop();
}
