/**
 * Waiting benchmark (issue 10): how fast a waiting acquirer gets a lock its holder releases, and what idle
 * waiters cost the store, for leasefence (woken by Redis pub/sub or Postgres NOTIFY) and for the polling
 * peers (redis-semaphore `Mutex` with `acquireTimeout`, @sesamecare-oss/redlock with retries), in one run,
 * on an ephemeral redis-server (no persistence) and PostgreSQL of its own.
 *
 *   npm run bench:handoff             (BENCH_HANDOFFS=60 handoffs per contender, BENCH_IDLE_MS=5000)
 *   npm run bench:handoff -- --quick  (20 handoffs, 2 s idle window: a smoke run)
 *
 * 1. Handoff latency: holder A holds the key, B is already waiting in its acquire call; after a random
 *    20-60 ms (so that pollers are caught at any phase of their interval) A releases. Measured from just
 *    before A's release call to B's acquire resolving, in one process (each side on its own connections):
 *    p50 / p99 / max in ms. Each peer waits with its own defaults (redis-semaphore retries every 10 ms,
 *    redlock every 200 ms + up to 100 ms jitter).
 * 2. Fair handoff across processes (issue 25): three waiting processes (test/waiting-stores/fair-order-worker.ts)
 *    queued in a known order, 20 rounds: each handoff from a release starting to the next waiter's grant, and
 *    whether every round granted in the arrival order; Redis, PostgreSQL and a SQLite file (which polls).
 * 3. Idle waiters: 32 waiters (each its own client, and for leasefence its own store and subscriber) on
 *    one key held for the whole window with a 60 s TTL. Redis: commands the server executed per second
 *    (`INFO commandstats` delta after `CONFIG RESETSTAT`, this script's own INFO / CONFIG excluded).
 *    Postgres: statements the waiters' pools sent per second (counted client-side).
 */
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Mutex } from 'redis-semaphore';
import { Redlock } from '@sesamecare-oss/redlock';
import { createLeases } from '../src/leases.js';
import type { Leases } from '../src/leases-types.js';
import { createRedisStore } from '../src/adapters/redis/index.js';
import { createPostgresStore, type PostgresClient } from '../src/adapters/postgres/index.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { startRedis } from '../test/support/redis-server.js';
import { createSqliteStore, type SqliteClient } from '../src/adapters/sqlite/index.js';
import { FAIR_PROCESSES, quantile, runFairRounds, type FairRig } from '../test/waiting-stores/fair-order-rounds.js';

const QUICK = process.argv.includes('--quick');
/** Rounds of the fair handoff (three handoffs each). */
const FAIR_ROUNDS = QUICK ? 3 : 20;
const HANDOFFS = Number(process.env['BENCH_HANDOFFS'] ?? (QUICK ? 20 : 60));
const IDLE_MS = Number(process.env['BENCH_IDLE_MS'] ?? (QUICK ? 2_000 : 5_000));
const IDLE_WAITERS = 32;
const TTL_MS = 60_000;
const WAIT_MS = 10_000;

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One library, as a holder and a waiter on a key. */
interface Contender {
  readonly name: string;
  /** Acquires `key` at once (the holder). Returns its release. */
  hold(key: string): Promise<() => Promise<void>>;
  /** Acquires `key`, waiting up to `timeoutMs` (or until `signal`). Returns its release, or null when not granted. */
  wait(key: string, timeoutMs: number, signal: AbortSignal): Promise<(() => Promise<void>) | null>;
}

/** A leasefence contender on two `Leases`: the holder's and the waiter's (each on its own store). */
function leasefence(name: string, holder: Leases, waiter: Leases): Contender {
  return {
    name,
    async hold(key) {
      const lease = await holder.claimOrThrow(key, { ttlMs: TTL_MS });
      return async () => void (await holder.release(lease));
    },
    async wait(key, timeoutMs, signal) {
      const result = await waiter.claim(key, { ttlMs: TTL_MS, wait: { timeoutMs, signal } });
      return result.ok ? async () => void (await waiter.release(result.lease)) : null;
    },
  };
}

function redisSemaphore(holderClient: Redis, waiterClient: Redis): Contender {
  return {
    name: 'redis-semaphore Mutex (acquireTimeout, retryInterval 10 ms)',
    async hold(key) {
      const mutex = new Mutex(holderClient, key, { lockTimeout: TTL_MS, refreshInterval: 0, acquireAttemptsLimit: 1 });
      await mutex.acquire();
      return () => mutex.release();
    },
    async wait(key, timeoutMs) {
      const mutex = new Mutex(waiterClient, key, { lockTimeout: TTL_MS, refreshInterval: 0, acquireTimeout: timeoutMs });
      return (await mutex.tryAcquire()) ? () => mutex.release() : null;
    },
  };
}

function redlock(holderClient: Redis, waiterClient: Redis): Contender {
  const holder = new Redlock([holderClient], { retryCount: 0 });
  const waiter = (timeoutMs: number): Redlock => new Redlock([waiterClient], { retryCount: Math.ceil(timeoutMs / 200) });
  return {
    name: '@sesamecare-oss/redlock (retryDelay 200 ms, jitter 100 ms)',
    async hold(key) {
      const lock = await holder.acquire([key], TTL_MS);
      return async () => void (await lock.release());
    },
    async wait(key, timeoutMs) {
      try {
        const lock = await waiter(timeoutMs).acquire([key], TTL_MS);
        return async () => void (await lock.release());
      } catch {
        return null;
      }
    },
  };
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** Handoff latencies (ms) of `contender` on `key`. */
async function handoffs(contender: Contender, key: string): Promise<number[]> {
  const latencies: number[] = [];
  const never = new AbortController().signal;
  for (let round = 0; round < HANDOFFS; round += 1) {
    const release = await contender.hold(key);
    let granted = 0;
    const waiting = contender.wait(key, WAIT_MS, never).then((next) => {
      granted = performance.now();
      return next;
    });
    await pause(20 + Math.random() * 40);
    const start = performance.now();
    await release();
    const next = await waiting;
    if (next === null) throw new Error(`${contender.name}: the waiter was not granted`);
    latencies.push(granted - start);
    await next();
  }
  return latencies.sort((a, b) => a - b);
}

/**
 * Requests and all commands in `INFO commandstats` (the latter counts the commands scripts run inside too).
 * Requests are EVAL, EVALSHA and SET calls: what these clients send at top level while a key is held
 * (leasefence and redlock: a script; redis-semaphore: SET NX; no script here runs SET on a held key).
 */
async function commandCalls(client: Redis): Promise<{ total: number; detail: string }> {
  const info = (await client.info('commandstats')) as string;
  const calls: Array<[string, number]> = [];
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const [, command, count] = match;
    if (command === undefined || command === 'info' || command.startsWith('config')) continue;
    calls.push([command, Number(count)]);
  }
  calls.sort((a, b) => b[1] - a[1]);
  const requests = calls.filter(([command]) => ['eval', 'evalsha', 'set'].includes(command)).reduce((sum, [, count]) => sum + count, 0);
  const all = calls.reduce((sum, [, count]) => sum + count, 0);
  return {
    total: requests,
    detail: `${all} commands: ${calls
      .slice(0, 4)
      .map(([command, count]) => `${command} ${count}`)
      .join(', ')}`,
  };
}

/** 32 idle waiters of one kind on a held key for `IDLE_MS`: the store's commands per second. */
async function idleLoad(
  name: string,
  hold: () => Promise<() => Promise<void>>,
  waiters: Array<(signal: AbortSignal) => Promise<unknown>>,
  measure: { reset(): Promise<void>; read(): Promise<{ total: number; detail: string }> },
): Promise<string> {
  const release = await hold();
  const stop = new AbortController();
  setMaxListeners(IDLE_WAITERS + 1, stop.signal);
  const running = waiters.map((wait) => wait(stop.signal).catch(() => undefined));
  // NOTE: past the first attempts and subscriptions: the steady state is what is measured.
  await pause(1_000);
  await measure.reset();
  const started = performance.now();
  await pause(IDLE_MS);
  const { total, detail } = await measure.read();
  const seconds = (performance.now() - started) / 1000;
  stop.abort();
  await Promise.all(running);
  await release();
  return `| ${name} | ${(total / seconds).toFixed(1)} | ${detail} in ${seconds.toFixed(1)} s |`;
}

async function main(): Promise<void> {
  const redis = await startRedis({ persistence: 'none' });
  const postgres = await startPostgres({ settings: { shared_preload_libraries: 'pg_stat_statements' } });
  const redisClients: Redis[] = [];
  const pools: pg.Pool[] = [];
  const pgClients: pg.Client[] = [];
  const newRedis = (): Redis => {
    const client = new Redis(redis.url);
    client.on('error', () => undefined);
    redisClients.push(client);
    return client;
  };
  const newPool = (): pg.Pool => {
    const pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
    pool.on('error', () => undefined);
    pools.push(pool);
    return pool;
  };
  const listener = async (): Promise<pg.Client> => {
    const client = new pg.Client({ connectionString: postgres.url });
    client.on('error', () => undefined);
    pgClients.push(client);
    await client.connect();
    return client;
  };
  const table = 'bench_handoff';
  await createPostgresStore({ client: newPool(), table }).migrate();
  const redisLeases = (subscribed: boolean): Leases =>
    createLeases(createRedisStore({ client: newRedis(), prefix: 'bench:lf:', ...(subscribed ? { subscriber: newRedis() } : {}) }), {
      holder: 'bench',
    });
  const postgresLeases = (client: PostgresClient, listening: boolean): Leases =>
    createLeases(createPostgresStore({ client, table, ...(listening ? { listener } : {}) }), { holder: 'bench' });
  try {
    const contenders: Array<[Contender, string]> = [
      [leasefence('leasefence, Redis (subscriber)', redisLeases(true), redisLeases(true)), 'handoff:lf-redis'],
      [leasefence('leasefence, Postgres (LISTEN)', postgresLeases(newPool(), false), postgresLeases(newPool(), true)), 'handoff:lf-pg'],
      [redisSemaphore(newRedis(), newRedis()), 'handoff:sem'],
      [redlock(newRedis(), newRedis()), 'handoff:rl'],
    ];
    // NOTE: `idle` pauses 20-60 ms before each, as a handoff's waiter does: a request after an idle spell
    // costs more (wake-ups of the process and the server) than one in a tight loop.
    const roundTrip = async (send: () => Promise<unknown>, idle = false): Promise<string> => {
      const times: number[] = [];
      for (let i = 0; i < 50; i += 1) {
        if (idle) await pause(20 + Math.random() * 40);
        const start = performance.now();
        await send();
        times.push(performance.now() - start);
      }
      return percentile(
        times.sort((a, b) => a - b),
        50,
      ).toFixed(2);
    };
    const ping = newRedis();
    const select = newPool();
    // NOTE: a refused claim on a held key is the round trip a woken waiter makes: the unit of "within 2 round trips".
    const refusedClaim = async (leases: Leases): Promise<string> => {
      const holder = await leases.claimOrThrow('rtt', { ttlMs: TTL_MS });
      const p50 = `${await roundTrip(() => leases.claim('rtt'))} ms (after an idle spell ${await roundTrip(() => leases.claim('rtt'), true)} ms)`;
      await leases.release(holder);
      return p50;
    };
    console.log(
      `Round trip p50 in this run: Redis PING ${await roundTrip(() => ping.ping())} ms, refused claim ${await refusedClaim(redisLeases(false))}; ` +
        `Postgres SELECT 1 ${await roundTrip(() => select.query('SELECT 1'))} ms, refused claim ${await refusedClaim(postgresLeases(newPool(), false))}\n`,
    );
    console.log(`## Handoff latency: release by A -> grant to waiting B (${HANDOFFS} handoffs each)\n`);
    console.log('| contender | p50 ms | p99 ms | max ms |\n|---|---|---|---|');
    for (const [contender, key] of contenders) {
      const latencies = await handoffs(contender, key);
      console.log(
        `| ${contender.name} | ${percentile(latencies, 50).toFixed(2)} | ${percentile(latencies, 99).toFixed(2)} | ${(latencies.at(-1) ?? NaN).toFixed(2)} |`,
      );
    }

    // NOTE: fair waiting across processes (issue 25): three waiting processes queued in a known order, each handoff
    // from a release starting to the next waiter's grant; the order must be the arrival order in every round.
    console.log(`\n## Fair handoff across processes: ${FAIR_PROCESSES} waiting processes, ${FAIR_ROUNDS} rounds (arrival order checked)\n`);
    console.log('| store | handoffs | p50 ms | p99 ms | max ms | rounds granted in arrival order |\n|---|---|---|---|---|---|');
    const sqliteDir = mkdtempSync(join(tmpdir(), 'leasefence-bench-fair-'));
    try {
      const sqliteFile = join(sqliteDir, 'leases.db');
      const database = new (createRequire(import.meta.url)('better-sqlite3') as new (path: string) => SqliteClient & { close(): unknown })(
        sqliteFile,
      );
      const sqliteStore = createSqliteStore({ client: database, table: 'leases', busyTimeoutMs: 10_000 });
      await sqliteStore.migrate();
      const rigs: FairRig[] = [
        {
          name: 'redis',
          store: createRedisStore({ client: newRedis(), prefix: 'bench:fair:' }),
          url: redis.url,
          namespace: 'bench:fair:',
          pollMs: 1_000,
        },
        { name: 'postgres', store: createPostgresStore({ client: newPool(), table }), url: postgres.url, namespace: table, pollMs: 1_000 },
        { name: 'sqlite', store: sqliteStore, url: sqliteFile, namespace: 'leases', pollMs: 25 },
      ];
      for (const rig of rigs) {
        const result = await runFairRounds(rig, FAIR_ROUNDS);
        const inOrder = result.rounds.filter((round) => round.granted.join() === round.arrived.join()).length;
        const { handoffsMs } = result;
        const label =
          rig.name === 'sqlite'
            ? 'SQLite (no notifications: waiters poll every 25 ms)'
            : rig.name === 'redis'
              ? 'Redis (subscriber)'
              : 'PostgreSQL (listener)';
        console.log(
          `| leasefence, ${label} | ${handoffsMs.length} | ${quantile(handoffsMs, 0.5).toFixed(2)} | ${quantile(handoffsMs, 0.99).toFixed(2)} | ${Math.max(...handoffsMs).toFixed(2)} | ${inOrder} of ${result.rounds.length} |`,
        );
      }
      database.close();
    } finally {
      rmSync(sqliteDir, { recursive: true, force: true });
    }

    const server = newRedis();
    const redisMeasure = { reset: async () => void (await server.config('RESETSTAT')), read: () => commandCalls(server) };
    const many = <T>(make: () => T): T[] => Array.from({ length: IDLE_WAITERS }, make);
    console.log(`\n## ${IDLE_WAITERS} idle waiters on one held key (${IDLE_MS} ms window, TTL ${TTL_MS / 1000} s)\n`);
    console.log('| waiters | requests/s to the store | what the store ran in the window |\n|---|---|---|');
    const idleHolder = redisLeases(false);
    const holdRedis = async (): Promise<() => Promise<void>> => {
      // NOTE: `jumpQueue`: the previous window's waiters may still have places (their dequeues are not awaited).
      const lease = await idleHolder.claimOrThrow('idle:lf', { ttlMs: TTL_MS, jumpQueue: true });
      return async () => void (await idleHolder.release(lease));
    };
    const waitOn =
      (leases: Leases, key: string, extra: Record<string, number> = {}) =>
      (signal: AbortSignal) =>
        leases.claim(key, { ttlMs: TTL_MS, wait: { timeoutMs: IDLE_MS + 30_000, signal, ...extra } });
    console.log(
      await idleLoad(
        'leasefence, Redis (subscriber)',
        holdRedis,
        many(() => waitOn(redisLeases(true), 'idle:lf')),
        redisMeasure,
      ),
    );
    console.log(
      await idleLoad(
        'leasefence, Redis (no subscriber: polls, pollMs 1000)',
        holdRedis,
        many(() => waitOn(redisLeases(false), 'idle:lf')),
        redisMeasure,
      ),
    );
    const peerTimeout = IDLE_MS + 1_500;
    const semaphoreHolder = redisSemaphore(newRedis(), newRedis());
    console.log(
      await idleLoad(
        'redis-semaphore Mutex (acquireTimeout)',
        () => semaphoreHolder.hold('idle:sem'),
        many(() => {
          const client = newRedis();
          return () => new Mutex(client, 'idle:sem', { lockTimeout: TTL_MS, refreshInterval: 0, acquireTimeout: peerTimeout }).tryAcquire();
        }),
        redisMeasure,
      ),
    );
    const redlockHolder = redlock(newRedis(), newRedis());
    console.log(
      await idleLoad(
        '@sesamecare-oss/redlock (retries)',
        () => redlockHolder.hold('idle:rl'),
        many(() => {
          const client = newRedis();
          return () => new Redlock([client], { retryCount: Math.ceil(peerTimeout / 200) }).acquire(['idle:rl'], TTL_MS);
        }),
        redisMeasure,
      ),
    );

    const stats = new pg.Pool({ connectionString: postgres.url, max: 1 });
    pools.push(stats);
    await stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    // NOTE: pg_stat_statements counts each execution as it ends (no stats flush delay); this pool's own
    // statements are left out by their user-visible text.
    const postgresMeasure = {
      reset: async () => void (await stats.query('SELECT pg_stat_statements_reset()')),
      read: async () => {
        const { rows } = await stats.query<{ calls: string; top: string | null }>(
          `SELECT coalesce(sum(calls), 0) AS calls, string_agg(left(regexp_replace(query, '\\s+', ' ', 'g'), 40) || ' ' || calls, '; ') AS top
           FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%'`,
        );
        return { total: Number(rows[0]?.calls ?? 0), detail: `statements: ${rows[0]?.top ?? 'none'}` };
      },
    };
    const pgHolder = postgresLeases(newPool(), false);
    const holdPostgres = async (): Promise<() => Promise<void>> => {
      // NOTE: `jumpQueue`: the previous window's waiters may still have places (their dequeues are not awaited).
      const lease = await pgHolder.claimOrThrow('idle:lf', { ttlMs: TTL_MS, jumpQueue: true });
      return async () => void (await pgHolder.release(lease));
    };
    const sharedPool = newPool();
    console.log(
      await idleLoad(
        'leasefence, Postgres (LISTEN)',
        holdPostgres,
        many(() => waitOn(postgresLeases(sharedPool, true), 'idle:lf')),
        postgresMeasure,
      ),
    );
    console.log(
      await idleLoad(
        'leasefence, Postgres (no listener: polls, pollMs 1000)',
        holdPostgres,
        many(() => waitOn(postgresLeases(sharedPool, false), 'idle:lf')),
        postgresMeasure,
      ),
    );
  } finally {
    for (const client of redisClients) client.disconnect();
    await Promise.all(pgClients.map((client) => client.end().catch(() => undefined)));
    await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
    await redis.stop();
    await postgres.stop();
  }
}

await main();
