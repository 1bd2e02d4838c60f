// The Redis quick start of docs/quick-starts.md on the runtime that runs this file, with the client the first
// argument names: `ioredis` or `node-redis` (redis v5), on the server at REDIS_URL, under the lease key
// `export:<second argument>`. Prints two JSON lines: what the fenced writes returned, and the fields written.
import { createLeases } from 'leasefence';
import { createRedisStore, hashTagOf } from 'leasefence/redis';

const url = process.env.REDIS_URL;
const [kind, name] = process.argv.slice(2);

/** A connected client, a read of a hash's fields, and how to close it. */
async function open() {
  if (kind === 'ioredis') {
    const { Redis } = await import('ioredis');
    const redis = new Redis(url);
    return { client: redis, fields: (key) => redis.hkeys(key), close: () => redis.disconnect() };
  }
  if (kind === 'node-redis') {
    const { createClient } = await import('redis');
    const redis = createClient({ url });
    redis.on('error', (error) => console.warn(`redis: ${error.message}`));
    await redis.connect();
    return { client: redis, fields: (key) => redis.hKeys(key), close: () => redis.destroy() };
  }
  throw new Error(`usage: quick-start-redis.mjs ioredis|node-redis <name> (got ${kind})`);
}

const { client, fields, close } = await open();
try {
  const store = createRedisStore({ client });
  const leases = createLeases(store, { holder: 'exporter-1', ttlMs: 30_000 });
  const leaseKey = `export:${name}`;
  const rowsKey = `${hashTagOf(leaseKey)}:rows`;

  const lease = await leases.claimOrThrow(leaseKey);
  const written = await leases.fencedWrite(lease, (tx) => {
    tx.call('HSET', rowsKey, 'batch 1', tx.token.toString());
  });
  await leases.release(lease);
  const late = await leases.fencedWrite(lease, (tx) => {
    tx.call('HSET', rowsKey, 'batch 2', tx.token.toString());
  });
  console.log(JSON.stringify([written.ok, late.ok ? 'written' : `refused: ${late.reason}`]));
  console.log(JSON.stringify(await fields(rowsKey)));
} finally {
  await close();
}
