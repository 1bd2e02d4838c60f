/**
 * `npm run bench:scale`: cost as the work grows (issue 27). Per store, the store is filled to 1k, 10k, 100k and
 * 1M keys (a third released, a third live, a third released with a 1 KiB checkpoint: scale-fill.ts, which
 * says how each store is filled and what the fill depends on), and at each size it measures, one operation
 * at a time on keys picked at random among the filled released ones:
 * claim + release and a fenced write (p50 / p99 latency), one `list` page of 100 (p50 / p99 over 20 pages in
 * order), and the bytes a lease takes in the store. Once per store, a key's bytes after 1, 9, 33 and 201
 * cycles of claim + fenced write with a new checkpoint + release: whether a record grows with its history.
 *
 *   npm run bench:scale                              (every store, 1k to 1M keys: 3.5 min on 2 cores at load 14)
 *   npm run bench:scale -- --quick                   (1k and 10k keys, fewer samples)
 *   BENCH_SCALE_STORES=memory,sqlite,redis,postgres  stores to run
 *   BENCH_SCALE_KEYS=1000,10000,100000,1000000       sizes, ascending (each fill adds to the previous one)
 *   BENCH_SCALE_SAMPLES=1000                         timed cycles per size (after 100 unrecorded)
 *   BENCH_SCALE_FSYNC=off                            PostgreSQL's fsync (off: the disk's constant cost per
 *                                                    commit is left out; it does not depend on the key count)
 *   BENCH_SCALE_SVG=bench/scale.svg                  where the chart is written ('' for none)
 *   BENCH_SCALE_SQLITE_CACHE_KIB=262144              SQLite's page cache (PRAGMA cache_size; default: the driver's, 2 MiB)
 *
 * PostgreSQL and Redis are throwaway servers on loopback (test/support, as `npm run bench`), SQLite a file in
 * a temp dir (better-sqlite3, WAL, synchronous NORMAL), memory this process. The stores are the public ones
 * (`createXStore`, `createLeases`, `createOperator`) from this checkout's src/, run through tsx.
 */
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pg from 'pg';
import { createMemoryStore } from '../src/adapters/memory/index.js';
import { createPostgresStore } from '../src/adapters/postgres/index.js';
import { createRedisStore, hashTagOf } from '../src/adapters/redis/index.js';
import { createSqliteStore } from '../src/adapters/sqlite/index.js';
import { createLeases } from '../src/leases.js';
import type { Leases } from '../src/leases-types.js';
import { createOperator, type Operator } from '../src/operator.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { startRedis } from '../test/support/redis-server.js';
import { scaleChart, type ChartPanel } from './scale-chart.js';
import {
  KINDS,
  keyOf,
  checkFill,
  fillMemory,
  fillPostgres,
  fillRedis,
  fillSqlite,
  makeTemplates,
  postgresKeyedTables,
  sqliteKeyedTables,
} from './scale-fill.js';
import { historyGrowth, timeList, timeOperations, type OperationTimes, type Percentiles, type ScaleWrite } from './scale-measure.js';

const QUICK = process.argv.includes('--quick');
const env = (name: string, fallback: string): string => process.env[name] ?? fallback;
const STORES = env('BENCH_SCALE_STORES', 'memory,sqlite,redis,postgres').split(',');
const SIZES = env('BENCH_SCALE_KEYS', QUICK ? '1000,10000' : '1000,10000,100000,1000000')
  .split(',')
  .map(Number);
const SAMPLES = Number(env('BENCH_SCALE_SAMPLES', QUICK ? '200' : '1000'));
const WARMUP = QUICK ? 20 : 100;
const LIST_PAGES = 20;
const LIST_LIMIT = 100;
const HISTORY_MARKS = QUICK ? [8, 50] : [8, 32, 200];
const FSYNC = env('BENCH_SCALE_FSYNC', 'off');
const SVG = env('BENCH_SCALE_SVG', 'bench/scale.svg');
const SQLITE_CACHE_KIB = env('BENCH_SCALE_SQLITE_CACHE_KIB', '');
const TTL_MS = 3_600_000;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** One store under test. */
interface ScaleTarget {
  readonly name: string;
  readonly fillHow: string;
  readonly leases: Leases;
  readonly operator: Operator;
  readonly write: ScaleWrite;
  /** Adds keys [from, to) (scale-fill.ts). */
  fill(from: number, to: number): Promise<void>;
  /** How bytes per lease are counted, for the report. */
  readonly bytesHow: string;
  /**
   * The store's bytes now: `delta` ones (memory heap, Redis used_memory) are read around each fill and the
   * growth summed; `total` ones (table + index, database pages) are divided by the keys as they stand.
   */
  readonly bytesKind: 'delta' | 'total';
  bytes(): Promise<number>;
  /** The bytes of one key's record (for the history check), or null where the store cannot tell. */
  keyBytes(key: string): Promise<number | null>;
  /**
   * The server's own time for the timed operations (reset before them, read after), or null: what the
   * store spent, apart from round trips and this process.
   */
  readonly server: { reset(): Promise<void>; read(): Promise<string> } | null;
  /** Where the bytes are, in a sentence, after the fill of keys [0, `keys`). */
  breakdown(keys: number): Promise<string>;
  close(): Promise<void>;
}

interface SizeResult {
  readonly keys: number;
  readonly fillSeconds: number;
  readonly times: OperationTimes;
  readonly list: { readonly first: number; readonly pages: Percentiles };
  readonly bytesPerLease: number;
  /** The server's time for the timed operations (`ScaleTarget.server`), or ''. */
  readonly server: string;
  /** The same for the list pages. */
  readonly listServer: string;
}

/** Garbage collection in this process while the timed cycles run (PerformanceObserver 'gc' entries). */
function gcTime(): NonNullable<ScaleTarget['server']> {
  let pauses: number[] = [];
  const observer = new PerformanceObserver((list) => pauses.push(...list.getEntries().map((entry) => entry.duration)));
  return {
    reset: async () => {
      pauses = [];
      observer.observe({ entryTypes: ['gc'] });
    },
    read: async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      observer.disconnect();
      const total = pauses.reduce((sum, ms) => sum + ms, 0);
      return `GC ${total.toFixed(0)} ms in ${pauses.length} pauses (longest ${Math.max(0, ...pauses).toFixed(1)} ms), ${((total * 1000) / (SAMPLES + WARMUP)).toFixed(1)} µs per cycle`;
    },
  };
}

async function memoryTarget(): Promise<ScaleTarget> {
  const leases = createLeases(createMemoryStore(), { holder: 'scale', ttlMs: TTL_MS });
  return {
    name: 'memory',
    fillHow: 'public API, one key after another (claim, checkpoint, release)',
    leases,
    operator: createOperator(leases.store),
    write: async (lease, options) => {
      const outcome = await leases.fencedWrite(lease, (tx) => tx.token, options);
      if (!outcome.ok) throw new Error('memory: fenced write refused');
    },
    fill: (from, to) => fillMemory(leases, from, to),
    bytesHow: 'heap used after a full GC, growth over the fills ÷ keys',
    bytesKind: 'delta',
    bytes: async () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    },
    keyBytes: async () => null,
    server: gcTime(),
    breakdown: async () => '',
    close: async () => undefined,
  };
}

async function sqliteTarget(): Promise<ScaleTarget> {
  const directory = mkdtempSync(join(tmpdir(), 'leasefence-bench-scale-'));
  const database = new Database(join(directory, 'scale.db'));
  const store = createSqliteStore({ client: database });
  await store.migrate();
  database.pragma('synchronous = NORMAL');
  if (SQLITE_CACHE_KIB !== '') database.pragma(`cache_size = -${Number(SQLITE_CACHE_KIB)}`);
  database.exec('CREATE TABLE scale_ledger (id INTEGER PRIMARY KEY, key TEXT NOT NULL, token INTEGER NOT NULL) STRICT');
  const leases = createLeases(store, { holder: 'scale', ttlMs: TTL_MS });
  await makeTemplates(leases);
  const tables = sqliteKeyedTables(database, ['scale_ledger']);
  const pages = database.prepare(
    'SELECT coalesce(sum(pgsize), 0) AS bytes FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = ?)',
  );
  return {
    name: 'sqlite',
    fillHow: `template rows copied by INSERT ... SELECT over a recursive CTE (${tables.map((t) => t.table).join(', ')})`,
    leases,
    operator: createOperator(store),
    write: async (lease, options) => {
      const outcome = await leases.fencedWrite(
        lease,
        (tx) => tx.run('INSERT INTO scale_ledger (key, token) VALUES (?, ?)', tx.key, tx.token),
        options,
      );
      if (!outcome.ok) throw new Error('sqlite: fenced write refused');
    },
    fill: async (from, to) => fillSqlite(database, tables, from, to),
    bytesHow: 'pages of the lease table and its indexes (dbstat) ÷ rows',
    bytesKind: 'total',
    bytes: async () => tables.reduce((sum, { table }) => sum + Number((pages.get(table) as { bytes: number }).bytes), 0),
    keyBytes: async (key) => {
      let sum = 0;
      for (const { table, keyColumn, columns } of tables) {
        const lengths = columns.map((column) => `coalesce(length(CAST("${column}" AS BLOB)), 0)`).join(' + ');
        sum += Number(
          (database.prepare(`SELECT ${lengths} AS n FROM "${table}" WHERE "${keyColumn}" = ?`).get(key) as { n: number } | undefined)?.n ??
            0,
        );
      }
      return sum;
    },
    server: null,
    breakdown: async () => {
      const kinds = database
        .prepare(
          `SELECT name, pagetype, count(*) AS pages, sum(pgsize) AS bytes, sum(unused) AS unused FROM dbstat
           WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name IN (${tables.map(() => '?').join(', ')})) GROUP BY name, pagetype`,
        )
        .all(...tables.map((t) => t.table)) as { name: string; pagetype: string; pages: number; bytes: number; unused: number }[];
      const size = (database.pragma('page_size', { simple: true }) as number) ?? 0;
      return `pages of ${size} bytes: ${kinds
        .map(
          (k) =>
            `${k.name} ${k.pagetype} ${thousands(k.pages)} pages (${thousands(k.bytes / 1e6)} MB, ${((100 * k.unused) / k.bytes).toFixed(0)}% unused)`,
        )
        .join('; ')}`;
    },
    close: async () => {
      database.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

async function redisTarget(): Promise<ScaleTarget> {
  const server = await startRedis({ persistence: 'none' });
  const client = new Redis(server.url);
  const admin = new Redis(server.url);
  const leases = createLeases(createRedisStore({ client }), { holder: 'scale', ttlMs: TTL_MS });
  await makeTemplates(leases);
  const usedMemory = async (): Promise<number> => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
  const templateNames = await admin.keys('*tpl-released*');
  return {
    name: 'redis',
    fillHow: 'DUMP of the template keys, RESTORE under each new name, pipelined 1,000 per round trip',
    leases,
    operator: createOperator(leases.store),
    write: async (lease, options) => {
      const outcome = await leases.fencedWrite(lease, (tx) => tx.call('SET', `${hashTagOf(lease.key)}:data`, 'x'), options);
      if (!outcome.ok) throw new Error('redis: fenced write refused');
    },
    fill: (from, to) => fillRedis(admin, from, to),
    bytesHow: 'INFO used_memory, growth over the fills ÷ keys (MEMORY USAGE of each kind below)',
    bytesKind: 'delta',
    bytes: usedMemory,
    keyBytes: async (key) => {
      let sum = 0;
      for (const name of templateNames)
        sum += Number((await admin.memory('USAGE', name.replaceAll('tpl-released', key), 'SAMPLES', 0)) ?? 0);
      return sum;
    },
    server: {
      reset: async () => void (await admin.config('RESETSTAT')),
      read: async () => {
        const stats = await admin.info('commandstats');
        return [...stats.matchAll(/cmdstat_(evalsha|eval|scan):calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/g)]
          .map(([, command, calls, perCall]) => `${command} ${Number(perCall).toFixed(1)} µs × ${calls}`)
          .join(', ');
      },
    },
    breakdown: async (keys) => {
      const parts: string[] = [];
      for (const kind of KINDS) {
        // NOTE: the last keys filled, which no timed cycle has touched (a used key also holds its memos).
        const key = keyOf(keys - 3 + ((KINDS.indexOf(kind) - ((keys - 3) % 3) + 3) % 3));
        for (const name of templateNames) {
          const copy = name.replaceAll('tpl-released', key);
          const usage = Number(await admin.memory('USAGE', copy, 'SAMPLES', 0));
          const encoding = await admin.object('ENCODING', copy);
          const fields = await admin.hstrlen(copy, 'checkpoint');
          parts.push(`${kind} ${thousands(usage)} bytes (${String(encoding)}, checkpoint field ${thousands(fields)} bytes)`);
        }
      }
      const info = await admin.info('memory');
      const field = (name: string): string => new RegExp(`${name}:(\\S+)`).exec(info)?.[1] ?? '?';
      return `MEMORY USAGE of an untouched copy of each kind: ${parts.join(', ')}; used_memory ${field('used_memory_human')}, dataset ${field('used_memory_dataset')} bytes, allocator fragmentation ${field('allocator_frag_ratio')}`;
    },
    close: async () => {
      client.disconnect();
      admin.disconnect();
      await server.stop();
    },
  };
}

async function postgresTarget(): Promise<ScaleTarget> {
  const server = await startPostgres({ settings: { fsync: FSYNC, shared_preload_libraries: 'pg_stat_statements' } });
  const pool = new pg.Pool({ connectionString: server.url, max: 2 });
  pool.on('error', () => undefined);
  const store = createPostgresStore({ client: pool });
  await store.migrate();
  await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await pool.query('CREATE TABLE scale_ledger (id bigserial PRIMARY KEY, key text NOT NULL, token bigint NOT NULL)');
  const leases = createLeases(store, { holder: 'scale', ttlMs: TTL_MS });
  await makeTemplates(leases);
  const tables = await postgresKeyedTables(pool, ['scale_ledger']);
  return {
    name: 'postgres',
    fillHow: `template rows copied by INSERT ... SELECT over generate_series (${tables.map((t) => t.table).join(', ')}), then VACUUM ANALYZE`,
    leases,
    operator: createOperator(store),
    write: async (lease, options) => {
      const outcome = await leases.fencedWrite(
        lease,
        (tx) => tx.query('INSERT INTO scale_ledger (key, token) VALUES ($1, $2)', [tx.key, tx.token.toString()]),
        options,
      );
      if (!outcome.ok) throw new Error('postgres: fenced write refused');
    },
    fill: async (from, to) => {
      await fillPostgres(pool, tables, from, to);
      await pool.query('VACUUM ANALYZE');
    },
    bytesHow: 'pg_total_relation_size (heap, TOAST, indexes) of the lease table ÷ rows',
    bytesKind: 'total',
    bytes: async () => {
      let sum = 0;
      for (const { table } of tables)
        sum += Number(
          (await pool.query<{ n: string }>('SELECT pg_total_relation_size($1::regclass)::text AS n', [`"${table}"`])).rows[0]?.n,
        );
      return sum;
    },
    keyBytes: async (key) => {
      let sum = 0;
      for (const { table, keyColumn } of tables)
        sum += Number(
          (
            await pool.query<{ n: string }>(
              `SELECT coalesce(sum(pg_column_size(t.*)), 0)::text AS n FROM "${table}" t WHERE "${keyColumn}" = $1`,
              [key],
            )
          ).rows[0]?.n,
        );
      return sum;
    },
    server: {
      reset: async () => void (await pool.query('SELECT pg_stat_statements_reset()')),
      read: async () => {
        // NOTE: the lease statements (not the ledger INSERT, not this bench's own queries); blocks read are
        // pages that were not in shared_buffers (from the OS page cache or the disk).
        const { rows } = await pool.query<{ calls: string; ms: string; hit: string; read: string }>(
          `SELECT sum(calls)::text AS calls, (sum(total_exec_time) / sum(calls))::text AS ms,
             (sum(shared_blks_hit)::float8 / sum(calls))::text AS hit, (sum(shared_blks_read)::float8 / sum(calls))::text AS read
           FROM pg_stat_statements WHERE query ILIKE '%leasefence_leases%' AND query NOT ILIKE '%pg_stat%'`,
        );
        const row = rows[0];
        if (row === undefined || row.calls === null) return '';
        return `${(Number(row.ms) * 1000).toFixed(0)} µs per statement (${row.calls}), blocks ${Number(row.hit).toFixed(1)} hit / ${Number(row.read).toFixed(2)} read`;
      },
    },
    breakdown: async () => {
      const parts: string[] = [];
      for (const { table } of tables) {
        const row = (
          await pool.query<{ heap: string; toast: string; indexes: string; rows: string }>(
            `SELECT pg_relation_size(c.oid)::text AS heap,
               coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::text AS toast,
               pg_indexes_size(c.oid)::text AS indexes, c.reltuples::bigint::text AS rows
             FROM pg_class c WHERE c.oid = $1::regclass`,
            [`"${table}"`],
          )
        ).rows[0];
        if (row === undefined) continue;
        const per = (text: string): string => thousands(Number(text) / Math.max(1, Number(row.rows)));
        parts.push(`${table}: heap ${per(row.heap)}, TOAST ${per(row.toast)}, indexes ${per(row.indexes)} bytes per row`);
      }
      return parts.join('; ');
    },
    close: async () => {
      await pool.end();
      await server.stop();
    },
  };
}

const TARGETS: Record<string, () => Promise<ScaleTarget>> = {
  memory: memoryTarget,
  sqlite: sqliteTarget,
  redis: redisTarget,
  postgres: postgresTarget,
};

const load = (): string =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const us = (value: number): string => (value >= 10_000 ? `${(value / 1000).toFixed(1)} ms` : `${value.toFixed(0)} µs`);
const pair = (p: Percentiles): string => `${us(p.p50)} / ${us(p.p99)}`;
const thousands = (value: number): string => Math.round(value).toLocaleString('en-US');

async function runStore(target: ScaleTarget): Promise<SizeResult[]> {
  const results: SizeResult[] = [];
  let filled = 0;
  let grown = 0;
  const history = await historyGrowth(
    target.leases,
    target.write,
    'history:0',
    HISTORY_MARKS,
    async (key) => (await target.keyBytes(key)) ?? 0,
  );
  for (const size of SIZES) {
    const before = await target.bytes();
    const started = performance.now();
    await target.fill(filled, size);
    const fillSeconds = (performance.now() - started) / 1000;
    await checkFill(target.leases, target.operator, filled, size);
    const after = await target.bytes();
    grown += after - before;
    filled = size;
    const bytesPerLease = target.bytesKind === 'delta' ? grown / size : after / (size + 4);
    await target.server?.reset();
    const times = await timeOperations(target.leases, target.write, size, SAMPLES, WARMUP);
    const server = (await target.server?.read()) ?? '';
    await target.server?.reset();
    const list = await timeList(target.operator, LIST_PAGES, LIST_LIMIT);
    const listServer = (await target.server?.read()) ?? '';
    results.push({ keys: size, fillSeconds, times, list, bytesPerLease, server, listServer });
    console.error(`${target.name} ${size}: fill ${fillSeconds.toFixed(1)} s, claim+release ${pair(times.claimRelease)}, load ${load()}`);
  }
  console.log(`### ${target.name}\n\nFill: ${target.fillHow}. Bytes per lease: ${target.bytesHow}.\n`);
  console.log(
    '| keys | fill | claim + release p50 / p99 | fenced write p50 / p99 | list page of 100 p50 / p99 (first page after the fill) | bytes per lease |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const r of results)
    console.log(
      `| ${thousands(r.keys)} | ${r.fillSeconds.toFixed(1)} s | ${pair(r.times.claimRelease)} | ${pair(r.times.fencedWrite)} | ${pair(r.list.pages)} (${us(r.list.first)}) | ${thousands(r.bytesPerLease)} |`,
    );
  const breakdown = await target.breakdown(filled);
  if (breakdown !== '') console.log(`\nWhere the bytes are at ${thousands(filled)} keys: ${breakdown}.`);
  if (target.server !== null)
    console.log(
      `\nDuring the timed cycles (claim, fenced write, release; warm-up included), on the store's side:\n${results.map((r) => `- ${thousands(r.keys)} keys: ${r.server}; the list pages: ${r.listServer}`).join('\n')}`,
    );
  const first = results[0];
  const last = results.at(-1);
  if (first !== undefined && last !== undefined && results.length > 1)
    console.log(
      `\n${thousands(first.keys)} → ${thousands(last.keys)} keys, p50 ratios: claim + release ${(last.times.claimRelease.p50 / first.times.claimRelease.p50).toFixed(2)}×, ` +
        `fenced write ${(last.times.fencedWrite.p50 / first.times.fencedWrite.p50).toFixed(2)}×, list ${(last.list.pages.p50 / first.list.pages.p50).toFixed(2)}×, ` +
        `bytes per lease ${(last.bytesPerLease / first.bytesPerLease).toFixed(2)}×.`,
    );
  console.log(
    target.name === 'memory'
      ? '\nHistory: not measured per key on memory (a record is one object, its submissions capped).\n'
      : `\nHistory: one key's record, in bytes, after a claim + fenced write with a new 1 KiB checkpoint + release: ${history
          .map(({ cycles, bytes }) => `${thousands(bytes)}${cycles === 0 ? '' : ` after ${cycles} more`}`)
          .join(', ')}.\n`,
  );
  return results;
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(`## Cost as the work grows (npm run bench:scale${QUICK ? ' -- --quick' : ''})\n`);
  console.log(
    `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average at start ${load()}; ` +
      `${SAMPLES} timed cycles per size (after ${WARMUP}) on random released keys, one operation at a time; list: ${LIST_PAGES} pages of ${LIST_LIMIT} in order; ` +
      `PostgreSQL fsync ${FSYNC}, Redis without persistence, SQLite WAL + synchronous NORMAL${SQLITE_CACHE_KIB === '' ? '' : ` + cache_size ${SQLITE_CACHE_KIB} KiB`}.\n`,
  );
  const all = new Map<string, SizeResult[]>();
  for (const name of STORES) {
    const make = TARGETS[name];
    if (make === undefined) throw new Error(`unknown store ${name} (one of ${Object.keys(TARGETS).join(', ')})`);
    const target = await make();
    try {
      all.set(name, await runStore(target));
    } finally {
      await target.close();
    }
  }
  if (SVG !== '') {
    const series = (pick: (r: SizeResult) => number) =>
      [...all].map(([store, results]) => ({ store, points: results.map((r) => ({ keys: r.keys, value: pick(r) })) }));
    const panels: ChartPanel[] = [
      { title: 'claim + release, p50', unit: 'µs', series: series((r) => r.times.claimRelease.p50) },
      { title: 'fenced write, p50', unit: 'µs', series: series((r) => r.times.fencedWrite.p50) },
      { title: 'bytes per lease', unit: 'bytes', series: series((r) => r.bytesPerLease) },
    ];
    writeFileSync(
      SVG,
      scaleChart(
        'leasefence: cost as the work grows',
        `npm run bench:scale, ${new Date().toISOString().slice(0, 10)} (load average ${load().split(' ')[0]}): a third of the keys live, a third released, a third released with a 1 KiB checkpoint`,
        panels,
      ),
    );
    console.log(`Chart: ${SVG}.`);
  }
  console.log(`Total ${((performance.now() - started) / 1000).toFixed(0)} s, load average at the end ${load()}.`);
}

await main();
