/**
 * What the pieces of leasefence's Redis scripts cost inside the server (issue 12, round four): each piece of
 * Lua runs N times in a loop inside one script, timed by `TIME` before and after the loop, minus the empty
 * loop, so that the script's call overhead and the network are out of the figure. Each piece runs with
 * SLOWLOG off and with SLOWLOG at threshold 0 (as `redis-guarantees.ts` runs it), which also logs every
 * command a script runs: the difference is what that measurement adds per `redis.call`.
 *
 *   npx tsx bench/redis-lua-costs.ts        (BENCH_ROUNDS=9 rounds, median; N=20000)
 *
 * Pairs compare the way the scripts were written (round three) with the way they are written now.
 */
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis-server.js';

const N = 20_000;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 9);

/** The pieces: the name, then Lua run N times with `L` (a lease field), `P` (its fence prefix), `C` (a clock) and `MEMOS` (a full index). */
const PIECES: [string, string][] = [
  ['redis.call TIME', "local t = redis.call('TIME')"],
  ['redis.call HGET lease', "local x = redis.call('HGET', KEYS[1], 'lease')"],
  ['redis.call HMGET lease (one field)', "local x = redis.call('HMGET', KEYS[1], 'lease')"],
  [
    'redis.call HMGET lease ending checkpoint recovery',
    "local x = redis.call('HMGET', KEYS[1], 'lease', 'ending', 'checkpoint', 'recovery')",
  ],
  ['redis.call HSET lease ending', "redis.call('HSET', KEYS[1], 'lease', C, 'ending', 'released\\0' .. C)"],
  ['redis.call SPUBLISH', "redis.call('SPUBLISH', KEYS[1] .. ':freed', 'released')"],
  ['redis.call HDEL (one absent field)', "redis.call('HDEL', KEYS[1], 'm:absent')"],
  ['redis.sha1hex(secret)', 'local h = redis.sha1hex(ARGV[1])'],
  [
    'the clock from TIME parts (CLOCK)',
    "local clock = T[1] .. string.sub('00000', #T[2]) .. T[2]\nlocal now_ms = string.sub(clock, 1, -4)\nlocal now = tonumber(now_ms)",
  ],
  ['fence prefix: string.sub(L, 1, #P) == P', 'local ok = string.sub(L, 1, #P) == P'],
  ['fence prefix: string.find(L, P, 1, true) == 1', 'local ok = string.find(L, P, 1, true) == 1'],
  ["expires: (now + ttl) .. ''", "local x = (1796093210433 + ARGV[2]) .. ''"],
  ["expires: string.format('%d', now + ttl)", "local x = string.format('%d', 1796093210433 + ARGV[2])"],
  ["memo stamp: string.format('%015.0f', now)", "local x = string.format('%015.0f', 1796093210433)"],
  ["memo stamp: string.sub('000000000000000', #now_ms + 1) .. now_ms", "local x = string.sub('000000000000000', #M + 1) .. M"],
  ['token floor: tonumber(token) + 1 > tonumber(clock)', 'local b = tonumber(C) + 1 > tonumber(C)'],
  ['memo: cmsgpack.pack of a fenced write reply', "local m = cmsgpack.pack({'+' .. C, {{ok = 'OK'}}, 0, '', 1})"],
  ['memo: the new index (376 bytes)', "local x = string.sub(MEMOS, 48) .. 'ffffffffffffffffffffffffffffffff' .. '00' .. M"],
  ['a table of five', "local s = {'-' .. C, L, L, false, false}"],
];

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;

async function main(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const client = new Redis(server.url);
  try {
    const prefix = `1796093210433880\u0000#${'a'.repeat(40)}\u0000bench\u0000\u0000`;
    const lease = `${prefix}1796093810433\u00001796093210433\u0000`;
    await client.hset('{k}', 'lease', lease, 'ending', 'released');
    const args = ['x'.repeat(43), '600000', lease, prefix];
    const setup =
      "local L, P, C, M = ARGV[3], ARGV[4], '1796093210433880', '1796093210433'\nlocal T = {'1796093210', '433880'}\nlocal MEMOS = string.rep('abcdefabcdefabcdefabcdefabcdefab001796093210433', 8)\n";
    const time = (body: string): string =>
      `${setup}local t0 = redis.call('TIME')\nfor i = 1, ${N} do\n${body}\nend\nlocal t1 = redis.call('TIME')\nreturn (t1[1] - t0[1]) * 1000000 + (t1[2] - t0[2])`;
    const empty = (await client.script('LOAD', time(''))) as string;
    const shas = await Promise.all(PIECES.map(async ([, body]) => (await client.script('LOAD', time(body))) as string));
    const ns: Record<string, number[]> = {};
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const slowlog of ['-1', '0']) {
        await client.config('SET', 'slowlog-log-slower-than', slowlog);
        const base = Number(await client.evalsha(empty, 1, '{k}', ...args));
        for (const [index, [name]] of PIECES.entries()) {
          const us = Number(await client.evalsha(shas[index] ?? '', 1, '{k}', ...args));
          const piece = `${slowlog} ${name}`;
          const samples = ns[piece] ?? [];
          samples.push(((us - base) * 1000) / N);
          ns[piece] = samples;
        }
      }
    }
    console.log(
      `redis-server ${/redis_version:(\S+)/.exec(await client.info('server'))?.[1] ?? '?'}; ${ROUNDS} rounds of ${N} runs per piece, median\n`,
    );
    console.log('| piece | ns per run | with SLOWLOG at 0 |');
    console.log('|---|---:|---:|');
    for (const [name] of PIECES)
      console.log(`| ${name} | ${median(ns[`-1 ${name}`] ?? []).toFixed(0)} | ${median(ns[`0 ${name}`] ?? []).toFixed(0)} |`);
  } finally {
    client.disconnect();
    await server.stop();
  }
}

await main();
