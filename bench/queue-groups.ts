/**
 * `npm run bench`, issue 24: claim-next and idempotent submissions against raw baselines, in the same run.
 *
 * - Submissions (every store): the fenced write of the store's existing group (memory: an empty write; Redis:
 *   one SET; PostgreSQL: one ledger INSERT) plain, with a submission (a new run id every cycle: the lookup, the
 *   write and the record), and replayed (the same run again: the lookup alone), against a raw fenced write that
 *   also records the run id (memory: a Set; Redis: HSETNX in the check-and-SET script; PostgreSQL: INSERT ... ON
 *   CONFLICT DO NOTHING into a run table in the transaction).
 * - Claim-next (a claim of the next item of a set + release of it, so the item goes to the back of the queue):
 *   the raw baselines are memory: a Map scanned for the item available longest; Redis: a script over a sorted
 *   set of availability (ZRANGEBYSCORE LIMIT 1 + ZADD of the new expiry, the ZPOPMIN pattern that keeps the
 *   item) and a compare-and-ZADD release script; PostgreSQL: `SELECT ... ORDER BY available_at LIMIT 1 FOR
 *   UPDATE SKIP LOCKED` inside one UPDATE, and an UPDATE release. leasefence's rows run where the store has
 *   `claimNext` (the method is optional); a group whose store has none says so in its title.
 *
 * Library rows call the Store (claim-next on every store, and on memory also `leases.claimNext`) or the Leases
 * API (submissions), bundled like dist/ (library.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Store } from '../src/store.js';
import { thisLibrary, type Library } from './library.js';
import { pooled, type PostgresTarget } from './postgres-groups.js';
import { redisCpuUs, type RedisClients } from './redis-groups.js';
import type { Contender, Group } from './slices.js';

const TTL_MS = 600_000;
/** Items per set (memory and Redis: per worker; PostgreSQL: one set shared by the contender's workers). */
const ITEMS = 100;
let preparation = 0;

/** Claim-next + release on a store that has it; throws when an item is not granted (the set never runs dry). */
async function storeClaimNextCycle(store: Store, set: string, worker: number): Promise<() => Promise<unknown>> {
  const claimNext = store.claimNext?.bind(store);
  if (claimNext === undefined || store.addItems === undefined) throw new Error('no claim-next');
  // NOTE: items carry their set's hash tag, as Redis requires (the set and its items share one Cluster slot).
  const keys = Array.from({ length: ITEMS }, (_, i) => `{${set}:${worker}}:${i}`);
  await store.addItems({ set: `${set}:${worker}`, keys });
  const secret = randomBytes(16).toString('hex');
  return async () => {
    const outcome = await claimNext({
      set: `${set}:${worker}`,
      holder: 'bench',
      runId: null,
      secret,
      ttlMs: TTL_MS,
      attributes: {},
      onExpired: 'take-over',
    });
    if (!outcome.ok) throw new Error('claim-next: idle');
    await store.release({ fence: { key: outcome.key, token: outcome.token, secret, holder: 'bench', runId: null } });
  };
}

// ---------------------------------------------------------------------------------------------- memory

/** The raw in-memory queue: a Map of items scanned for the one available longest, a token per item. */
function rawMemoryQueue(name: string): Contender {
  return {
    name,
    prepare: async () => {
      const items = new Map<string, { availableAt: number; token: number; holder: string | null }>();
      for (let i = 0; i < ITEMS; i += 1) items.set(`i${i}`, { availableAt: 0, token: 0, holder: null });
      return async () => {
        const now = Date.now();
        let best: string | null = null;
        let since = Number.POSITIVE_INFINITY;
        for (const [key, item] of items)
          if (item.availableAt <= now && (item.availableAt < since || (item.availableAt === since && best !== null && key < best))) {
            best = key;
            since = item.availableAt;
          }
        const item = best === null ? undefined : items.get(best);
        if (item === undefined) throw new Error('raw: idle');
        item.token += 1;
        item.holder = 'bench';
        item.availableAt = now + TTL_MS;
        // release
        item.holder = null;
        item.availableAt = Date.now();
      };
    },
  };
}

/** Memory: claim-next + release, and fenced writes with and without a submission. */
export async function memoryQueueGroups(): Promise<Group[]> {
  const library = await thisLibrary();
  const { createMemoryStore } = library.memory;
  const storeCycle = (name: string): Contender => {
    const store = createMemoryStore() as Store;
    return {
      name,
      baseline: 'raw Map queue (scan for the oldest, token)',
      prepare: (worker) => storeClaimNextCycle(store, `q${++preparation}`, worker),
    };
  };
  const claimCycle: Contender = {
    name: 'store.claim + store.release of a known key (reference)',
    baseline: 'raw Map queue (scan for the oldest, token)',
    prepare: async (worker) => {
      const store = createMemoryStore();
      const secret = randomBytes(16).toString('hex');
      const key = `c${++preparation}:${worker}`;
      return async () => {
        const outcome = await store.claim({ key, holder: 'bench', runId: null, secret, ttlMs: TTL_MS, attributes: {}, recovering: false });
        if (!outcome.ok) throw new Error('claim: refused');
        await store.release({ fence: { key, token: outcome.token, secret, holder: 'bench', runId: null } });
      };
    },
  };
  const hasClaimNext = (createMemoryStore() as Store).claimNext !== undefined;
  // NOTE: the public API on top (validation, the secret, the lease handle, the log-safe result).
  const leasesCycle: Contender = {
    name: 'leases.claimNext + leases.release',
    baseline: 'raw Map queue (scan for the oldest, token)',
    prepare: async (worker) => {
      const leases = library.root.createLeases(createMemoryStore(), { holder: 'bench', ttlMs: TTL_MS });
      const set = `lq${++preparation}:${worker}`;
      await leases.addItems(
        set,
        Array.from({ length: ITEMS }, (_, i) => `${set}:${i}`),
      );
      return async () => {
        const outcome = await leases.claimNext(set);
        if (!outcome.ok) throw new Error('claim-next: idle');
        await leases.release(outcome.lease);
      };
    },
  };
  const claimNextGroup: Group = {
    title: `Memory claim-next + release (${ITEMS} items in the set)${hasClaimNext ? '' : ': this store has no claimNext'}`,
    workers: 1,
    contenders: [
      rawMemoryQueue('raw Map queue (scan for the oldest, token)'),
      rawMemoryQueue('raw (control)'),
      ...(hasClaimNext ? [storeCycle('store.claimNext + store.release'), leasesCycle] : []),
      claimCycle,
    ],
  };
  return [claimNextGroup, memorySubmissionGroup(library)];
}

function memorySubmissionGroup(library: Library): Group {
  const leases = library.root.createLeases(library.memory.createMemoryStore(), { holder: 'bench', ttlMs: TTL_MS });
  const payload = { verdict: 'ok', score: 0.93, labels: ['a', 'b'] };
  const write = (name: string, submission: 'none' | 'new' | 'replay'): Contender => ({
    name,
    baseline: 'raw fenced write + run-id Set',
    prepare: async (worker) => {
      const lease = await leases.claimOrThrow(`sub:${++preparation}:${worker}`);
      let run = 0;
      if (submission === 'replay') await leases.fencedWrite(lease, () => undefined, { submission: { payload, runId: 'r0' } });
      return async () => {
        const options = submission === 'none' ? undefined : { submission: { payload, runId: submission === 'new' ? `r${++run}` : 'r0' } };
        const outcome = await leases.fencedWrite(lease, () => undefined, options);
        if (outcome.ok === (submission === 'replay')) throw new Error(`fenced write: ${outcome.ok ? 'applied' : outcome.reason}`);
      };
    },
  });
  const raw = (name: string): Contender => ({
    name,
    prepare: async () => {
      const record = { token: 1, runs: new Set<string>(), data: 0 };
      let run = 0;
      return async () => {
        if (record.token !== 1) throw new Error('raw: fenced');
        const runId = `r${++run}`;
        if (record.runs.has(runId)) return;
        record.runs.add(runId);
        record.data += 1;
      };
    },
  });
  return {
    title: 'Memory fenced write with a submission (Leases API, empty write)',
    workers: 1,
    contenders: [
      raw('raw fenced write + run-id Set'),
      raw('raw (control)'),
      write('fencedWrite, no submission', 'none'),
      write('fencedWrite + submission (a new run each time)', 'new'),
      write('fencedWrite + submission replayed (the same run again)', 'replay'),
    ],
  };
}

// ---------------------------------------------------------------------------------------------- Redis

/** The raw fenced write that records its run id: GET check, HSETNX of the run, then the SET. */
const CHECK_RECORD_AND_SET = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('HSETNX', KEYS[3], ARGV[3], ARGV[4]) == 0 then return 2 end
redis.call('SET', KEYS[2], ARGV[2]) return 1`;

/** The raw claim-next: the item of the availability index whose time has come, re-scored to its expiry. */
const RAW_CLAIM_NEXT = `local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)
local first = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
if #first == 0 then return false end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), first[1])
return {first[1], redis.call('HINCRBY', KEYS[2], first[1], 1)}`;

/** The raw release: only the grant's token puts the item back, available now. */
const RAW_RELEASE_ITEM = `if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
local t = redis.call('TIME') redis.call('ZADD', KEYS[1], t[1] * 1000 + math.floor(t[2] / 1000), ARGV[1]) return 1`;

/** Redis: submissions and claim-next at 1 and `manyWorkers` workers. */
export async function redisQueueGroups(clients: RedisClients, manyWorkers: number): Promise<Group[]> {
  const library = await thisLibrary();
  return [1, manyWorkers].flatMap((workers) => [
    redisSubmissionGroup(clients, workers, library),
    redisClaimNextGroup(clients, workers, library),
  ]);
}

function redisSubmissionGroup(clients: RedisClients, workers: number, library: Library): Group {
  const { plain } = clients;
  const payload = { verdict: 'ok', score: 0.93, labels: ['a', 'b'] };
  const leases = library.root.createLeases(
    library.redis.createRedisStore({ client: plain, prefix: `bench:sub:${workers}:${++preparation}:` }),
    {
      holder: 'bench',
      ttlMs: TTL_MS,
    },
  );
  const write = (name: string, submission: 'none' | 'new' | 'replay'): Contender => ({
    name,
    prepare: async (worker) => {
      const key = `sub:${worker}:${++preparation}`;
      const lease = await leases.claimOrThrow(key);
      const data = `${library.redis.hashTagOf(key)}:data`;
      let run = 0;
      if (submission === 'replay')
        await leases.fencedWrite(lease, (tx) => tx.call('SET', data, 'x'), { submission: { payload, runId: 'r0' } });
      return async () => {
        const options = submission === 'none' ? undefined : { submission: { payload, runId: submission === 'new' ? `r${++run}` : 'r0' } };
        const outcome = await leases.fencedWrite(lease, (tx) => tx.call('SET', data, 'x'), options);
        if (outcome.ok === (submission === 'replay')) throw new Error(`fenced write: ${outcome.ok ? 'applied' : outcome.reason}`);
      };
    },
  });
  const raw = (name: string): Contender => ({
    name,
    prepare: async (worker) => {
      const sha = (await plain.script('LOAD', CHECK_RECORD_AND_SET)) as string;
      const tag = `{bench:rawsub:${name}:${worker}:${++preparation}}`;
      const id = randomUUID();
      await plain.set(`${tag}:lock`, id, 'PX', TTL_MS);
      let run = 0;
      return async () => {
        // NOTE: the digest a real submission would send (64 hex characters), recorded under a new run id.
        if ((await plain.evalsha(sha, 3, `${tag}:lock`, `${tag}:data`, `${tag}:runs`, id, 'x', `r${++run}`, 'a'.repeat(64))) !== 1)
          throw new Error('raw: fenced');
        // NOTE: bounded like the store's 32 per key, so the hash does not grow through the run.
        if (run % 32 === 0) await plain.del(`${tag}:runs`);
      };
    },
  });
  return {
    title: `Redis fenced write (one SET) with a submission, ${workers} worker${workers === 1 ? '' : 's'}`,
    workers,
    contenders: (
      [
        raw('raw check + HSETNX run + SET script'),
        raw('raw (control)'),
        write('leasefence fencedWrite(one SET), no submission', 'none'),
        write('leasefence fencedWrite(one SET) + submission (a new run each time)', 'new'),
        write('leasefence fencedWrite(one SET) + submission replayed', 'replay'),
      ] satisfies Contender[]
    ).map((contender) => ({ ...contender, serverCpuUs: () => redisCpuUs(clients.admin) })),
  };
}

function redisClaimNextGroup(clients: RedisClients, workers: number, library: Library): Group {
  const { plain } = clients;
  const store = library.redis.createRedisStore({ client: plain, prefix: `bench:cn:${workers}:${++preparation}:` }) as Store;
  const raw = (name: string): Contender => ({
    name,
    prepare: async (worker) => {
      const claimSha = (await plain.script('LOAD', RAW_CLAIM_NEXT)) as string;
      const releaseSha = (await plain.script('LOAD', RAW_RELEASE_ITEM)) as string;
      const tag = `{bench:rawq:${name}:${worker}:${++preparation}}`;
      await plain.zadd(`${tag}:index`, ...Array.from({ length: ITEMS }, (_, i) => [0, `i${i}`]).flat());
      return async () => {
        const granted = (await plain.evalsha(claimSha, 2, `${tag}:index`, `${tag}:tokens`, TTL_MS)) as [string, number] | null;
        if (granted === null) throw new Error('raw: idle');
        if ((await plain.evalsha(releaseSha, 2, `${tag}:index`, `${tag}:tokens`, granted[0], granted[1])) !== 1)
          throw new Error('raw: release');
      };
    },
  });
  const hasClaimNext = store.claimNext !== undefined;
  return {
    title: `Redis claim-next + release (${ITEMS} items per worker), ${workers} worker${workers === 1 ? '' : 's'}${hasClaimNext ? '' : ': this Redis store has no claimNext yet (raw baseline only)'}`,
    workers,
    contenders: (
      [
        raw('raw sorted-set scripts (ZRANGEBYSCORE LIMIT 1 + ZADD; compare-and-ZADD release)'),
        raw('raw (control)'),
        ...(hasClaimNext
          ? [
              {
                name: 'leasefence store.claimNext + store.release',
                prepare: (worker: number) => storeClaimNextCycle(store, `cn${++preparation}`, worker),
              },
            ]
          : []),
      ] satisfies Contender[]
    ).map((contender) => ({ ...contender, serverCpuUs: () => redisCpuUs(clients.admin) })),
  };
}

// ---------------------------------------------------------------------------------------------- PostgreSQL

/** The raw queue table and the raw run table (what `preparePostgresQueue` creates). */
const RAW_QUEUE_SCHEMA: readonly string[] = [
  `CREATE TABLE raw_items (set_name text NOT NULL, key text NOT NULL, available_at timestamptz NOT NULL, holder text, token bigint NOT NULL DEFAULT 0, PRIMARY KEY (set_name, key))`,
  `CREATE INDEX raw_items_available ON raw_items (set_name, available_at, key)`,
  `CREATE TABLE raw_runs (key text NOT NULL, run_id text NOT NULL, digest text NOT NULL, PRIMARY KEY (key, run_id))`,
];

/**
 * The raw claim-next: the item available longest, picked with SKIP LOCKED (a concurrent claim takes the next one
 * instead of waiting), set to expire, in one statement. ATOMICITY: the picked row is locked FOR UPDATE until commit.
 */
const RAW_CLAIM_NEXT_SQL = `UPDATE raw_items AS i SET holder = $2, token = i.token + 1, available_at = clock_timestamp() + make_interval(secs => $3::float8 / 1000)
FROM (SELECT key FROM raw_items WHERE set_name = $1 AND available_at <= (SELECT clock_timestamp())
      ORDER BY available_at, key LIMIT 1 FOR UPDATE SKIP LOCKED) AS pick
WHERE i.set_name = $1 AND i.key = pick.key RETURNING i.key, i.token::text AS token`;

/** ATOMICITY: one statement; only the grant's token puts the item back. */
const RAW_RELEASE_ITEM_SQL = `UPDATE raw_items SET holder = NULL, available_at = clock_timestamp() WHERE set_name = $1 AND key = $2 AND token = $3`;

const RAW_RECORD_RUN = `INSERT INTO raw_runs (key, run_id, digest) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`;
const RAW_FENCE_CHECK = `SELECT 1 FROM raw_leases WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp() FOR SHARE`;
const RAW_CLAIM = `INSERT INTO raw_leases AS l (name, holder, token, expires_at)
VALUES ($1, $2, 1, clock_timestamp() + make_interval(secs => $3::float8 / 1000))
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, token = l.token + 1, expires_at = EXCLUDED.expires_at
RETURNING token::text`;
const LEDGER_INSERT = `INSERT INTO ledger (key, token, entry) VALUES ($1, $2, 'x')`;

/** Creates the raw queue and run tables (after preparePostgres). */
export async function preparePostgresQueue(target: PostgresTarget): Promise<void> {
  for (const statement of RAW_QUEUE_SCHEMA) await target.admin.query(statement);
}

/** PostgreSQL: submissions and claim-next with `workers` clients. */
export async function postgresQueueGroups(target: PostgresTarget, workers: number): Promise<Group[]> {
  const library = await thisLibrary();
  return [postgresSubmissionGroup(target, workers, library), postgresClaimNextGroup(target, workers, library)];
}

/** A store of this tree over a pool that never connects: to see which optional methods it has. */
function probeStore(target: PostgresTarget, library: Library): Store {
  const pool = new pg.Pool({ connectionString: target.url, max: 1 });
  target.closers.push(() => pool.end());
  return library.postgres.createPostgresStore({ client: pool }) as Store;
}

function postgresSubmissionGroup(target: PostgresTarget, workers: number, library: Library): Group {
  const payload = { verdict: 'ok', score: 0.93, labels: ['a', 'b'] };
  const raw = (name: string): Contender =>
    pooled(target, name, undefined, workers, async (pool: pg.Pool, worker: number) => {
      const key = `rawsub:${name}:${workers}:${worker}:${++preparation}`;
      const token = (await pool.query<{ token: string }>(RAW_CLAIM, [key, 'bench', TTL_MS])).rows[0]?.token;
      if (token === undefined) throw new Error('raw: not granted');
      let run = 0;
      return async () => {
        const connection = await pool.connect();
        try {
          await connection.query('BEGIN');
          const checked = await connection.query({ name: 'raw-fence-check', text: RAW_FENCE_CHECK, values: [key, 'bench', token] });
          if (checked.rowCount !== 1) throw new Error('raw: fenced');
          const recorded = await connection.query({
            name: 'raw-record-run',
            text: RAW_RECORD_RUN,
            values: [key, `r${++run}`, 'a'.repeat(64)],
          });
          if (recorded.rowCount === 1) await connection.query({ name: 'raw-insert', text: LEDGER_INSERT, values: [key, token] });
          await connection.query('COMMIT');
        } finally {
          connection.release();
        }
      };
    });
  const write = (name: string, submission: 'none' | 'new' | 'replay'): Contender =>
    pooled(target, name, undefined, workers, async (pool: pg.Pool, worker: number) => {
      const leases = library.root.createLeases(library.postgres.createPostgresStore({ client: pool }), { holder: 'bench', ttlMs: TTL_MS });
      const lease = await leases.claimOrThrow(`sub:${workers}:${worker}:${++preparation}`);
      let run = 0;
      const insert = (tx: { query(text: string, values: unknown[]): Promise<unknown>; key: string; token: bigint }) =>
        tx.query(LEDGER_INSERT, [tx.key, tx.token.toString()]);
      if (submission === 'replay') await leases.fencedWrite(lease, insert, { submission: { payload, runId: 'r0' } });
      return async () => {
        const options = submission === 'none' ? undefined : { submission: { payload, runId: submission === 'new' ? `r${++run}` : 'r0' } };
        const outcome = await leases.fencedWrite(lease, insert, options);
        if (outcome.ok === (submission === 'replay')) throw new Error(`fenced write: ${outcome.ok ? 'applied' : outcome.reason}`);
      };
    });
  // NOTE: a PostgreSQL store without issue 24 (no setKeyState) cannot be given to createLeases: raw rows only.
  const supportsSubmissions = typeof probeStore(target, library).setKeyState === 'function';
  return {
    title: `PostgreSQL fenced write (ledger INSERT) with a submission, ${workers} client${workers === 1 ? '' : 's'}${supportsSubmissions ? '' : ': this PostgreSQL store has no issue 24 yet (raw baseline only)'}`,
    workers,
    contenders: [
      raw('raw transaction: FOR SHARE check + INSERT run ON CONFLICT DO NOTHING + INSERT'),
      raw('raw (control)'),
      ...(supportsSubmissions
        ? [
            write('leasefence fencedWrite(INSERT), no submission', 'none'),
            write('leasefence fencedWrite(INSERT) + submission (a new run each time)', 'new'),
            write('leasefence fencedWrite(INSERT) + submission replayed', 'replay'),
          ]
        : []),
    ],
  };
}

function postgresClaimNextGroup(target: PostgresTarget, workers: number, library: Library): Group {
  const raw = (name: string): Contender => {
    const set = `rawq:${name}:${workers}:${++preparation}`;
    let filled: Promise<unknown> | undefined;
    return pooled(target, name, undefined, workers, async (pool: pg.Pool) => {
      // NOTE: one set shared by the contender's workers, 10 items per worker more than workers, all due now.
      filled ??= pool.query(
        `INSERT INTO raw_items (set_name, key, available_at) SELECT $1, 'i' || g, now() FROM generate_series(1, $2::int) AS g`,
        [set, Math.max(ITEMS, workers * 10)],
      );
      await filled;
      return async () => {
        // NOTE: SKIP LOCKED may find nothing though items are free (seen once at 32 clients: the rows its
        // snapshot sorted were locked or already taken again); a raw consumer polls again, so does this one.
        let granted: { key: string; token: string } | undefined;
        for (let attempt = 0; granted === undefined && attempt < 3; attempt++) {
          const { rows } = await pool.query<{ key: string; token: string }>({
            name: 'raw-claim-next',
            text: RAW_CLAIM_NEXT_SQL,
            values: [set, 'bench', TTL_MS],
          });
          granted = rows[0];
        }
        if (granted === undefined) throw new Error('raw: idle');
        const released = await pool.query({
          name: 'raw-release-item',
          text: RAW_RELEASE_ITEM_SQL,
          values: [set, granted.key, granted.token],
        });
        if (released.rowCount !== 1) throw new Error('raw: release');
      };
    });
  };
  const hasClaimNext = probeStore(target, library).claimNext !== undefined;
  return {
    title: `PostgreSQL claim-next + release (one set of ${Math.max(ITEMS, workers * 10)} items), ${workers} client${workers === 1 ? '' : 's'}${hasClaimNext ? '' : ': this PostgreSQL store has no claimNext yet (raw baseline only)'}`,
    workers,
    contenders: [
      raw('raw UPDATE ... (SELECT ... LIMIT 1 FOR UPDATE SKIP LOCKED), UPDATE release'),
      raw('raw (control)'),
      ...(hasClaimNext
        ? [
            pooled(target, 'leasefence store.claimNext + store.release', undefined, workers, async (pool: pg.Pool, worker: number) =>
              storeClaimNextCycle(library.postgres.createPostgresStore({ client: pool }) as Store, `cn${workers}`, worker),
            ),
          ]
        : []),
    ],
  };
}
