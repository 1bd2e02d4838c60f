/**
 * Redis benchmark: acquire + release cycles per second for leasefence and its peers, on one ephemeral
 * redis-server (no persistence: this measures the libraries, not the disk) and one shared ioredis client.
 *
 *   npx tsx bench/redis.ts            (BENCH_MS=1500 per measurement, BENCH_ROUNDS=3, median reported)
 *
 * - sequential: one worker, acquire then release, again and again;
 * - 32 workers: 32 concurrent workers, each on its own key (no contention: retry policies play no part).
 * leasefence's cycle is `leases.claim` + `leases.release` through the public API (it also mints a fencing
 * token, records the holder and keeps the key's history, which no peer does). The raw baseline is
 * `SET key id NX PX` + a compare-and-delete script by EVALSHA.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { createLock, IoredisAdapter } from 'redlock-universal';
import { Redlock } from '@sesamecare-oss/redlock';
import { createLeases } from '../src/leases.js';
import { createRedisStore } from '../src/adapters/redis/index.js';
import { startRedis } from '../test/support/redis-server.js';

const MEASURE_MS = Number(process.env['BENCH_MS'] ?? 1_500);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const WORKERS = 32;
const TTL_MS = 30_000;

/** One library: `prepare(key)` returns the acquire+release cycle for that key (setup outside the timing). */
interface Contender {
  readonly name: string;
  prepare(key: string): () => Promise<void>;
}

const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

function contenders(client: Redis, compareAndDeleteSha: string): Contender[] {
  const leases = createLeases(createRedisStore({ client, prefix: 'bench:lf:' }), { holder: 'bench', ttlMs: TTL_MS });
  const redlock = new Redlock([client], { retryCount: 0 });
  const adapter = new IoredisAdapter(client);
  return [
    {
      name: 'raw SET NX PX + compare-and-delete',
      prepare: (key) => async () => {
        const id = randomUUID();
        if ((await client.set(`bench:raw:${key}`, id, 'PX', TTL_MS, 'NX')) !== 'OK') throw new Error('raw: not acquired');
        await client.evalsha(compareAndDeleteSha, 1, `bench:raw:${key}`, id);
      },
    },
    {
      name: 'leasefence (claim + release)',
      prepare: (key) => async () => {
        const claimed = await leases.claim(key);
        if (!claimed.ok) throw new Error('leasefence: not granted');
        await leases.release(claimed.lease);
      },
    },
    {
      name: 'redlock-universal',
      prepare: (key) => {
        const lock = createLock({ adapter, key: `bench:rlu:${key}`, ttl: TTL_MS });
        return async () => void (await lock.release(await lock.acquire()));
      },
    },
    {
      name: 'redis-semaphore (Mutex)',
      prepare: (key) => {
        const mutex = new Mutex(client, `bench:sem:${key}`, { lockTimeout: TTL_MS, refreshInterval: 0 });
        return async () => {
          await mutex.acquire();
          await mutex.release();
        };
      },
    },
    {
      name: '@sesamecare-oss/redlock',
      prepare: (key) => async () => void (await (await redlock.acquire([`bench:srl:${key}`], TTL_MS)).release()),
    },
  ];
}

/** Cycles per second of `workers` concurrent loops for `MEASURE_MS`. */
async function measure(contender: Contender, workers: number, round: number): Promise<number> {
  const cycles = Array.from({ length: workers }, (_, worker) => contender.prepare(`r${round}:w${worker}:${workers}`));
  const started = performance.now();
  const deadline = started + MEASURE_MS;
  let count = 0;
  await Promise.all(
    cycles.map(async (cycle) => {
      while (performance.now() < deadline) {
        await cycle();
        count += 1;
      }
    }),
  );
  return (count * 1_000) / (performance.now() - started);
}

/** Commands one cycle sends (client side), measured over a few cycles after a warm-up. */
async function commandsPerCycle(client: Redis, contender: Contender): Promise<number> {
  const cycle = contender.prepare('count');
  await cycle();
  const original = client.sendCommand.bind(client);
  let sent = 0;
  client.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    sent += 1;
    return original(...args);
  }) as Redis['sendCommand'];
  for (let i = 0; i < 10; i += 1) await cycle();
  client.sendCommand = original;
  return sent / 10;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const pad = (text: string, width: number, right = false): string => (right ? text.padStart(width) : text.padEnd(width));

async function main(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const client = new Redis(server.url);
  try {
    const sha = (await client.script('LOAD', COMPARE_AND_DELETE)) as string;
    const all = contenders(client, sha);
    const results = new Map<string, { sequential: number[]; concurrent: number[]; commands: number }>();
    for (const contender of all) results.set(contender.name, { sequential: [], concurrent: [], commands: await commandsPerCycle(client, contender) });
    // NOTE: a warm-up, then rounds that interleave the contenders, so drift (JIT, CPU heat) hits all alike.
    for (const contender of all) await measure(contender, WORKERS, -1);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const contender of all) {
        const entry = results.get(contender.name)!;
        entry.sequential.push(await measure(contender, 1, round));
        entry.concurrent.push(await measure(contender, WORKERS, round));
      }
    }
    const raw = results.get(all[0]!.name)!;
    const rawSequential = median(raw.sequential);
    const rawConcurrent = median(raw.concurrent);
    const info = (await client.info('server')).match(/redis_version:(\S+)/)?.[1] ?? '?';
    console.log(`redis-server ${info} (no persistence), node ${process.version}, ioredis, ${MEASURE_MS} ms x ${ROUNDS} rounds (median)\n`);
    console.log(`${pad('library', 36)} ${pad('cmds/cycle', 10, true)} ${pad('sequential/s', 13, true)} ${pad('vs raw', 7, true)} ${pad(`${WORKERS} workers/s`, 13, true)} ${pad('vs raw', 7, true)}`);
    for (const [name, entry] of results) {
      const sequential = median(entry.sequential);
      const concurrent = median(entry.concurrent);
      console.log(
        `${pad(name, 36)} ${pad(entry.commands.toFixed(1), 10, true)} ${pad(sequential.toFixed(0), 13, true)} ${pad((sequential / rawSequential).toFixed(2), 7, true)} ${pad(concurrent.toFixed(0), 13, true)} ${pad((concurrent / rawConcurrent).toFixed(2), 7, true)}`,
      );
    }
  } finally {
    client.disconnect();
    await server.stop();
  }
}

await main();
