/**
 * `npm run bench`: one command, one markdown report of leasefence against raw baselines and its peers on
 * memory, Redis, PostgreSQL and etcd, each on a throwaway server of its own (test/support), measured in
 * interleaved short slices (see slices.ts). About 5 minutes on 2 cores with the defaults.
 *
 *   npm run bench                              (everything, defaults below)
 *   npm run bench -- --quick                   (a smoke run: every contender once, a few ms each)
 *   BENCH_STORES=memory,redis npm run bench    (a subset: memory, sqlite, redis, postgres, etcd)
 *   BENCH_ROUNDS=9 BENCH_PASSES=10             rounds (ratios are medians over them), slices per round
 *   BENCH_SLICE_MS=20                          slice length for memory and Redis (Postgres: twice that)
 *   BENCH_WORKERS=32 BENCH_PG_CLIENTS=1,8,32   concurrency of the many-worker groups
 *   BENCH_ETCD_WORKERS=1,16                    concurrency of the etcd groups (bench/etcd.ts)
 *   BENCH_FSYNC_OFF=0                          skip the fsync-off Postgres groups (fsync on is always run)
 *   BENCH_QUEUE=0 | only                       skip issue 24's claim-next and submission groups (queue-groups.ts), or
 *                                              run only those (memory, Redis, PostgreSQL; SQLite's: bench/sqlite.ts)
 *   BENCH_SEMAPHORE=0 | only                   skip issue 25's semaphore groups (semaphore-groups.ts: memory, SQLite,
 *                                              Redis, PostgreSQL), or run only those; BENCH_SEMAPHORE_WORKERS=8
 *                                              the concurrency of their many-worker groups
 *   BENCH_COMPARE=/tmp/before/src              adds that tree's rows ("before: ...") to the memory group, the
 *                                              Redis, Postgres and SQLite claim + release groups, the Redis and
 *                                              SQLite fenced writes
 *                                              (`git archive main src | tar -x -C /tmp/before`)
 *
 * What runs is the library as users run it: this checkout's `src/` and BENCH_COMPARE's are each bundled
 * the way `dist/` is (library.ts: esbuild, ESM, node20, one bundle per public entry point) and imported,
 * the same way for both, so a "before" row differs from "after" only by its code. The memory group's
 * self-check row, a second bundle of this tree, shows that (~1.00; BENCH_COMPARE at a copy of this very
 * tree measured 0.95, control 0.94, at load 3.3).
 *
 * Read the ratios (same run, same slices) before the absolute rates: a loaded machine moves rates a lot
 * and ratios little, and each group's "(control)" row shows how far noise alone moves a ratio.
 */
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { Redis } from 'ioredis';
import { startPostgres } from '../test/support/postgres-server.js';
import { startRedis } from '../test/support/redis-server.js';
import { memoryGroups } from './memory-groups.js';
import { postgresCycleGroup, postgresWriteGroup, preparePostgres, type PostgresTarget } from './postgres-groups.js';
import { postgresPeersGroup } from './postgres-peers.js';
import { redisGroups } from './redis-groups.js';
import { Etcd3 } from 'etcd3';
import { startEtcd } from '../test/support/etcd-server.js';
import { etcdGroups } from './etcd.js';
import { memoryQueueGroups, postgresQueueGroups, preparePostgresQueue, redisQueueGroups } from './queue-groups.js';
import {
  memorySemaphoreGroups,
  postgresSemaphoreGroups,
  preparePostgresSemaphore,
  redisSemaphoreGroups,
  sqliteSemaphoreGroups,
} from './semaphore-groups.js';
import { markdownTable, runGroup, type Group, type SliceSettings } from './slices.js';
import { sqliteGroups } from './sqlite-groups.js';

const QUICK = process.argv.includes('--quick');
const env = (name: string, fallback: string): string => process.env[name] ?? fallback;
const STORES = env('BENCH_STORES', 'memory,sqlite,redis,postgres,etcd').split(',');
const SLICE_MS = Number(env('BENCH_SLICE_MS', QUICK ? '5' : '20'));
const SETTINGS: SliceSettings = {
  rounds: Number(env('BENCH_ROUNDS', QUICK ? '1' : '9')),
  passes: Number(env('BENCH_PASSES', QUICK ? '1' : '10')),
  sliceMs: SLICE_MS,
};
const PG_SETTINGS: SliceSettings = { ...SETTINGS, sliceMs: SLICE_MS * 2 };
const WORKERS = Number(env('BENCH_WORKERS', QUICK ? '4' : '32'));
const PG_CLIENTS = env('BENCH_PG_CLIENTS', QUICK ? '1' : '1,8,32')
  .split(',')
  .map(Number);
const ETCD_WORKERS = env('BENCH_ETCD_WORKERS', QUICK ? '1' : '1,16')
  .split(',')
  .map(Number);
const FSYNC_OFF = env('BENCH_FSYNC_OFF', QUICK ? '0' : '1') !== '0';
/**
 * BENCH_QUEUE=0 skips issue 24's groups (claim-next, submissions: queue-groups.ts), BENCH_SEMAPHORE=0 issue 25's
 * (semaphore-groups.ts); =only runs only those (both =only: both).
 */
const ONLY = env('BENCH_QUEUE', '1') === 'only' || env('BENCH_SEMAPHORE', '1') === 'only';
const QUEUE = ONLY ? env('BENCH_QUEUE', '1') === 'only' : env('BENCH_QUEUE', '1') !== '0';
const SEMAPHORE = ONLY ? env('BENCH_SEMAPHORE', '1') === 'only' : env('BENCH_SEMAPHORE', '1') !== '0';
const QUEUE_ONLY = ONLY;
const SEMAPHORE_WORKERS = Number(env('BENCH_SEMAPHORE_WORKERS', QUICK ? '4' : '8'));

const load = (): string =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

async function report(groups: readonly Group[], settings: SliceSettings): Promise<void> {
  for (const group of groups) {
    const started = performance.now();
    const results = await runGroup(group, settings);
    console.log(
      `${markdownTable(group, results)}\n\n(${((performance.now() - started) / 1000).toFixed(0)} s, load average after: ${load()})\n`,
    );
  }
}

async function memory(): Promise<void> {
  console.log('## Memory store\n');
  if (!QUEUE_ONLY) await report(await memoryGroups(), SETTINGS);
  if (QUEUE) await report(await memoryQueueGroups(), SETTINGS);
  if (SEMAPHORE) await report(await memorySemaphoreGroups(), SETTINGS);
}

async function sqlite(): Promise<void> {
  console.log(
    '## SQLite\n\nbetter-sqlite3 12, WAL, files in a temporary directory: one per contender (bench/sqlite-groups.ts), one for the semaphore group; bench/sqlite.ts has submissions.\n',
  );
  const runs = [...(QUEUE_ONLY ? [] : [() => sqliteGroups(QUICK)]), ...(SEMAPHORE ? [sqliteSemaphoreGroups] : [])];
  for (const run of runs) {
    const { groups, close } = await run();
    try {
      await report(groups, SETTINGS);
    } finally {
      close();
    }
  }
}

async function redis(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const clients = {
    plain: new Redis(server.url),
    pipelining: new Redis(server.url, { enableAutoPipelining: true }),
    admin: new Redis(server.url),
  };
  try {
    const version = /redis_version:(\S+)/.exec(await clients.admin.info('server'))?.[1] ?? '?';
    console.log(
      `## Redis\n\nredis-server ${version} (no persistence), ioredis 5, one shared client per setting, each worker on its own key.\n`,
    );
    if (!QUEUE_ONLY) await report(await redisGroups(clients, WORKERS), SETTINGS);
    if (QUEUE) await report(await redisQueueGroups(clients, WORKERS), SETTINGS);
    if (SEMAPHORE) await report(await redisSemaphoreGroups(clients, SEMAPHORE_WORKERS), SETTINGS);
  } finally {
    for (const client of Object.values(clients)) client.disconnect();
    await server.stop();
  }
}

async function postgresRun(fsync: 'on' | 'off'): Promise<void> {
  const server = await startPostgres({ settings: { fsync } });
  const admin = new pg.Client({ connectionString: server.url });
  const target: PostgresTarget = { url: server.url, admin, closers: [] };
  try {
    await admin.connect();
    await preparePostgres(target);
    await preparePostgresQueue(target);
    await preparePostgresSemaphore(target);
    const version = (await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v;
    console.log(
      `## PostgreSQL, fsync ${fsync}\n\nPostgreSQL ${version}, fsync ${fsync}, synchronous_commit on, pg 8 and postgres.js 3, one pool per contender sized to its workers.\n`,
    );
    const groups: Group[] = [];
    if (SEMAPHORE && fsync === 'on')
      for (const clients of [1, SEMAPHORE_WORKERS]) groups.push(...(await postgresSemaphoreGroups(target, clients)));
    for (const clients of PG_CLIENTS) {
      if (QUEUE && fsync === 'on' && (clients === PG_CLIENTS[0] || clients === PG_CLIENTS.at(-1)))
        groups.push(...(await postgresQueueGroups(target, clients)));
      if (QUEUE_ONLY) continue;
      if (fsync === 'off' && clients !== PG_CLIENTS[0] && clients !== PG_CLIENTS.at(-1)) continue;
      groups.push(postgresCycleGroup(target, clients, `PostgreSQL claim + release, fsync ${fsync}`, fsync === 'on'));
      if (fsync === 'on') groups.push(postgresWriteGroup(target, clients, `PostgreSQL fenced write (transaction), fsync ${fsync}`));
      if (fsync === 'on') groups.push(postgresPeersGroup(target, clients, `PostgreSQL lease peers: claim + release, fsync ${fsync}`));
    }
    for (const group of groups) {
      await report([group], PG_SETTINGS);
      // NOTE: each group's pools are closed before the next opens its own (max_connections).
      await Promise.allSettled(target.closers.splice(0).map((close) => close()));
    }
  } finally {
    await Promise.allSettled(target.closers.map((close) => close()));
    await admin.end().catch(() => undefined);
    await server.stop();
  }
}

async function etcd(): Promise<void> {
  const server = await startEtcd();
  // NOTE: a deadline per unary call, as docs/stores.md tells users (never on the Lock's watch streams).
  const client = new Etcd3({
    hosts: server.url,
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + 10_000 }),
  });
  try {
    const version = ((await client.maintenance.status()) as { version?: string }).version ?? '?';
    console.log(`## etcd\n\netcd ${version} (one member, fsync on), etcd3 1.x, one shared client, each worker on its own key.\n`);
    await report(await etcdGroups(client, server.pid ?? 0, ETCD_WORKERS), PG_SETTINGS);
  } finally {
    client.close();
    await server.stop();
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(`# leasefence benchmark (npm run bench${QUICK ? ' -- --quick' : ''})\n`);
  console.log(
    `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average at start ${load()}; ` +
      `${SETTINGS.rounds} rounds × ${SETTINGS.passes} passes of ${SETTINGS.sliceMs} ms slices (Postgres ${PG_SETTINGS.sliceMs} ms), a new shuffled order at every pass.\n` +
      'cycles/s: median over rounds. ÷ baseline: median over rounds of the ratio within the round (min–max in brackets); ' +
      'the "(control)" row is the baseline measured again (noise). CPU: µs per cycle, client = this Node process, ' +
      "server = redis-server (INFO cpu), the contender's Postgres backends (/proc/<pid>/sched) or etcd (/proc/<pid>/stat).\n",
  );
  if (STORES.includes('memory')) await memory();
  if (STORES.includes('sqlite') && (!QUEUE_ONLY || SEMAPHORE)) await sqlite();
  if (STORES.includes('redis')) await redis();
  if (STORES.includes('postgres')) {
    await postgresRun('on');
    // NOTE: the issue-24 and -25 groups run with fsync on only.
    if (FSYNC_OFF && !ONLY) await postgresRun('off');
  }
  if (STORES.includes('etcd') && !ONLY) await etcd();
  console.log(`Total ${((performance.now() - started) / 1000).toFixed(0)} s, load average at the end ${load()}.`);
}

await main();
