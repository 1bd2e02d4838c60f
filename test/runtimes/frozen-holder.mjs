// A worker frozen between its claim and its write, as a serverless function is between two invocations: it
// claims `freeze:<first argument>` on the Redis at REDIS_URL with a 1 s TTL, prints `claimed <token>`, and
// writes under the fence once a line arrives on stdin (runtimes.test.ts stops it with SIGSTOP before, lets
// another worker take the key, and continues it). Prints the write's outcome as JSON.
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { createLeases } from 'leasefence';
import { createRedisStore, hashTagOf } from 'leasefence/redis';

const redis = new Redis(process.env.REDIS_URL);
try {
  const key = `freeze:${process.argv[2]}`;
  const leases = createLeases(createRedisStore({ client: redis }), { holder: 'frozen', ttlMs: 1_000 });
  const lease = await leases.claimOrThrow(key);
  console.log(`claimed ${lease.token}`);
  const lines = createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once('line', resolve));
  lines.close();
  const written = await leases.fencedWrite(lease, (tx) => {
    tx.call('SET', `${hashTagOf(key)}:value`, 'written by the frozen worker');
  });
  console.log(JSON.stringify(written.ok ? { ok: true } : { ok: false, reason: written.reason }));
} finally {
  redis.disconnect();
}
