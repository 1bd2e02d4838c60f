/**
 * Server CPU per `fencedStatement` (one INSERT ... FROM fence): this checkout's statement against another
 * checkout's (BENCH_COMPARE, e.g. `git archive main src | tar -x -C /tmp/before`), each as a prepared
 * statement on a backend of its own (CPU from `/proc/<pid>/sched`), in interleaved rounds, fsync off.
 *
 *   BENCH_COMPARE=/tmp/before/src npx tsx bench/postgres-fenced-statement.ts   (BENCH_N=300, BENCH_ROUNDS=21)
 */
import pg from 'pg';
import { createPostgresStore } from '../src/adapters/postgres/index.js';
import { fencedStatementSql } from '../src/adapters/postgres/fenced-statement.js';
import { tableName } from '../src/adapters/postgres/identifier.js';
import { fenceParams } from '../src/adapters/postgres/statements.js';
import { createLeases } from '../src/leases.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { runtimeNs } from './postgres-probes.js';

const N = Number(process.env['BENCH_N'] ?? 300);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 21);
const WRITE = 'INSERT INTO bench_ledger (key, token) SELECT key, token FROM fence RETURNING 1';

async function main(): Promise<void> {
  const compare = process.env['BENCH_COMPARE'];
  if (compare === undefined) throw new Error('set BENCH_COMPARE to another checkout’s src/');
  const server = await startPostgres({ settings: { fsync: 'off' } });
  const pool = new pg.Pool({ connectionString: server.url, max: 2 });
  const clients: pg.Client[] = [];
  try {
    const store = createPostgresStore({ client: pool });
    await store.migrate();
    await pool.query('CREATE TABLE bench_ledger (id bigserial PRIMARY KEY, key text, token bigint)');
    const lease = await createLeases(store, { holder: 'bench', ttlMs: 3_600_000 }).claimOrThrow('fs:bench');
    const params = fenceParams(lease.fence());
    const other = (await import(`${compare}/adapters/postgres/fenced-statement.ts`)) as { fencedStatementSql: typeof fencedStatementSql };
    const table = tableName('leasefence_leases');
    const variants = [
      { name: 'fencedStatement (this checkout)', text: fencedStatementSql(table, WRITE, 0) },
      { name: `fencedStatement (${compare})`, text: other.fencedStatementSql(table, WRITE, 0) },
    ];
    const opened = await Promise.all(
      variants.map(async (variant, index) => {
        const client = new pg.Client({ connectionString: server.url });
        clients.push(client);
        await client.connect();
        const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;
        const run = async (): Promise<void> => {
          const { rows } = await client.query<{ leasefence_written: string }>({ name: `fs${index}`, text: variant.text, values: params });
          if (rows[0]?.leasefence_written !== '1') throw new Error(`${variant.name}: not written`);
        };
        for (let i = 0; i < 50; i += 1) await run();
        return { ...variant, pid, run, us: [] as number[] };
      }),
    );
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const variant of round % 2 === 0 ? opened : [...opened].reverse()) {
        const before = runtimeNs(variant.pid);
        for (let i = 0; i < N; i += 1) await variant.run();
        variant.us.push((runtimeNs(variant.pid) - before) / 1000 / N);
      }
    }
    const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
    const mine = opened[0]!.us;
    console.log(
      '| statement | server CPU µs per statement (median of rounds) | ÷ this checkout (median of per-round ratios) |\n|---|---:|---:|',
    );
    for (const variant of opened)
      console.log(
        `| ${variant.name} | ${median(variant.us).toFixed(1)} | ${median(variant.us.map((us, round) => us / (mine[round] ?? Number.NaN))).toFixed(2)} |`,
      );
  } finally {
    for (const client of clients) await client.end();
    await pool.end();
    await server.stop();
  }
}

await main();
