/**
 * Postgres benchmark: leasefence against a raw single-statement baseline and advisory locks, on one
 * ephemeral cluster (fsync off, synchronous_commit on), every client with a connection of its own.
 *
 *   npx tsx bench/postgres.ts          (BENCH_MS=1500 per measurement, BENCH_ROUNDS=3, median reported)
 *
 * - claim + release cycles per second at 1, 8 and 32 concurrent clients, each on its own key:
 *   leasefence (`leases.claim` + `leases.release`: 2 statements, tokens, history, checkpoint kept), the raw
 *   baseline (INSERT ... ON CONFLICT claim + UPDATE release, plain SQL: 2 statements, sent as pg sends
 *   plain text, and as named prepared statements like leasefence's) and pg_try_advisory_lock +
 *   pg_advisory_unlock (2 statements, no token, no expiry);
 * - fenced writes per second (one ledger INSERT each, under a lease each client holds): leasefence's
 *   one-statement form (`fencedStatement`), its transaction form (`fencedWrite`: BEGIN, lock, INSERT,
 *   COMMIT), the raw single-statement fenced INSERT (a CTE locking the lease row FOR SHARE), and a plain
 *   INSERT under a held advisory lock (no fence at all: what writes cost without any check).
 */
import pg from 'pg';
import { createPostgresStore, fromPgClient, type PostgresStore } from '../src/adapters/postgres/index.js';
import type { Lease } from '../src/lease.js';
import { createLeases, type Leases } from '../src/leases.js';
import { startPostgres } from '../test/support/postgres-server.js';

const MEASURE_MS = Number(process.env['BENCH_MS'] ?? 1_500);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const CLIENTS = [1, 8, 32];
const TTL_MS = 60_000;

const RAW_SCHEMA = [
  `CREATE TABLE raw_leases (name text PRIMARY KEY, holder text, token bigint NOT NULL, expires_at timestamptz NOT NULL)`,
  `CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL, token bigint NOT NULL, entry text NOT NULL)`,
];
/** The research notes' single-statement claim (testing.md §6): READ COMMITTED is enough. */
const RAW_CLAIM = `INSERT INTO raw_leases AS l (name, holder, token, expires_at)
VALUES ($1, $2, 1, clock_timestamp() + make_interval(secs => $3::float8 / 1000))
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, token = l.token + 1, expires_at = EXCLUDED.expires_at
WHERE l.expires_at <= clock_timestamp() OR l.holder IS NULL
RETURNING token::text`;
const RAW_RELEASE = `UPDATE raw_leases SET holder = NULL, expires_at = clock_timestamp() WHERE name = $1 AND holder = $2 AND token = $3`;
const RAW_FENCED_INSERT = `WITH cur AS (
  SELECT token FROM raw_leases WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp() FOR SHARE
)
INSERT INTO ledger (key, token, entry) SELECT $1, token, $4 FROM cur RETURNING id`;

/** One client's connection and what each contender needs on it. */
interface Worker {
  readonly index: number;
  readonly client: pg.Client;
  readonly store: PostgresStore;
  readonly leases: Leases<PostgresStore>;
}

/** A contender: `prepare(worker)` sets up (untimed) and returns one timed operation. */
interface Contender {
  readonly name: string;
  prepare(worker: Worker): Promise<() => Promise<void>>;
}

const cycles: Contender[] = [
  {
    name: 'leasefence claim + release',
    prepare: async ({ index, leases }) => {
      const key = `lf:${index}`;
      return async () => {
        const claimed = await leases.claim(key);
        if (!claimed.ok) throw new Error('leasefence: not granted');
        await leases.release(claimed.lease);
      };
    },
  },
  {
    name: 'raw SQL claim + release',
    prepare: async ({ index, client }) => {
      const name = `raw:${index}`;
      return async () => {
        const { rows } = await client.query<{ token: string }>(RAW_CLAIM, [name, 'bench', TTL_MS]);
        if (rows[0] === undefined) throw new Error('raw: not granted');
        await client.query(RAW_RELEASE, [name, 'bench', rows[0].token]);
      };
    },
  },
  {
    name: 'raw SQL claim + release, prepared',
    prepare: async ({ index, client }) => {
      const name = `raw-prepared:${index}`;
      return async () => {
        const { rows } = await client.query<{ token: string }>({ name: 'raw-claim', text: RAW_CLAIM, values: [name, 'bench', TTL_MS] });
        if (rows[0] === undefined) throw new Error('raw: not granted');
        await client.query({ name: 'raw-release', text: RAW_RELEASE, values: [name, 'bench', rows[0].token] });
      };
    },
  },
  {
    name: 'pg_try_advisory_lock + unlock',
    prepare: async ({ index, client }) => async () => {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(42, $1) AS locked', [index]);
      if (rows[0]?.locked !== true) throw new Error('advisory: not locked');
      await client.query('SELECT pg_advisory_unlock(42, $1)', [index]);
    },
  },
];

/** Every preparation takes fresh keys: a lease claimed for an earlier measurement is still held. */
let preparation = 0;

const holding = async (leases: Leases<PostgresStore>, key: string): Promise<Lease> => {
  const claimed = await leases.claim(key);
  if (!claimed.ok) throw new Error(`${key}: not granted`);
  return claimed.lease;
};

const writes: Contender[] = [
  {
    name: 'leasefence fencedStatement (1 statement)',
    prepare: async ({ index, store, leases }) => {
      const lease = await holding(leases, `write-stmt:${index}:${++preparation}`);
      const insert = `INSERT INTO ledger (key, token, entry) SELECT fence.key, fence.token, $1 FROM fence RETURNING id`;
      return async () => {
        const outcome = await store.fencedStatement(lease, insert, ['x']);
        if (!outcome.ok) throw new Error('leasefence: fenced');
      };
    },
  },
  {
    name: 'leasefence fencedWrite (transaction)',
    prepare: async ({ index, leases }) => {
      const lease = await holding(leases, `write-tx:${index}:${++preparation}`);
      return async () => {
        const outcome = await leases.fencedWrite(lease, (tx) => tx.query(`INSERT INTO ledger (key, token, entry) VALUES ($1, $2, 'x')`, [tx.key, tx.token.toString()]));
        if (!outcome.ok) throw new Error('leasefence: fenced');
      };
    },
  },
  {
    name: 'raw SQL fenced INSERT (1 statement)',
    prepare: async ({ index, client }) => {
      const name = `raw-write:${index}:${++preparation}`;
      const { rows } = await client.query<{ token: string }>(RAW_CLAIM, [name, 'bench', TTL_MS]);
      const token = rows[0]!.token;
      return async () => {
        const inserted = await client.query(RAW_FENCED_INSERT, [name, 'bench', token, 'x']);
        if (inserted.rowCount !== 1) throw new Error('raw: fenced');
      };
    },
  },
  {
    name: 'raw SQL fenced INSERT, prepared',
    prepare: async ({ index, client }) => {
      const name = `raw-write-prepared:${index}:${++preparation}`;
      const { rows } = await client.query<{ token: string }>(RAW_CLAIM, [name, 'bench', TTL_MS]);
      const token = rows[0]!.token;
      return async () => {
        const inserted = await client.query({ name: 'raw-fenced-insert', text: RAW_FENCED_INSERT, values: [name, 'bench', token, 'x'] });
        if (inserted.rowCount !== 1) throw new Error('raw: fenced');
      };
    },
  },
  {
    name: 'INSERT under advisory lock (unfenced)',
    prepare: async ({ index, client }) => {
      await client.query('SELECT pg_advisory_lock(43, $1)', [index]);
      return async () => void (await client.query(`INSERT INTO ledger (key, token, entry) VALUES ($1, 0, 'x')`, [`adv:${index}`]));
    },
  },
];

/** Operations per second of `workers` concurrent loops of `contender` for `MEASURE_MS`. */
async function measure(contender: Contender, workers: readonly Worker[]): Promise<number> {
  const operations = await Promise.all(workers.map((worker) => contender.prepare(worker)));
  for (const operation of operations) await operation(); // warm up (statement and plan caches)
  let done = 0;
  const deadline = performance.now() + MEASURE_MS;
  const start = performance.now();
  await Promise.all(
    operations.map(async (operation) => {
      while (performance.now() < deadline) {
        await operation();
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fmt = (value: number): string => Math.round(value).toLocaleString('en-US');
const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}x`;

async function main(): Promise<void> {
  const server = await startPostgres();
  const workers: Worker[] = [];
  try {
    for (let index = 0; index < Math.max(...CLIENTS); index += 1) {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      const store = createPostgresStore({ client: fromPgClient(client) });
      workers.push({ index, client, store, leases: createLeases(store, { holder: `bench-${index}`, ttlMs: TTL_MS }) });
    }
    await workers[0]!.store.migrate();
    for (const statement of RAW_SCHEMA) await workers[0]!.client.query(statement);
    const version = (await workers[0]!.client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v;
    console.log(`PostgreSQL ${version}, node ${process.version}, pg 8, ${MEASURE_MS} ms x ${ROUNDS} rounds (median), one connection per client\n`);

    const table: string[] = [];
    // NOTE: ratios are leasefence's throughput over each baseline's (1.00x: as fast; 0.50x: half as fast).
    const sections = [
      { title: 'claim + release cycles/s', contenders: cycles, ratios: [[0, 1], [0, 2], [0, 3]] },
      { title: 'fenced writes/s', contenders: writes, ratios: [[0, 2], [0, 3], [1, 2], [0, 4]] },
    ] as const;
    for (const { title, contenders, ratios } of sections) {
      const ratioNames = ratios.map(([a, b]) => `${contenders[a]!.name} / ${contenders[b]!.name}`);
      table.push(`| ${title}, clients | ${contenders.map((c) => c.name).join(' | ')} | ${ratioNames.join(' | ')} |`);
      table.push(`|---:|${contenders.map(() => '---:').join('|')}|${ratios.map(() => '---:').join('|')}|`);
      for (const clients of CLIENTS) {
        const samples = contenders.map((): number[] => []);
        for (let round = 0; round < ROUNDS; round += 1) {
          // NOTE: contenders alternate within each round, so a drift of the machine hits all of them alike.
          for (const [i, contender] of contenders.entries()) samples[i]!.push(await measure(contender, workers.slice(0, clients)));
        }
        const results = samples.map(median);
        table.push(`| ${clients} | ${results.map(fmt).join(' | ')} | ${ratios.map(([a, b]) => ratio(results[a]!, results[b]!)).join(' | ')} |`);
        console.error(`done: ${title} at ${clients} clients`);
      }
      table.push('');
    }
    console.log(table.join('\n'));
  } finally {
    await Promise.all(workers.map((worker) => worker.client.end()));
    await server.stop();
  }
}

await main();
