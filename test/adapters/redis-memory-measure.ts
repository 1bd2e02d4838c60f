// Measures keys and memory that fenced writes leave: `npx tsx test/adapters/redis-memory-measure.ts redis://127.0.0.1:PORT` against a disposable server (it runs FLUSHALL).
import { Redis } from 'ioredis';
import { createLeases } from '../../src/leases.js';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
const url = process.argv[2]!;
const admin = new Redis(url);
await admin.flushall();
const info = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
const base = await info();
const leases = createLeases(createRedisStore({ client: admin }), { holder: 'a', ttlMs: 600_000 });
const keys = Array.from({ length: 100 }, (_, i) => `job:${i}`);
const held = await Promise.all(keys.map((k) => leases.claimOrThrow(k)));
for (let i = 0; i < 10_000; i += 1) {
  const lease = held[i % held.length]!;
  await leases.fencedWriteOrThrow(lease, (tx) => tx.call('INCR', `${hashTagOf(lease.key)}:n`));
}
console.log(
  JSON.stringify({ fencedWrites: 10_000, leases: keys.length, dbsize: await admin.dbsize(), usedMemoryDelta: (await info()) - base }),
);
admin.disconnect();
