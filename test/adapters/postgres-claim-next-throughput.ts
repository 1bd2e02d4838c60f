/**
 * Claim-next + release cycles per second on PostgreSQL, 8 clients (a pool each) over 1,000 items, against the
 * raw queue baseline of docs/design/claim-next.md (one table, `SKIP LOCKED` select-and-update, a release UPDATE:
 * no token, fence, checkpoint or ending). Same server, same run, alternating rounds; the median of each.
 *
 *   npx tsx test/adapters/postgres-claim-next-throughput.ts      (CN_MS=2000 per round, CN_ROUNDS=3)
 */
import pg from 'pg';
import { createPostgresStore, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { newSecret } from '../../src/secret.js';
import { startPostgres } from '../support/postgres-server.js';

const CLIENTS = 8;
const ITEMS = 1_000;
const MEASURE_MS = Number(process.env['CN_MS'] ?? 2_000);
const ROUNDS = Number(process.env['CN_ROUNDS'] ?? 3);

const RAW_SCHEMA = `CREATE TABLE bench_items (set_name text, key text PRIMARY KEY, holder text, available_at timestamptz NOT NULL);
CREATE INDEX ON bench_items (set_name, available_at)`;
const RAW_CLAIM = `WITH next AS (SELECT key FROM bench_items WHERE set_name = $1 AND available_at <= clock_timestamp()
  ORDER BY available_at LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE bench_items AS i SET holder = $2, available_at = clock_timestamp() + $3 * interval '1 millisecond'
FROM next WHERE i.key = next.key RETURNING i.key`;
const RAW_RELEASE = `UPDATE bench_items SET holder = NULL, available_at = clock_timestamp() WHERE key = $1 AND holder = $2`;

const server = await startPostgres({ settings: { fsync: 'off' } });
const pools = Array.from({ length: CLIENTS }, () => new pg.Pool({ connectionString: server.url, max: 1 }));
try {
  const stores: PostgresStore[] = pools.map((client) => createPostgresStore({ client }));
  await (stores[0] as PostgresStore).migrate();
  const keys = Array.from({ length: ITEMS }, (_, index) => `item-${index}`);
  await (stores[0] as PostgresStore).addItems({ set: 'q', keys });
  await (pools[0] as pg.Pool).query(RAW_SCHEMA);
  await (pools[0] as pg.Pool).query(
    `INSERT INTO bench_items SELECT 'q', 'item-' || i, NULL, clock_timestamp() FROM generate_series(0, ${ITEMS - 1}) AS i`,
  );
  const run = async (cycle: (index: number) => Promise<void>): Promise<number> => {
    const until = Date.now() + MEASURE_MS;
    let cycles = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, index) => {
        while (Date.now() < until) {
          await cycle(index);
          cycles += 1;
        }
      }),
    );
    return (cycles * 1000) / MEASURE_MS;
  };
  const leasefence = async (index: number): Promise<void> => {
    const store = stores[index] as PostgresStore;
    const secret = newSecret();
    const holder = `w${index}`;
    const granted = await store.claimNext({ set: 'q', holder, runId: null, secret, ttlMs: 30_000, attributes: {}, onExpired: 'take-over' });
    if (!granted.ok) return;
    await store.release({ fence: { key: granted.key, token: granted.token, secret, holder, runId: null } });
  };
  const raw = async (index: number): Promise<void> => {
    const pool = pools[index] as pg.Pool;
    const holder = `w${index}`;
    const { rows } = await pool.query({ name: 'raw-claim', text: RAW_CLAIM, values: ['q', holder, 30_000] });
    const key = (rows[0] as { key: string } | undefined)?.key;
    if (key !== undefined) await pool.query({ name: 'raw-release', text: RAW_RELEASE, values: [key, holder] });
  };
  const results: Record<string, number[]> = { leasefence: [], raw: [] };
  await run(leasefence);
  await run(raw);
  for (let round = 0; round < ROUNDS; round += 1) {
    results['leasefence']?.push(await run(leasefence));
    results['raw']?.push(await run(raw));
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] as number;
  const [ours, base] = [median(results['leasefence'] as number[]), median(results['raw'] as number[])];
  console.log(
    `claim-next + release, ${CLIENTS} clients, ${ITEMS} items: leasefence ${ours.toFixed(0)}/s, raw ${base.toFixed(0)}/s (${(ours / base).toFixed(2)}x)`,
  );
} finally {
  await Promise.all(pools.map((pool) => pool.end()));
  await server.stop();
}
