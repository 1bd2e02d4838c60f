/**
 * leasefence's own JS per Redis operation, without I/O: the store and the shell on a connection that
 * answers each script from a reply recorded against a real redis-server, so validation, arguments,
 * parsing, the pure core and the handle run as they do against Redis (issue 12, round three).
 *
 *   npx tsx bench/redis-client-js.ts                               (this checkout's src/)
 *   BENCH_SRC=/tmp/before/src npx tsx bench/redis-client-js.ts     (another checkout's)
 *
 * One checkout per process: two copies of the library in one process share the engine's inline caches
 * for builtins (promises, arrays) and measured up to 1.5 µs apart on identical code. Compare checkouts by
 * alternating processes (docs/history/benchmarks.md, "Redis, round three", "The client: leasefence's own JS,
 * and what the rest is", has the loop used).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import type * as RedisAdapter from '../src/adapters/redis/index.js';
import type * as Leases from '../src/leases.js';
import { startRedis } from '../test/support/redis-server.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 24);
const BLOCK = Number(process.env['BENCH_BLOCK'] ?? 5_000);
const root = resolve(process.env['BENCH_SRC'] ?? new URL('../src', import.meta.url).pathname);
const redis = (await import(pathToFileURL(`${root}/adapters/redis/index.ts`).href)) as typeof RedisAdapter;
const { createLeases } = (await import(pathToFileURL(`${root}/leases.ts`).href)) as typeof Leases;

type Connection = RedisAdapter.RedisConnection;

const server = await startRedis({ persistence: 'none' });
const client = new Redis(server.url);
const replies = new Map<string, unknown>();
try {
  const real = redis.fromIoredis(client);
  const recording: Connection = {
    send: async (args) => {
      const reply = await real.send(args);
      replies.set(String(args[1]), reply);
      return reply;
    },
  };
  const recorded = createLeases(redis.createRedisStore({ client: recording, prefix: 'js:' }), { holder: 'bench', ttlMs: 600_000 });
  // NOTE: the first call of each script loads it (NOSCRIPT, then EVAL); the second records its EVALSHA reply.
  const held = await recorded.claimOrThrow('w');
  for (let i = 0; i < 2; i += 1) await recorded.fencedWrite(held, (tx) => tx.call('SET', `${redis.hashTagOf('w')}:d`, 'x'));
  for (let i = 0; i < 2; i += 1) await recorded.release(await recorded.claimOrThrow('k'));
} finally {
  client.disconnect();
  await server.stop();
}

const canned: Connection = { send: async (args) => replies.get(String(args[1])) };
const leases = createLeases(redis.createRedisStore({ client: canned, prefix: 'js:' }), { holder: 'bench', ttlMs: 600_000 });
const lease = await leases.claimOrThrow('k');
const data = `${redis.hashTagOf('k')}:d`;
const rows: [string, () => Promise<unknown>][] = [
  ['claim + release', async () => leases.release(await leases.claimOrThrow('k'))],
  ['fencedWrite(one SET)', () => leases.fencedWrite(lease, (tx) => tx.call('SET', data, 'x'))],
];
const samples = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round += 1) {
  for (let r = 0; r < rows.length; r += 1) {
    const [name, operation] = rows[(r + round) % rows.length]!;
    const before = process.cpuUsage();
    for (let i = 0; i < BLOCK; i += 1) await operation();
    const used = process.cpuUsage(before);
    // NOTE: the first rounds warm the JIT up.
    if (round >= 4) samples.set(name, [...(samples.get(name) ?? []), (used.user + used.system) / BLOCK]);
  }
}
for (const [name, values] of samples) {
  const sorted = values.sort((a, b) => a - b);
  console.log(
    `${root}: ${name}: ${sorted[sorted.length >> 1]!.toFixed(2)} µs CPU per operation (median of ${sorted.length} blocks of ${BLOCK})`,
  );
}
