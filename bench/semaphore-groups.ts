/**
 * `npm run bench`, issue 25 (semaphores): acquire + release of a permit against raw baselines, a peer and a plain
 * claim + release of one key, in the same run (BENCH_SEMAPHORE=0 skips these groups, =only runs only them).
 *
 * - The cycle: `acquirePermit` (limit 3) + `release` of the permit granted, each worker on a semaphore of its own
 *   (no contention: the cost of one acquire, not of waiting), through the Store and through the Leases API.
 * - Raw baselines, the least a semaphore must do: Redis: one script that counts the live members of a sorted set
 *   by expiry (ZCOUNT on the server's TIME) and adds one below the limit, then ZREM; PostgreSQL: one plpgsql call
 *   (`pg_advisory_xact_lock` on the name, count of the live slot rows, INSERT of one) and a DELETE of the row.
 *   Neither has a token, a secret, a record of the last holder or a fenced write.
 * - The peer on Redis: redis-semaphore's `Semaphore(client, key, 3)` acquire + release. What it does not
 *   guarantee: no token (nothing a resource can check), no fenced write, nothing that refuses a holder whose
 *   slot expired and was taken; expiry is on the client's clock (`Date.now()` sent as the score).
 * - The reference on every store: leasefence's own claim + release of one key: the cost of a semaphore over a lease.
 * - The cost as the limit grows (Redis, PostgreSQL; 1 worker): limit 1, 3, 10 and 50 with all but one permit held
 *   (by other secrets, untimed), each against the limit-1 row of the same contender: an acquire reads every permit.
 *
 * Library rows run this tree bundled like dist/ (library.ts); SQLite's (no bundle entry in library.ts) runs the
 * store from `src/` through tsx, acquire and claim alike, so their ratio is fair.
 */
import Database from 'better-sqlite3';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { Semaphore } from 'redis-semaphore';
import { createSqliteStore } from '../src/adapters/sqlite/index.js';
import type { AcquirePermitCommand } from '../src/fence/permits.js';
import { createLeases } from '../src/leases.js';
import type { Leases } from '../src/leases-types.js';
import type { Store } from '../src/store.js';
import { thisLibrary, type Library } from './library.js';
import { pooled, type PostgresTarget } from './postgres-groups.js';
import { redisCpuUs, type RedisClients } from './redis-groups.js';
import type { Contender, Group } from './slices.js';

const TTL_MS = 600_000;
/** The limit of the acquire + release groups. */
const LIMIT = 3;
/** The limits of the cost-as-the-limit-grows groups (all but one permit held). */
const LIMITS: readonly number[] = [1, 3, 10, 50];
let preparation = 0;

const secretOf = (): string => randomBytes(16).toString('hex');

function permitCommand(semaphore: string, limit: number, secret: string): AcquirePermitCommand {
  return { semaphore, limit, holder: 'bench', runId: null, secret, ttlMs: TTL_MS, attributes: {}, recovering: false };
}

/**
 * Acquire + release of a permit on a store that has `acquirePermit`, after `held` permits of the semaphore are
 * acquired by other secrets and kept (untimed); throws when a permit is not granted.
 */
async function storeAcquireCycle(store: Store, semaphore: string, limit: number, held = 0): Promise<() => Promise<unknown>> {
  const acquire = store.acquirePermit?.bind(store);
  if (acquire === undefined) throw new Error('no acquirePermit');
  for (let index = 0; index < held; index += 1) {
    const outcome = await acquire(permitCommand(semaphore, limit, secretOf()));
    if (!outcome.ok) throw new Error(`held permit: ${outcome.reason}`);
  }
  const secret = secretOf();
  return async () => {
    const outcome = await acquire(permitCommand(semaphore, limit, secret));
    if (!outcome.ok) throw new Error(`acquirePermit: ${outcome.reason}`);
    await store.release({ fence: { key: outcome.key, token: outcome.token, secret, holder: 'bench', runId: null } });
  };
}

/** Claim + release of one key on a store (the reference: a lease without a semaphore). */
async function storeClaimCycle(store: Store, key: string): Promise<() => Promise<unknown>> {
  const secret = secretOf();
  return async () => {
    const outcome = await store.claim({ key, holder: 'bench', runId: null, secret, ttlMs: TTL_MS, attributes: {}, recovering: false });
    if (!outcome.ok) throw new Error(`claim: ${outcome.reason}`);
    await store.release({ fence: { key, token: outcome.token, secret, holder: 'bench', runId: null } });
  };
}

/** `leases.acquirePermit` + `leases.release` (validation, a new secret per acquire, the lease handle). */
function leasesAcquireCycle(leases: Leases, semaphore: string): () => Promise<unknown> {
  return async () => {
    const outcome = await leases.acquirePermit(semaphore, { limit: LIMIT });
    if (!outcome.ok) throw new Error(`acquirePermit: ${outcome.reason}`);
    await leases.release(outcome.lease);
  };
}

/** `leases.claim` + `leases.release` of one key. */
function leasesClaimCycle(leases: Leases, key: string): () => Promise<unknown> {
  return async () => {
    const outcome = await leases.claim(key);
    if (!outcome.ok) throw new Error(`claim: ${outcome.reason}`);
    await leases.release(outcome.lease);
  };
}

const STORE_CLAIM = 'store.claim + store.release (one key)';
const LEASES_CLAIM = 'leases.claim + leases.release (one key)';

/**
 * The rows of memory and SQLite: claim + release (the baseline) and its control, acquire + release, through the
 * Store and the Leases API (`leasesOn`); `makeStore` once per worker.
 */
function storeRows(makeStore: () => Store, leasesOn: (store: Store) => Leases, prefix: string): Contender[] {
  const claim: Contender = {
    name: STORE_CLAIM,
    prepare: async (worker) => storeClaimCycle(makeStore(), `${prefix}c${++preparation}:${worker}`),
  };
  return [
    claim,
    { ...claim, name: `${STORE_CLAIM} (control)` },
    {
      name: `store.acquirePermit (limit ${LIMIT}) + store.release`,
      baseline: STORE_CLAIM,
      prepare: async (worker) => storeAcquireCycle(makeStore(), `${prefix}s${++preparation}:${worker}`, LIMIT),
    },
    {
      name: LEASES_CLAIM,
      baseline: STORE_CLAIM,
      prepare: async (worker) => leasesClaimCycle(leasesOn(makeStore()), `${prefix}lc${++preparation}:${worker}`),
    },
    {
      name: `leases.acquirePermit (limit ${LIMIT}) + leases.release`,
      baseline: LEASES_CLAIM,
      prepare: async (worker) => leasesAcquireCycle(leasesOn(makeStore()), `${prefix}ls${++preparation}:${worker}`),
    },
  ];
}

// ---------------------------------------------------------------------------------------------- memory, SQLite

/** Memory: acquire + release against claim + release (no raw baseline: the reference is the store's own claim). */
export async function memorySemaphoreGroups(): Promise<Group[]> {
  const library = await thisLibrary();
  const leasesOn = (store: Store): Leases => library.root.createLeases(store, { holder: 'bench', ttlMs: TTL_MS }) as unknown as Leases;
  return [
    {
      title: `Memory acquirePermit + release (limit ${LIMIT}) against claim + release of one key`,
      workers: 1,
      contenders: storeRows(() => library.memory.createMemoryStore() as Store, leasesOn, 'm'),
    },
  ];
}

/**
 * SQLite (better-sqlite3, WAL, synchronous = NORMAL, one file, one connection; the driver is synchronous, so one
 * worker): acquire + release against claim + release. Returns the groups and a function that closes the file.
 */
export async function sqliteSemaphoreGroups(): Promise<{ groups: Group[]; close(): void }> {
  const directory = mkdtempSync(join(tmpdir(), 'leasefence-bench-semaphore-'));
  const database = new Database(join(directory, 'bench.db'));
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  const store = createSqliteStore({ client: database });
  await store.migrate();
  const leasesOn = (on: Store): Leases => createLeases(on, { holder: 'bench', ttlMs: TTL_MS }) as unknown as Leases;
  return {
    groups: [
      {
        title: `SQLite acquirePermit + release (limit ${LIMIT}) against claim + release of one key (better-sqlite3, WAL, synchronous = NORMAL)`,
        workers: 1,
        contenders: storeRows(() => store as Store, leasesOn, 'q'),
      },
    ],
    close: () => {
      database.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------- Redis

/**
 * The raw semaphore acquire: count the live members of the sorted set (score = expiry, on the server's clock) and
 * add this one below the limit. Released with ZREM. No token, no secret, no record of who held it.
 */
const RAW_ACQUIRE = `local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)
if redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf') >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3]) return 1`;

/** The raw acquire + release on `key`, after `held` members added (untimed). */
function rawRedisCycle(clients: RedisClients, name: string, limit: number, held: number): Contender {
  const { plain } = clients;
  return {
    name,
    prepare: async (worker) => {
      const sha = (await plain.script('LOAD', RAW_ACQUIRE)) as string;
      const key = `bench:rawsem:${++preparation}:${worker}`;
      for (let index = 0; index < held; index += 1)
        if ((await plain.evalsha(sha, 1, key, limit, TTL_MS, randomUUID())) !== 1) throw new Error('raw: held not granted');
      const member = randomUUID();
      return async () => {
        if ((await plain.evalsha(sha, 1, key, limit, TTL_MS, member)) !== 1) throw new Error('raw: full');
        if ((await plain.zrem(key, member)) !== 1) throw new Error('raw: release');
      };
    },
  };
}

/** redis-semaphore's `Semaphore` acquire + release, after `held` other holders acquired (untimed). */
function redisSemaphoreCycle(clients: RedisClients, name: string, limit: number, held: number, baseline?: string): Contender {
  const options = { lockTimeout: TTL_MS, refreshInterval: 0, acquireAttemptsLimit: 1 };
  return {
    name,
    ...(baseline === undefined ? {} : { baseline }),
    prepare: async (worker) => {
      const key = `bench:redis-semaphore:${++preparation}:${worker}`;
      for (let index = 0; index < held; index += 1) await new Semaphore(clients.plain, key, limit, options).acquire();
      const semaphore = new Semaphore(clients.plain, key, limit, options);
      return async () => {
        await semaphore.acquire();
        await semaphore.release();
      };
    },
  };
}

/** Redis: acquire + release at 1 and `manyWorkers` workers, and the cost as the limit grows (1 worker). */
export async function redisSemaphoreGroups(clients: RedisClients, manyWorkers: number): Promise<Group[]> {
  const library = await thisLibrary();
  return [redisCycleGroup(clients, 1, library), redisCycleGroup(clients, manyWorkers, library), redisLimitGroup(clients, library)];
}

function redisCycleGroup(clients: RedisClients, workers: number, library: Library): Group {
  const makeStore = (): Store => library.redis.createRedisStore({ client: clients.plain, prefix: `bench:sem:${++preparation}:` }) as Store;
  const bundled = (): Leases => library.root.createLeases(makeStore(), { holder: 'bench', ttlMs: TTL_MS }) as unknown as Leases;
  const raw = `raw script (ZCOUNT live by expiry + ZADD; ZREM), limit ${LIMIT}`;
  return {
    title: `Redis acquirePermit + release (limit ${LIMIT}, a semaphore per worker), ${workers} worker${workers === 1 ? '' : 's'}`,
    workers,
    contenders: (
      [
        rawRedisCycle(clients, raw, LIMIT, 0),
        rawRedisCycle(clients, 'raw (control)', LIMIT, 0),
        {
          name: `leasefence store.acquirePermit + store.release`,
          baseline: raw,
          prepare: (worker: number) => storeAcquireCycle(makeStore(), `s${++preparation}:${worker}`, LIMIT),
        },
        redisSemaphoreCycle(clients, `redis-semaphore Semaphore(client, key, ${LIMIT}) acquire + release`, LIMIT, 0),
        {
          name: `leasefence ${STORE_CLAIM}`,
          baseline: raw,
          prepare: (worker: number) => storeClaimCycle(makeStore(), `c${++preparation}:${worker}`),
        },
        {
          name: `leasefence leases.acquirePermit + leases.release`,
          baseline: `leasefence ${LEASES_CLAIM}`,
          prepare: async (worker: number) => leasesAcquireCycle(bundled(), `ls${++preparation}:${worker}`),
        },
        {
          name: `leasefence ${LEASES_CLAIM}`,
          baseline: raw,
          prepare: async (worker: number) => leasesClaimCycle(bundled(), `lc${++preparation}:${worker}`),
        },
      ] satisfies Contender[]
    ).map((contender) => ({ ...contender, serverCpuUs: () => redisCpuUs(clients.admin) })),
  };
}

function redisLimitGroup(clients: RedisClients, library: Library): Group {
  const store = library.redis.createRedisStore({ client: clients.plain, prefix: `bench:semlimit:${++preparation}:` }) as Store;
  const name = (who: string, limit: number): string => `${who}, limit ${limit} (${limit - 1} held)`;
  return {
    title: 'Redis acquire + release as the limit grows (all but one permit held), 1 worker; each row ÷ its own limit-1 row',
    workers: 1,
    contenders: LIMITS.flatMap((limit): Contender[] => [
      {
        name: name('leasefence store.acquirePermit', limit),
        baseline: name('leasefence store.acquirePermit', 1),
        prepare: (worker) => storeAcquireCycle(store, `l${limit}:${++preparation}:${worker}`, limit, limit - 1),
      },
      { ...rawRedisCycle(clients, name('raw script', limit), limit, limit - 1), baseline: name('raw script', 1) },
      redisSemaphoreCycle(clients, name('redis-semaphore', limit), limit, limit - 1, name('redis-semaphore', 1)),
    ]).map((contender) => ({ ...contender, serverCpuUs: () => redisCpuUs(clients.admin) })),
  };
}

// ---------------------------------------------------------------------------------------------- PostgreSQL

/**
 * The raw semaphore: a slot row per live holder. ATOMICITY (READ COMMITTED): the transaction-scoped advisory lock
 * on the name serialises the acquires of one semaphore, and each statement of a volatile plpgsql function takes a
 * new snapshot, so the count after the lock sees every slot committed before it. One call, one round trip.
 */
const RAW_SEMAPHORE_SCHEMA: readonly string[] = [
  'CREATE TABLE raw_permits (semaphore text NOT NULL, id text NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (semaphore, id))',
  `CREATE FUNCTION raw_acquire_permit(p_semaphore text, p_id text, p_limit int, p_ttl_ms float8) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(p_semaphore));
  IF (SELECT count(*) FROM raw_permits WHERE semaphore = p_semaphore AND expires_at > clock_timestamp()) >= p_limit THEN
    RETURN false;
  END IF;
  INSERT INTO raw_permits (semaphore, id, expires_at) VALUES (p_semaphore, p_id, clock_timestamp() + make_interval(secs => p_ttl_ms / 1000));
  RETURN true;
END $$`,
];
const RAW_ACQUIRE_SQL = 'SELECT raw_acquire_permit($1, $2, $3, $4) AS ok';
const RAW_RELEASE_SQL = 'DELETE FROM raw_permits WHERE semaphore = $1 AND id = $2';

/** Creates the raw slot table and its acquire function (after preparePostgres). */
export async function preparePostgresSemaphore(target: PostgresTarget): Promise<void> {
  for (const statement of RAW_SEMAPHORE_SCHEMA) await target.admin.query(statement);
}

/** The raw acquire + release, each worker on a semaphore of its own, after `held` slots taken (untimed). */
function rawPostgresCycle(
  target: PostgresTarget,
  name: string,
  baseline: string | undefined,
  workers: number,
  limit: number,
  held: number,
) {
  return pooled(target, name, baseline, workers, async (pool: pg.Pool, worker: number) => {
    const semaphore = `rawsem:${++preparation}:${worker}`;
    const acquire = async (id: string): Promise<void> => {
      const { rows } = await pool.query<{ ok: boolean }>({
        name: 'raw-acquire-permit',
        text: RAW_ACQUIRE_SQL,
        values: [semaphore, id, limit, TTL_MS],
      });
      if (rows[0]?.ok !== true) throw new Error('raw: full');
    };
    for (let index = 0; index < held; index += 1) await acquire(randomUUID());
    const id = randomUUID();
    return async () => {
      await acquire(id);
      const released = await pool.query({ name: 'raw-release-permit', text: RAW_RELEASE_SQL, values: [semaphore, id] });
      if (released.rowCount !== 1) throw new Error('raw: release');
    };
  });
}

/** PostgreSQL: acquire + release at each of `clients` (the first and last), and the cost as the limit grows. */
export async function postgresSemaphoreGroups(target: PostgresTarget, clients: number): Promise<Group[]> {
  const library = await thisLibrary();
  return [postgresCycleGroup(target, clients, library), ...(clients === 1 ? [postgresLimitGroup(target, library)] : [])];
}

function postgresCycleGroup(target: PostgresTarget, workers: number, library: Library): Group {
  const raw = `raw plpgsql (pg_advisory_xact_lock + count + INSERT slot; DELETE), limit ${LIMIT}`;
  const store = (pool: pg.Pool): Store => library.postgres.createPostgresStore({ client: pool }) as Store;
  const bundled = (pool: pg.Pool): Leases =>
    library.root.createLeases(store(pool), { holder: 'bench', ttlMs: TTL_MS }) as unknown as Leases;
  return {
    title: `PostgreSQL acquirePermit + release (limit ${LIMIT}, a semaphore per client), fsync on, ${workers} client${workers === 1 ? '' : 's'}`,
    workers,
    contenders: [
      rawPostgresCycle(target, raw, undefined, workers, LIMIT, 0),
      rawPostgresCycle(target, 'raw (control)', undefined, workers, LIMIT, 0),
      pooled(target, 'leasefence store.acquirePermit + store.release', raw, workers, async (pool, worker) =>
        storeAcquireCycle(store(pool), `s${workers}:${++preparation}:${worker}`, LIMIT),
      ),
      pooled(target, `leasefence ${STORE_CLAIM}`, raw, workers, async (pool, worker) =>
        storeClaimCycle(store(pool), `c${workers}:${++preparation}:${worker}`),
      ),
      pooled(target, 'leasefence leases.acquirePermit + leases.release', `leasefence ${LEASES_CLAIM}`, workers, async (pool, worker) =>
        leasesAcquireCycle(bundled(pool), `ls${workers}:${++preparation}:${worker}`),
      ),
      pooled(target, `leasefence ${LEASES_CLAIM}`, raw, workers, async (pool, worker) =>
        leasesClaimCycle(bundled(pool), `lc${workers}:${++preparation}:${worker}`),
      ),
    ],
  };
}

function postgresLimitGroup(target: PostgresTarget, library: Library): Group {
  const name = (who: string, limit: number): string => `${who}, limit ${limit} (${limit - 1} held)`;
  return {
    title: 'PostgreSQL acquire + release as the limit grows (all but one permit held), fsync on, 1 client; each row ÷ its own limit-1 row',
    workers: 1,
    contenders: LIMITS.flatMap((limit): Contender[] => [
      pooled(target, name('leasefence store.acquirePermit', limit), name('leasefence store.acquirePermit', 1), 1, async (pool, worker) =>
        storeAcquireCycle(
          library.postgres.createPostgresStore({ client: pool }) as Store,
          `l${limit}:${++preparation}:${worker}`,
          limit,
          limit - 1,
        ),
      ),
      rawPostgresCycle(target, name('raw plpgsql', limit), name('raw plpgsql', 1), 1, limit, limit - 1),
    ]),
  };
}
