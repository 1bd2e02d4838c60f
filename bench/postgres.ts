/**
 * Postgres benchmark: leasefence against a raw single-statement baseline and advisory locks, on one
 * ephemeral cluster (fsync off, synchronous_commit on, pg_stat_statements loaded), every client with a
 * pg connection of its own.
 *
 *   npx tsx bench/postgres.ts          (BENCH_MS=1500 per measurement, BENCH_ROUNDS=3, median reported,
 *                                       BENCH_CLIENTS=1,8,32)
 *   BENCH_COMPARE=/path/to/other/src npx tsx bench/postgres.ts   (adds that tree's leasefence: before/after;
 *                                       e.g. `git archive HEAD src | tar -x -C /tmp/before`, then /tmp/before/src)
 *
 * Every lease table (leasefence's and the raw baseline's) holds the same 10,000 idle keys, so lookups are
 * index scans as in a table in use. Like is compared with like: every contender runs once with its
 * statements as named prepared statements (parsed and planned once per connection: leasefence's default
 * on pg) and once as plain parameterised text (parsed and planned per call: the raw SQL as pg sends it by
 * default; leasefence with `prepare: false`, which claims through its plpgsql claim function), and the
 * ratios pair prepared with prepared and text with text.
 * - claim + release cycles at 1, 8 and 32 concurrent clients, each on its own key: leasefence
 *   (`leases.claim` + `leases.release`: 2 statements, tokens, history, checkpoint kept), the raw baseline
 *   (INSERT ... ON CONFLICT claim + UPDATE release: 2 statements, a token, no secret, no history) and
 *   pg_try_advisory_lock + pg_advisory_unlock (2 statements, no token, no expiry);
 * - fenced writes (one ledger INSERT each, under a lease each client holds): leasefence's one-statement
 *   form (`fencedStatement`) and transaction form (`fencedWrite`: BEGIN, lock, INSERT, COMMIT), the raw
 *   single-statement fenced INSERT (a CTE locking the lease row FOR SHARE) and a plain INSERT under a held
 *   advisory lock (no fence at all: what the write costs without any check).
 * Besides throughput (which a loaded machine moves), each measurement reports what an operation cost (see
 * postgres-probes.ts): server time per statement, backend and client CPU per operation, WAL bytes.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import * as adapter from '../src/adapters/postgres/index.js';
import type { Lease } from '../src/lease.js';
import * as leasesModule from '../src/leases.js';
import type { Leases as LeasesOf } from '../src/leases-types.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { hotUpdates, PROBE_SETTINGS, startProbe, type Cost } from './postgres-probes.js';
import { RAW_CLAIM, RAW_FENCED_INSERT, RAW_RELEASE, RAW_SCHEMA } from './postgres-raw.js';

const MEASURE_MS = Number(process.env['BENCH_MS'] ?? 1_500);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const CLIENTS = (process.env['BENCH_CLIENTS'] ?? '1,8,32').split(',').map(Number);
const COMPARE = process.env['BENCH_COMPARE'];
const TTL_MS = 60_000;
const SEED_KEYS = 10_000;

type Adapter = Pick<typeof adapter, 'createPostgresStore' | 'fromPgClient'>;
type LeasesFactory = typeof leasesModule.createLeases;
type Store = adapter.PostgresStore;
type Leases = LeasesOf<Store>;
/** How statements travel: named prepared statements, or parameterised text parsed and planned per call. */
type Mode = 'prepared' | 'text';

/** A leasefence build (this tree, or BENCH_COMPARE's) on one connection. */
interface Build {
  readonly label: string;
  readonly table: string;
  readonly adapter: Adapter;
  readonly createLeases: LeasesFactory;
}

/** One client's connection and the leasefence stores on it. */
interface Worker {
  readonly index: number;
  readonly client: pg.Client;
  readonly backendPid: number;
  leasefence(build: Build, mode: Mode): { store: Store; leases: Leases };
}

/** A contender: `prepare(worker)` sets up (untimed) and returns one timed operation. */
interface Contender {
  readonly name: string;
  prepare(worker: Worker): Promise<() => Promise<void>>;
}

/** Sends `text` on the worker's connection as a named prepared statement or as parameterised text. */
const send = (client: pg.Client, mode: Mode, name: string, text: string, values: unknown[]) =>
  mode === 'prepared' ? client.query<Record<string, string>>({ name, text, values }) : client.query<Record<string, string>>(text, values);

/** Every preparation takes fresh keys: a lease claimed for an earlier measurement is still held. */
let preparation = 0;

function cycleContenders(builds: readonly Build[]): Contender[] {
  const result: Contender[] = [];
  for (const mode of ['prepared', 'text'] as const) {
    for (const build of builds) {
      result.push({
        name: `${build.label} (${mode})`,
        prepare: async (worker) => {
          const { leases } = worker.leasefence(build, mode);
          const key = `cycle:${build.label}:${mode}:${worker.index}`;
          return async () => {
            const claimed = await leases.claim(key);
            if (!claimed.ok) throw new Error('leasefence: not granted');
            await leases.release(claimed.lease);
          };
        },
      });
    }
    result.push({
      name: `raw SQL (${mode})`,
      prepare: async ({ index, client }) => {
        const name = `raw:${mode}:${index}`;
        return async () => {
          const { rows } = await send(client, mode, 'raw-claim', RAW_CLAIM, [name, 'bench', TTL_MS]);
          if (rows[0] === undefined) throw new Error('raw: not granted');
          await send(client, mode, 'raw-release', RAW_RELEASE, [name, 'bench', rows[0]['token']]);
        };
      },
    });
    result.push({
      name: `advisory lock (${mode})`,
      prepare:
        async ({ index, client }) =>
        async () => {
          const { rows } = await send(client, mode, 'adv-lock', 'SELECT pg_try_advisory_lock(42, $1) AS locked', [index]);
          if (rows[0]?.['locked'] !== (true as unknown)) throw new Error('advisory: not locked');
          await send(client, mode, 'adv-unlock', 'SELECT pg_advisory_unlock(42, $1)', [index]);
        },
    });
  }
  return result;
}

const holding = async (leases: Leases, key: string): Promise<Lease> => {
  const claimed = await leases.claim(key);
  if (!claimed.ok) throw new Error(`${key}: not granted`);
  return claimed.lease;
};

function writeContenders(builds: readonly Build[]): Contender[] {
  const insert = `INSERT INTO ledger (key, token, entry) SELECT fence.key, fence.token, $1 FROM fence RETURNING id`;
  const result: Contender[] = [];
  for (const mode of ['prepared', 'text'] as const) {
    for (const build of builds) {
      result.push({
        name: `${build.label} fencedStatement (${mode})`,
        prepare: async (worker) => {
          const { store, leases } = worker.leasefence(build, mode);
          const lease = await holding(leases, `write:${build.label}:${mode}:${worker.index}:${++preparation}`);
          return async () => {
            const outcome = await store.fencedStatement(lease, insert, ['x']);
            if (!outcome.ok) throw new Error('leasefence: fenced');
          };
        },
      });
    }
    result.push({
      name: `raw SQL fenced INSERT (${mode})`,
      prepare: async ({ index, client }) => {
        const name = `raw-write:${mode}:${index}:${++preparation}`;
        const token = (await client.query<{ token: string }>(RAW_CLAIM, [name, 'bench', TTL_MS])).rows[0]!.token;
        return async () => {
          const inserted = await send(client, mode, 'raw-fenced-insert', RAW_FENCED_INSERT, [name, 'bench', token, 'x']);
          if (inserted.rowCount !== 1) throw new Error('raw: fenced');
        };
      },
    });
  }
  result.push({
    name: `${builds[0]!.label} fencedWrite, transaction (prepared)`,
    prepare: async (worker) => {
      const { leases } = worker.leasefence(builds[0]!, 'prepared');
      const lease = await holding(leases, `write-tx:${worker.index}:${++preparation}`);
      return async () => {
        const outcome = await leases.fencedWrite(lease, (tx) =>
          tx.query(`INSERT INTO ledger (key, token, entry) VALUES ($1, $2, 'x')`, [tx.key, tx.token.toString()]),
        );
        if (!outcome.ok) throw new Error('leasefence: fenced');
      };
    },
  });
  result.push({
    name: 'INSERT under advisory lock, unfenced (prepared)',
    prepare: async ({ index, client }) => {
      await client.query('SELECT pg_advisory_lock(43, $1)', [index]);
      return async () =>
        void (await send(client, 'prepared', 'adv-insert', `INSERT INTO ledger (key, token, entry) VALUES ($1, 0, 'x')`, [`adv:${index}`]));
    },
  });
  return result;
}

/** Throughput and cost of `workers` concurrent loops of `contender` for `MEASURE_MS`. */
async function measure(admin: pg.Client, contender: Contender, workers: readonly Worker[]): Promise<{ rate: number; cost: Cost }> {
  const operations = await Promise.all(workers.map((worker) => contender.prepare(worker)));
  for (const operation of operations) await operation(); // warm up (statement and plan caches)
  const probe = await startProbe(
    admin,
    workers.map((worker) => worker.backendPid),
  );
  let done = 0;
  const start = performance.now();
  const deadline = start + MEASURE_MS;
  await Promise.all(
    operations.map(async (operation) => {
      while (performance.now() < deadline) {
        await operation();
        done += 1;
      }
    }),
  );
  const rate = done / ((performance.now() - start) / 1000);
  return { rate, cost: await probe.finish(done) };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fmt = (value: number, digits = 0): string =>
  Number.isNaN(value) ? 'n/a' : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}x`;

/** The raw baseline a contender is compared with: the raw statement(s) of the same section, in the same mode. */
function baselineOf(names: readonly string[], name: string): number {
  const mode = name.endsWith('(text)') ? '(text)' : '(prepared)';
  return names.findIndex((other) => other.startsWith('raw SQL') && other.endsWith(mode));
}

/** Runs one section (cycles or writes) at every client count and returns its markdown tables. */
async function section(admin: pg.Client, title: string, contenders: readonly Contender[], workers: readonly Worker[]): Promise<string[]> {
  const names = contenders.map((c) => c.name);
  const measured: Array<Array<Array<{ rate: number; cost: Cost }>>> = [];
  for (const clients of CLIENTS) {
    const samples = contenders.map((): Array<{ rate: number; cost: Cost }> => []);
    for (let round = 0; round < ROUNDS; round += 1) {
      // NOTE: contenders alternate within each round, so a drift of the machine hits all of them alike.
      for (const [i, contender] of contenders.entries()) samples[i]!.push(await measure(admin, contender, workers.slice(0, clients)));
    }
    measured.push(samples);
    console.error(`done: ${title} at ${clients} clients`);
  }
  const rate = (c: number, i: number): number => median(measured[c]![i]!.map((x) => x.rate));
  // NOTE: ratios are a contender's throughput over the raw baseline's in the same mode (1.00x: as fast).
  const throughput = [
    `| ${title}/s | ${CLIENTS.map((n) => `${n} client${n === 1 ? '' : 's'}`).join(' | ')} | ${CLIENTS.map((n) => `÷ raw, ${n}`).join(' | ')} |`,
    `|---|${CLIENTS.map(() => '---:').join('|')}|${CLIENTS.map(() => '---:').join('|')}|`,
    ...names.map((name, i) => {
      const baseline = baselineOf(names, name);
      return `| ${name} | ${CLIENTS.map((_, c) => fmt(rate(c, i))).join(' | ')} | ${CLIENTS.map((_, c) => ratio(rate(c, i), rate(c, baseline))).join(' | ')} |`;
    }),
  ];
  const costs = [
    `| ${title}: cost per operation | clients | statements | server exec µs/stmt | plan µs/stmt | server µs/op | backend CPU µs/op | client CPU µs/op | WAL B/op | buffers hit/op |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [c, clients] of CLIENTS.entries()) {
    for (const [i, name] of names.entries()) {
      const m = (pick: (cost: Cost) => number): number => median(measured[c]![i]!.map((x) => pick(x.cost)));
      costs.push(
        `| ${name} | ${clients} | ${fmt(
          m((x) => x.statements),
          2,
        )} | ${fmt(
          m((x) => x.execUsPerStatement),
          1,
        )} | ${fmt(
          m((x) => x.planUsPerStatement),
          1,
        )} | ${fmt(
          m((x) => x.serverUs),
          1,
        )} | ${fmt(
          m((x) => x.backendCpuUs),
          1,
        )} | ${fmt(
          m((x) => x.clientCpuUs),
          1,
        )} | ${fmt(m((x) => x.walBytes))} | ${fmt(
          m((x) => x.sharedHit),
          1,
        )} |`,
      );
    }
  }
  const breakdown: string[] = [];
  for (const [i, name] of names.entries()) {
    breakdown.push(`${name}:`);
    for (const s of measured[0]![i]!.at(-1)!.cost.perStatement.slice(0, 8)) {
      const indent = s.toplevel ? '  ' : '      (nested) ';
      breakdown.push(
        `${indent}${fmt(s.execUs, 1)} µs exec + ${fmt(s.planUs, 1)} µs plan, ${fmt(s.sharedHit, 1)} hit, ${fmt(s.walBytes)} WAL B, x${fmt(s.calls)}: ${s.query.slice(0, 110)}`,
      );
    }
  }
  return [...throughput, '', ...costs, '', `Server time per statement at ${CLIENTS[0]} client(s), last round:`, ...breakdown, ''];
}

/** This tree, plus BENCH_COMPARE's `src/` when given. */
async function builds(): Promise<Build[]> {
  const current: Build = { label: 'leasefence', table: 'leasefence_leases', adapter, createLeases: leasesModule.createLeases };
  if (COMPARE === undefined || COMPARE === '') return [current];
  const root = resolve(COMPARE);
  const other = (await import(pathToFileURL(`${root}/adapters/postgres/index.ts`).href)) as Adapter;
  const otherLeases = (await import(pathToFileURL(`${root}/leases.ts`).href)) as { createLeases: LeasesFactory };
  return [current, { label: 'leasefence before', table: 'leasefence_before', adapter: other, createLeases: otherLeases.createLeases }];
}

async function main(): Promise<void> {
  const server = await startPostgres({ settings: PROBE_SETTINGS });
  const all = await builds();
  const workers: Worker[] = [];
  const admin = new pg.Client({ connectionString: server.url });
  try {
    await admin.connect();
    await admin.query('CREATE EXTENSION pg_stat_statements');
    for (let index = 0; index < Math.max(...CLIENTS); index += 1) {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      const backendPid = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
      const stores = new Map<string, { store: Store; leases: Leases }>();
      workers.push({
        index,
        client,
        backendPid,
        leasefence(build, mode) {
          const id = `${build.label}:${mode}`;
          let entry = stores.get(id);
          if (entry === undefined) {
            const store = build.adapter.createPostgresStore({
              client: build.adapter.fromPgClient(client),
              table: build.table,
              prepare: mode === 'prepared',
            });
            entry = { store, leases: build.createLeases(store, { holder: `bench-${index}`, ttlMs: TTL_MS }) };
            stores.set(id, entry);
          }
          return entry;
        },
      });
    }
    for (const build of all) await workers[0]!.leasefence(build, 'prepared').store.migrate();
    for (const statement of RAW_SCHEMA) await admin.query(statement);
    // NOTE: every lease table holds the same SEED_KEYS idle keys, so that lookups cost what they cost in a
    // table in use (an index scan, not a scan of a page or two) and the tables are alike.
    for (const table of all.map((build) => build.table)) {
      await admin.query(`INSERT INTO ${table} (key, token) SELECT 'idle:' || g, 1 FROM generate_series(1, $1::int) AS g`, [SEED_KEYS]);
    }
    await admin.query(
      `INSERT INTO raw_leases (name, token, expires_at) SELECT 'idle:' || g, 1, now() FROM generate_series(1, $1::int) AS g`,
      [SEED_KEYS],
    );
    await admin.query('VACUUM ANALYZE');
    const version = (await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v;
    console.log(
      `PostgreSQL ${version}, node ${process.version}, pg 8, ${MEASURE_MS} ms x ${ROUNDS} rounds (median), one connection per client\n`,
    );
    const output = [
      ...(await section(admin, 'claim + release cycles', cycleContenders(all), workers)),
      ...(await section(admin, 'fenced writes', writeContenders(all), workers)),
    ];
    const hot: Array<{ table: string; updates: number; hot: number }> = [];
    for (const table of ['raw_leases', ...all.map((b) => b.table)]) hot.push({ table, ...(await hotUpdates(admin, table)) });
    output.push(
      `HOT updates: ${hot.map((h) => `${h.table} ${fmt(h.hot)}/${fmt(h.updates)} (${fmt((100 * h.hot) / Math.max(1, h.updates))}%)`).join(', ')}`,
    );
    console.log(output.join('\n'));
  } finally {
    await Promise.all(workers.map((worker) => worker.client.end()));
    await admin.end();
    await server.stop();
  }
}

await main();
