/**
 * What `pg_notify` in a release costs under concurrency, fsync on: the raw single-statement claim/release
 * with and without `RETURNING pg_notify(...)` on the release, each with `BENCH_PG_CLIENTS` clients (pools of
 * their own), interleaved rounds of `BENCH_SLICE_MS`. PostgreSQL serialises every transaction that
 * notifies, from its commit until after its commit record is flushed (a lock on the database object,
 * async.c PreCommit_Notify): releases that notify cannot share a WAL flush.
 *
 *   npx tsx bench/postgres-notify-cost.ts
 */
import pg from 'pg';
import { startPostgres } from '../test/support/postgres-server.js';
import { RAW_CLAIM, RAW_RELEASE, RAW_SCHEMA } from './postgres-raw.js';

const CLIENTS = (process.env['BENCH_PG_CLIENTS'] ?? '1,8,32').split(',').map(Number);
const SLICE_MS = Number(process.env['BENCH_SLICE_MS'] ?? 400);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
const FSYNC = process.env['BENCH_FSYNC'] ?? 'on';

const NOTIFYING_RELEASE = `${RAW_RELEASE} RETURNING pg_catalog.pg_notify('raw:freed', name)`;

async function slice(pool: pg.Pool, clients: number, release: string, tag: string): Promise<number> {
  const deadline = performance.now() + SLICE_MS;
  let cycles = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, worker) => {
      const key = `${tag}:${clients}:${worker}`;
      while (performance.now() < deadline) {
        const { rows } = await pool.query<{ token: string }>({ name: 'c', text: RAW_CLAIM, values: [key, 'bench', 60_000] });
        await pool.query({ name: tag, text: release, values: [key, 'bench', rows[0]?.token] });
        cycles += 1;
      }
    }),
  );
  return (cycles * 1000) / SLICE_MS;
}

const server = await startPostgres({ settings: { fsync: FSYNC } });
const pools: pg.Pool[] = [];
try {
  const admin = new pg.Pool({ connectionString: server.url, max: 1 });
  pools.push(admin);
  for (const statement of RAW_SCHEMA) await admin.query(statement);
  console.log(
    `fsync ${FSYNC}\n\n| clients | raw cycles/s | raw + pg_notify on release | ratio (median of ${ROUNDS} rounds) |\n|---:|---:|---:|---:|`,
  );
  for (const clients of CLIENTS) {
    const plain = new pg.Pool({ connectionString: server.url, max: clients });
    const notifying = new pg.Pool({ connectionString: server.url, max: clients });
    pools.push(plain, notifying);
    const rates: [number, number][] = [];
    await slice(plain, clients, RAW_RELEASE, 'plain');
    await slice(notifying, clients, NOTIFYING_RELEASE, 'notify');
    for (let round = 0; round < ROUNDS; round += 1) {
      const a = await slice(plain, clients, RAW_RELEASE, 'plain');
      const b = await slice(notifying, clients, NOTIFYING_RELEASE, 'notify');
      rates.push([a, b]);
    }
    const median = (values: number[]): number => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? Number.NaN;
    console.log(
      `| ${clients} | ${median(rates.map(([a]) => a)).toFixed(0)} | ${median(rates.map(([, b]) => b)).toFixed(0)} | ${median(rates.map(([a, b]) => b / a)).toFixed(2)} |`,
    );
  }
} finally {
  for (const pool of pools) await pool.end();
  await server.stop();
}
