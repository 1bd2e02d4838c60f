/**
 * A program that uses waiting claims the documented way, with a `subscriber` factory, and closes only its
 * own client at the end (docs/waiting.md): it must exit by itself. Run by redis-subscriber-factory.test.ts
 * as `tsx redis-subscriber-program.ts <ioredis|node-redis> <url> <prefix>`.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { createLeases } from '../../src/leases.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';

const [kind, url, prefix] = process.argv.slice(2) as [string, string, string];
let made = 0;

async function main(): Promise<{ close: () => unknown; store: ReturnType<typeof createRedisStore> }> {
  if (kind === 'node-redis') {
    const client = createClient({ url });
    await client.connect();
    return {
      close: () => client.close(),
      store: createRedisStore({
        client,
        prefix,
        subscriber: () => {
          made += 1;
          return client.duplicate().connect();
        },
      }),
    };
  }
  const client = new Redis(url);
  return {
    close: () => client.disconnect(),
    store: createRedisStore({
      client,
      prefix,
      subscriber: () => {
        made += 1;
        return client.duplicate();
      },
    }),
  };
}

const { close, store } = await main();
const worker1 = createLeases(store, { holder: 'worker-1', ttlMs: 60_000 });
const worker2 = createLeases(store, { holder: 'worker-2', ttlMs: 60_000 });
const held = await worker1.claimOrThrow('job:42');
const waiting = worker2.claim('job:42', { wait: { timeoutMs: 30_000 } });
await worker1.release(held);
const claimed = await waiting;
console.log(claimed.ok ? `granted to ${claimed.lease.holder}` : `still ${claimed.reason}`, `subscribers made: ${made}`);
if (claimed.ok) await worker2.release(claimed.lease);
await close();
