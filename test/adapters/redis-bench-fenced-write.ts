// Server time per fenced write: `npx tsx test/adapters/redis-bench-fenced-write.ts redis://127.0.0.1:PORT new|old [one]`, then INFO commandstats (cmdstat_evalsha usec_per_call). 'old' loads /tmp/old/src (e.g. `git archive <commit> src | tar -x -C /tmp/old`).
import { Redis } from 'ioredis';
const [url, which] = [process.argv[2]!, process.argv[3]!];
const base = which === 'old' ? '/tmp/old/src' : '../../src';
const { createLeases } = await import(`${base}/leases.js`);
const { createRedisStore, hashTagOf } = await import(`${base}/adapters/redis/index.js`);
const client = new Redis(url);
const leases = createLeases(createRedisStore({ client, prefix: `bench-${which}-${Date.now()}:` }), { holder: 'a', ttlMs: 600_000 });
const lease = await leases.claimOrThrow('job');
const two = process.argv[4] !== 'one';
const run = async (n: number) => {
  for (let i = 0; i < n; i += 1)
    await leases.fencedWriteOrThrow(lease, (tx: { call(...args: string[]): Promise<unknown> }) => {
      if (two) void tx.call('INCR', `${hashTagOf('job')}:n`);
      return tx.call('SET', `${hashTagOf('job')}:v`, String(i));
    });
};
await run(500);
const started = process.hrtime.bigint();
await run(5_000);
const ms = Number(process.hrtime.bigint() - started) / 1e6;
console.log(JSON.stringify({ which, fencedWrites: 5000, ms: Math.round(ms), perWriteUs: Math.round((ms * 1000) / 5000) }));
client.disconnect();
