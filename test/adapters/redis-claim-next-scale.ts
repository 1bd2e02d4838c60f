/**
 * Hand-run probe (not a test): claim-next's server time against the size of the set, and against the raw
 * baseline of the design note (a ZPOPMIN-style script over one sorted set). For sets of 100, 10,000 and 100,000
 * items on a throwaway redis-server (no persistence): cycles of claim-next + release through the store, and of the
 * raw claim + release scripts; SLOWLOG (threshold 0) gives each script call's execution time in µs.
 *
 *   npx tsx test/adapters/redis-claim-next-scale.ts      (PROBE_N=2000 cycles per size)
 */
import { Redis } from 'ioredis';
import { createRedisStore, type RedisStore } from '../../src/adapters/redis/index.js';
import { CLAIM_NEXT_SCRIPT } from '../../src/adapters/redis/item-scripts.js';
import { defineScript } from '../../src/adapters/redis/runner.js';
import { RELEASE_SCRIPT } from '../../src/adapters/redis/scripts.js';
import { newSecret } from '../../src/secret.js';
import { startRedis } from '../support/redis-server.js';

const N = Number(process.env['PROBE_N'] ?? 2_000);
const SIZES = [100, 10_000, 100_000];

const RAW_CLAIM = `local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local next = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
if #next == 0 then return false end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), next[1])
return next[1]`;
const RAW_RELEASE = `local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], 'XX', t[1] * 1000 + math.floor(t[2] / 1000), ARGV[1])
return 1`;

type ItemStore = RedisStore & Required<Pick<RedisStore, 'addItems' | 'removeItems' | 'claimNext'>>;
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;

async function main(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const client = new Redis(server.url);
  const shas = {
    claimNext: defineScript('claim next', CLAIM_NEXT_SCRIPT).sha,
    release: defineScript('release', RELEASE_SCRIPT).sha,
    rawClaim: defineScript('raw claim', RAW_CLAIM).sha,
    rawRelease: defineScript('raw release', RAW_RELEASE).sha,
  };
  try {
    await client.call('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
    await client.call('CONFIG', 'SET', 'slowlog-max-len', String(N * 3 + 100));
    await client.call('SCRIPT', 'LOAD', RAW_CLAIM);
    await client.call('SCRIPT', 'LOAD', RAW_RELEASE);
    console.log(`SLOWLOG µs per call (server execution), ${N} cycles per size\n`);
    console.log(
      '| items in the set | claim-next median / mean | release median / mean | raw claim median / mean | raw release median / mean |',
    );
    console.log('|---:|---:|---:|---:|---:|');
    for (const size of SIZES) {
      const set = `s${size}`;
      const store = createRedisStore({ client, prefix: `probe${size}:` }) as ItemStore;
      const keys = Array.from({ length: size }, (_, index) => `{${set}}:${index}`);
      for (let at = 0; at < size; at += 1000) await store.addItems({ set, keys: keys.slice(at, at + 1000) });
      const rawSet = `raw{${set}}`;
      for (let at = 0; at < size; at += 1000) {
        const args: string[] = [];
        for (const key of keys.slice(at, at + 1000)) args.push('0', key);
        await client.call('ZADD', rawSet, ...args);
      }
      await client.call('SLOWLOG', 'RESET');
      for (let index = 0; index < N; index += 1) {
        const secret = newSecret();
        const outcome = await store.claimNext({
          set,
          holder: 'w',
          runId: null,
          secret,
          ttlMs: 60_000,
          attributes: {},
          onExpired: 'take-over',
        });
        if (!outcome.ok) throw new Error('probe: idle');
        await store.release({ fence: { key: outcome.key, token: outcome.token, secret, holder: 'w', runId: null } });
        const item = (await client.call('EVALSHA', shas.rawClaim, '1', rawSet, '60000')) as string;
        await client.call('EVALSHA', shas.rawRelease, '1', rawSet, item);
      }
      const entries = (await client.call('SLOWLOG', 'GET', String(N * 5))) as [number, number, number, string[]][];
      const by = new Map<string, number[]>();
      for (const [, , micros, args] of entries) {
        const name = Object.entries(shas).find(([, sha]) => args[1] === sha)?.[0];
        if (name !== undefined) by.set(name, [...(by.get(name) ?? []), micros]);
      }
      const cell = (name: string): string => {
        const values = by.get(name) ?? [];
        return `${median(values)} / ${mean(values).toFixed(1)}`;
      };
      console.log(`| ${size} | ${cell('claimNext')} | ${cell('release')} | ${cell('rawClaim')} | ${cell('rawRelease')} |`);
    }
  } finally {
    client.disconnect();
    await server.stop();
  }
}

await main();
