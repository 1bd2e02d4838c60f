/**
 * EXPLAIN of the claim-next statement at 10,000 items (issue 24, capability 1): the pick reads O(limit) index
 * entries whether every item is claimable, none is (idle: the nextAt probe reads one entry), or the claim-next is
 * delivered twice (the secret index). Also: renews of a key that is no item stay HOT.
 *
 *   npx tsx test/adapters/postgres-claim-next-explain.ts
 */
import pg from 'pg';
import { createPostgresStore, fromPgClient } from '../../src/adapters/postgres/index.js';
import { itemStatements } from '../../src/adapters/postgres/items.js';
import { tableName } from '../../src/adapters/postgres/identifier.js';
import { secretHash } from '../../src/adapters/postgres/secret-hash.js';
import { newSecret } from '../../src/secret.js';
import { startPostgres } from '../support/postgres-server.js';

const ITEMS = 10_000;
const TABLE = 'leasefence_leases';

const server = await startPostgres();
const pool = new pg.Pool({ connectionString: server.url, max: 8 });
try {
  const store = createPostgresStore({ client: pool, table: TABLE });
  await store.migrate();
  // NOTE: 10,000 ordinary keys besides the items, as a table in use has.
  await pool.query(`INSERT INTO ${TABLE} (key, token, state) SELECT 'plain-' || i, 1, '{}'::jsonb FROM generate_series(1, ${ITEMS}) AS i`);
  const keys = Array.from({ length: ITEMS }, (_, index) => `item-${String(index).padStart(5, '0')}`);
  for (let start = 0; start < ITEMS; start += 1000) await store.addItems({ set: 'big', keys: keys.slice(start, start + 1000) });
  await pool.query(`VACUUM ANALYZE ${TABLE}`);
  const text = itemStatements(tableName(TABLE)).claimNext;
  const explain = async (title: string, secret: string): Promise<void> => {
    const client = await pool.connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE cn(text, text, text, text, bigint, text, text, text, boolean) AS ${text}`);
      const { rows } = await client.query(
        `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE cn('big', 'w', NULL, '${secretHash(secret)}', 60000, '{}', NULL, NULL, false)`,
      );
      console.log(`\n--- ${title}\n${(rows as Array<{ 'QUERY PLAN': string }>).map((row) => row['QUERY PLAN']).join('\n')}`);
      await client.query('DEALLOCATE cn');
    } finally {
      client.release();
    }
  };
  await explain(`${ITEMS} items, all claimable (grants the first)`, newSecret());
  // NOTE: every item granted (a live grant each), but for the last 10.
  const command = (secret: string) => ({
    set: 'big',
    holder: 'w',
    runId: null,
    secret,
    ttlMs: 600_000,
    attributes: {},
    onExpired: 'take-over' as const,
  });
  let granted = 1;
  const again = newSecret();
  await store.claimNext(command(again));
  granted += 1;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (granted < ITEMS - 10) {
        granted += 1;
        await store.claimNext(command(newSecret()));
      }
    }),
  );
  await pool.query(`VACUUM ANALYZE ${TABLE}`);
  await explain(`${granted} of ${ITEMS} items held, 10 claimable`, newSecret());
  while ((await store.claimNext(command(newSecret()))).ok);
  await pool.query(`VACUUM ANALYZE ${TABLE}`);
  await explain(`all ${ITEMS} items held (idle, nextAt probe)`, newSecret());
  await explain('delivered twice (the secret of a live grant)', again);
  // NOTE: HOT: renews of an ordinary key write no index entry. One connection of its own, whose statistics it
  // flushes itself (pg_stat_force_next_flush) before reading them.
  const own = new pg.Client({ connectionString: server.url });
  await own.connect();
  try {
    const single = createPostgresStore({ client: fromPgClient(own), table: TABLE });
    const secret = 's'.repeat(32);
    const leased = await single.claim({
      key: 'plain-1',
      holder: 'h',
      runId: null,
      secret,
      ttlMs: 60_000,
      attributes: {},
      recovering: false,
    });
    if (!leased.ok) throw new Error('claim refused');
    const counts = async () => {
      await own.query('SELECT pg_stat_force_next_flush()');
      const { rows } = await own.query(
        'SELECT n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE relname = $1',
        [TABLE],
      );
      return rows[0] as { upd: number; hot: number };
    };
    const before = await counts();
    for (let index = 0; index < 500; index += 1)
      await single.renew({ fence: { key: 'plain-1', token: leased.token, secret, holder: 'h', runId: null }, ttlMs: 60_000 });
    const after = await counts();
    console.log(`\nrenews of an ordinary key: ${after.hot - before.hot} HOT of ${after.upd - before.upd} updates`);
  } finally {
    await own.end();
  }
} finally {
  await pool.end();
  await server.stop();
}
