/**
 * `npm run bench`, Redis: acquire + release cycles of leasefence and its peers against a raw baseline
 * (`SET key id NX PX` + a compare-and-delete script by EVALSHA), fenced writes against a raw check-and-SET
 * script, and `withLease` against leasefence's own claim + release; every contender on one shared ioredis
 * client, each worker on its own key (no contention: retry policies play no part). The same contenders on
 * a client with `enableAutoPipelining` show what that setting does for each library. Server CPU per cycle
 * is redis-server's `INFO cpu` (user + sys), read on a separate connection between slices. With
 * BENCH_COMPARE (another checkout's `src/`), that tree's claim + release and fenced write run in the same
 * groups, as "before: ..." rows: before and after in one run. Both trees run bundled (library.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { createLock, IoredisAdapter } from 'redlock-universal';
import { Redlock } from '@sesamecare-oss/redlock';
import type { createRedisStore, hashTagOf } from '../src/adapters/redis/index.js';
import type { createLeases } from '../src/leases.js';
import { comparedLibrary, thisLibrary, type Library as Bundled } from './library.js';
import type { Contender, Group } from './slices.js';

const TTL_MS = 30_000;
const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
/** The raw fenced write: the lock's value checked, then one SET, atomically. */
const CHECK_AND_SET = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[2], ARGV[2]) end return 0";

/** The clients a Redis run uses: plain, auto-pipelining, and an admin connection for INFO. */
export interface RedisClients {
  readonly plain: Redis;
  readonly pipelining: Redis;
  readonly admin: Redis;
}

/** redis-server's CPU time so far, µs (user + sys). */
export async function redisCpuUs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

let preparation = 0;

/** The lease API and Redis store of a checkout, bundled (library.ts): this one, or BENCH_COMPARE's. */
interface Library {
  readonly createLeases: typeof createLeases;
  readonly createRedisStore: typeof createRedisStore;
  readonly hashTagOf: typeof hashTagOf;
  readonly cycles: Bundled['cycles'];
}

/** A bundled library's Redis part, or null. */
const redisPart = (library: Bundled | null): Library | null =>
  library === null
    ? null
    : {
        createLeases: library.root.createLeases,
        createRedisStore: library.redis.createRedisStore,
        hashTagOf: library.redis.hashTagOf,
        cycles: library.cycles,
      };

function raw(name: string, client: Redis, baseline?: string): Contender {
  return {
    name,
    ...(baseline === undefined ? {} : { baseline }),
    prepare: async (worker) => {
      const sha = (await client.script('LOAD', COMPARE_AND_DELETE)) as string;
      const key = `bench:raw:${name}:${worker}`;
      return async () => {
        const id = randomUUID();
        if ((await client.set(key, id, 'PX', TTL_MS, 'NX')) !== 'OK') throw new Error('raw: not acquired');
        await client.evalsha(sha, 1, key, id);
      };
    },
  };
}

function leasefence(library: Library, name: string, client: Redis, baseline?: string): Contender {
  const leases = library.createLeases(library.createRedisStore({ client, prefix: `bench:lf:${++preparation}:` }), {
    holder: 'bench',
    ttlMs: TTL_MS,
  });
  return {
    name,
    ...(baseline === undefined ? {} : { baseline }),
    prepare: async (worker) => library.cycles.claimRelease(leases, `cycle:${worker}`, name),
  };
}

function semaphore(name: string, client: Redis, baseline?: string): Contender {
  return {
    name,
    ...(baseline === undefined ? {} : { baseline }),
    prepare: async (worker) => {
      const mutex = new Mutex(client, `bench:sem:${++preparation}:${worker}`, { lockTimeout: TTL_MS, refreshInterval: 0 });
      return async () => {
        await mutex.acquire();
        await mutex.release();
      };
    },
  };
}

/** The claim + release group at `workers` workers. */
function cycleGroup(clients: RedisClients, workers: number, mine: Library, before: Library | null): Group {
  const { plain, pipelining } = clients;
  const redlock = new Redlock([plain], { retryCount: 0 });
  const adapter = new IoredisAdapter(plain);
  const leases = mine.createLeases(mine.createRedisStore({ client: plain, prefix: `bench:with:${workers}:` }), {
    holder: 'bench',
    ttlMs: TTL_MS,
  });
  const rawName = 'raw SET NX PX + compare-and-delete';
  return {
    title: 'Redis claim + release',
    workers,
    contenders: (
      [
        raw(rawName, plain),
        raw('raw (control)', plain),
        leasefence(mine, 'leasefence claim + release', plain),
        semaphore('redis-semaphore Mutex', plain),
        {
          name: 'redlock-universal',
          prepare: async (worker) => {
            const lock = createLock({ adapter, key: `bench:rlu:${workers}:${worker}`, ttl: TTL_MS });
            return async () => void (await lock.release(await lock.acquire()));
          },
        },
        {
          name: '@sesamecare-oss/redlock',
          prepare: async (worker) => async () => void (await (await redlock.acquire([`bench:srl:${workers}:${worker}`], TTL_MS)).release()),
        },
        {
          name: 'leasefence withLease((lease) => n)',
          baseline: 'leasefence claim + release',
          prepare: async (worker) => {
            const work = async (_lease: unknown): Promise<number> => worker; // NOTE: one parameter: no AbortSignal (see with-lease.ts runFn)
            return async () => {
              const outcome = await leases.withLease(`with:${worker}`, work);
              if (!outcome.ok) throw new Error(`withLease: ${outcome.reason}`);
            };
          },
        },
        raw('raw, enableAutoPipelining', pipelining, rawName),
        leasefence(mine, 'leasefence, enableAutoPipelining', pipelining, 'leasefence claim + release'),
        semaphore('redis-semaphore, enableAutoPipelining', pipelining, 'redis-semaphore Mutex'),
        ...(before === null ? [] : [leasefence(before, 'before: leasefence claim + release', plain, rawName)]),
      ] satisfies Contender[]
    ).map((contender) => ({ ...contender, serverCpuUs: () => redisCpuUs(clients.admin) })),
  };
}

/** The fenced write group: one SET under a lease, checked atomically. */
function writeGroup(clients: RedisClients, workers: number, mine: Library, before: Library | null): Group {
  const { plain } = clients;
  const fencedWrite = (name: string, library: Library): Contender => {
    const leases = library.createLeases(library.createRedisStore({ client: plain, prefix: `bench:fw:${workers}:${++preparation}:` }), {
      holder: 'bench',
      ttlMs: 600_000,
    });
    return {
      name,
      ...(library === mine ? {} : { baseline: 'raw check-and-SET script' }),
      prepare: async (worker) => {
        const key = `write:${worker}:${++preparation}`;
        const lease = await leases.claimOrThrow(key);
        const data = `${library.hashTagOf(key)}:data`;
        return async () => {
          const outcome = await leases.fencedWrite(lease, (tx) => tx.call('SET', data, 'x'));
          if (!outcome.ok) throw new Error('leasefence: fenced');
        };
      },
    };
  };
  const rawWrite = (name: string): Contender => ({
    name,
    prepare: async (worker) => {
      const sha = (await plain.script('LOAD', CHECK_AND_SET)) as string;
      const [lock, data, id] = [`bench:rawfw:{${name}:${worker}}:lock`, `bench:rawfw:{${name}:${worker}}:data`, randomUUID()];
      await plain.set(lock, id, 'PX', 600_000);
      return async () => {
        if ((await plain.evalsha(sha, 2, lock, data, id, 'x')) !== 'OK') throw new Error('raw: fenced');
      };
    },
  });
  return {
    title: 'Redis fenced write (one SET)',
    workers,
    contenders: (
      [
        rawWrite('raw check-and-SET script'),
        rawWrite('raw (control)'),
        fencedWrite('leasefence fencedWrite(one SET)', mine),
        ...(before === null ? [] : [fencedWrite('before: leasefence fencedWrite(one SET)', before)]),
      ] satisfies Contender[]
    ).map((contender) => ({ ...contender, serverCpuUs: () => redisCpuUs(clients.admin) })),
  };
}

/** Every Redis group, at 1 and `manyWorkers` workers (with BENCH_COMPARE's "before" rows). */
export async function redisGroups(clients: RedisClients, manyWorkers: number): Promise<Group[]> {
  const mine = redisPart(await thisLibrary()) as Library;
  const before = redisPart(await comparedLibrary());
  return [
    cycleGroup(clients, 1, mine, before),
    cycleGroup(clients, manyWorkers, mine, before),
    writeGroup(clients, 1, mine, before),
    writeGroup(clients, manyWorkers, mine, before),
  ];
}
