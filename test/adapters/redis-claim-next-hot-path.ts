/**
 * Hand-run probe (not a test): what claim-next's index costs the hot path of a key that is no item, on the server.
 * The claim, renew and release scripts as they are, against the same scripts without the index (built here by text
 * edits: the lease read back to one HGET, the `item` field left out of the claim's HMGET, no REINDEX/GRANTED_ITEM),
 * sent alternately in rounds with the same arguments to a throwaway redis-server (no persistence); SLOWLOG
 * (threshold 0) gives each call's execution time in µs.
 *
 *   npx tsx test/adapters/redis-claim-next-hot-path.ts      (PROBE_N=2000 calls per script per round, PROBE_ROUNDS=7)
 */
import { Redis } from 'ioredis';
import { GRANTED_ITEM, REINDEX } from '../../src/adapters/redis/item-index.js';
import { claimArgs, fenceArgs } from '../../src/adapters/redis/record.js';
import { defineScript, type Script } from '../../src/adapters/redis/runner.js';
import { CLAIM_SCRIPT, RELEASE_SCRIPT, RENEW_SCRIPT } from '../../src/adapters/redis/scripts.js';
import { newSecret } from '../../src/secret.js';
import { startRedis } from '../support/redis-server.js';

const N = Number(process.env['PROBE_N'] ?? 2_000);
const ROUNDS = Number(process.env['PROBE_ROUNDS'] ?? 7);

/** Replaces `from` by `to` in `text`, which must contain it. */
function edit(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`probe: the script no longer contains ${JSON.stringify(from.slice(0, 60))}`);
  return text.split(from).join(to);
}

const FENCED_READ_NEW = "local read = redis.call('HMGET', KEYS[1], 'lease', 'item')\nlocal lease, item = read[1], read[2]";
const FENCED_READ_OLD = "local lease = redis.call('HGET', KEYS[1], 'lease')";
const withoutIndex = (text: string): string => edit(edit(text, FENCED_READ_NEW, FENCED_READ_OLD), REINDEX('KEYS[1]', 'item'), '');
const claimWithoutIndex = (): string => {
  let text = edit(CLAIM_SCRIPT, GRANTED_ITEM('KEYS[1]', 'read[5]'), '');
  text = edit(text, "'hold', 'item')", "'hold')");
  text = edit(text, "'hold', 'item', 'floor')", "'hold', 'floor')");
  return edit(text, 'local hold, floor = read[4], read[6]', 'local hold, floor = read[4], read[5]');
};

const scripts = {
  claim: { now: defineScript('claim', CLAIM_SCRIPT), before: defineScript('claim before', claimWithoutIndex()) },
  renew: { now: defineScript('renew', RENEW_SCRIPT), before: defineScript('renew before', withoutIndex(RENEW_SCRIPT)) },
  release: { now: defineScript('release', RELEASE_SCRIPT), before: defineScript('release before', withoutIndex(RELEASE_SCRIPT)) },
};

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;

async function main(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const client = new Redis(server.url);
  try {
    await client.call('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
    await client.call('CONFIG', 'SET', 'slowlog-max-len', String(N * 4 + 100));
    for (const pair of Object.values(scripts))
      for (const script of [pair.now, pair.before]) await client.call('SCRIPT', 'LOAD', script.source);
    const times = new Map<string, number[]>();
    const send = (script: Script, key: string, args: readonly string[]) => client.call('EVALSHA', script.sha, '1', key, ...args);
    /** One batch: `N` cycles of claim, renew, release of a plain key, `variant`'s scripts; server µs per call by script. */
    const batch = async (variant: 'now' | 'before'): Promise<void> => {
      await client.call('SLOWLOG', 'RESET');
      const key = `leasefence:{plain-${variant}}:lease`;
      for (let index = 0; index < N; index += 1) {
        const secret = newSecret();
        const reply = await send(scripts.claim[variant], key, claimArgs(secret, 'w', null, 60_000, {}, false));
        const status = (typeof reply === 'string' ? reply : (reply as string[])[0]) as string;
        if (status[0] !== '+') throw new Error(`probe: claim refused ${JSON.stringify(reply)}`);
        const token = await client.hget(key, 'lease').then((lease) => (lease as string).split('\u0000')[0] as string);
        const fence = { key: 'x', token: BigInt(token), secret, holder: 'w', runId: null };
        await send(scripts.renew[variant], key, fenceArgs(fence, ['60000']));
        await send(scripts.release[variant], key, fenceArgs(fence));
      }
      const entries = (await client.call('SLOWLOG', 'GET', String(N * 4 + 100))) as [number, number, number, string[]][];
      for (const [, , micros, args] of entries) {
        const sha = args[1];
        for (const [name, pair] of Object.entries(scripts)) {
          if (sha !== pair[variant].sha) continue;
          const label = `${name} ${variant}`;
          times.set(label, [...(times.get(label) ?? []), micros]);
        }
      }
    };
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const variant of round % 2 === 0 ? (['now', 'before'] as const) : (['before', 'now'] as const)) await batch(variant);
    }
    console.log(`redis-server (test/support), ${ROUNDS} rounds × ${N} cycles, alternating; SLOWLOG µs per call (server execution)\n`);
    console.log('| script | before (no index) median / mean | now median / mean | mean change |');
    console.log('|---|---:|---:|---:|');
    for (const name of Object.keys(scripts)) {
      const before = times.get(`${name} before`) ?? [];
      const now = times.get(`${name} now`) ?? [];
      const change = ((mean(now) - mean(before)) / mean(before)) * 100;
      console.log(
        `| ${name} | ${median(before)} / ${mean(before).toFixed(2)} | ${median(now)} / ${mean(now).toFixed(2)} | ${change >= 0 ? '+' : ''}${change.toFixed(1)}% |`,
      );
    }
  } finally {
    client.disconnect();
    await server.stop();
  }
}

await main();
