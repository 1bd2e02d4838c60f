/**
 * A wake-up is a hint (issue 29 item 2): PostgreSQL's NOTIFY needs no privilege on the lease table and
 * Redis pub/sub none on its keys, so anyone able to notify could make every waiter claim at once, again and
 * again (seen: 2,000 NOTIFYs made one waiter send 110 claim statements in a second). At most one attempt per
 * `WAKE_INTERVAL_MS` answers wake-ups, per key and `Leases` instance, and the last wake-up is never lost.
 *
 * On real servers, from a separate connection: 2,000 notifications on a held key's channel (pg_notify with
 * the key as payload; SPUBLISH on the lease's freed channel) while one waiter waits, counting the claims
 * its store receives; then a genuine release in the middle of another flood, which must still grant the
 * waiter within `WAKE_INTERVAL_MS` plus a round trip (bounded here by WAKE_INTERVAL_MS + 500 ms of slack
 * for a loaded machine).
 */
import { PGlite } from '@electric-sql/pglite';
import { Redis } from 'ioredis';
import pg from 'pg';
import postgres from 'postgres';
import { createClient } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { freedChannelOf } from '../../src/adapters/postgres/freed-channel.js';
import { tableName } from '../../src/adapters/postgres/identifier.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { WAKE_BURST, WAKE_INTERVAL_MS } from '../../src/waiting/schedule.js';
import { freshTable, sharedPostgresUrl } from '../adapters/postgres-harness.js';
import { freshPrefix, openClient, sharedRedisUrl } from '../adapters/redis-harness.js';
import { countingStore, until } from '../waiting/support/counting-store.js';

const FLOOD = 2_000;
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Sends `count` notifications for the waited key, one after the other, from a connection of its own. */
type Flood = (count: number) => Promise<void>;

async function expectFloodBounded(store: Store, flood: Flood, label: string): Promise<void> {
  const key = 'job:flooded';
  const holder = createLeases(store, { holder: 'holder', ttlMs: 60_000 });
  const lease = await holder.claimOrThrow(key);
  const counting = countingStore(store);
  const waiter = createLeases(counting.store, { holder: 'waiter', ttlMs: 60_000 });
  const waiting = waiter.claim(key, { wait: { timeoutMs: 30_000 } });
  await until(() => counting.claims() === 1 && counting.claimsInFlight() === 0, 'the first refused claim');

  const before = counting.claims();
  const started = performance.now();
  await flood(FLOOD);
  // NOTE: the last notifications are delivered, and a wake-up they left pending answered, within an interval.
  await new Promise((resolve) => setTimeout(resolve, 2 * WAKE_INTERVAL_MS));
  await until(() => counting.claimsInFlight() === 0, 'no claim in flight');
  const elapsed = performance.now() - started;
  const claims = counting.claims() - before;
  const bound = Math.ceil(elapsed / WAKE_INTERVAL_MS) + WAKE_BURST + 1;
  console.log(
    `${label}: ${FLOOD} notifications in ${elapsed.toFixed(0)} ms -> ${claims} claims (bound ${bound}); ${counting.delivered()} delivered`,
  );
  expect(claims).toBeGreaterThan(0);
  expect(claims).toBeLessThanOrEqual(bound);

  // A genuine release during another flood still grants the waiter within an interval and a round trip.
  const flooding = flood(FLOOD / 2);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const releasedAt = performance.now();
  expect((await holder.release(lease)).ok).toBe(true);
  const releaseMs = performance.now() - releasedAt;
  const granted = await waiting;
  const latency = performance.now() - releasedAt;
  await flooding;
  console.log(
    `${label}: a release during a flood granted the waiter ${latency.toFixed(1)} ms after it was sent (the release itself took ${releaseMs.toFixed(1)} ms)`,
  );
  expect(granted.ok).toBe(true);
  expect(latency).toBeLessThan(WAKE_INTERVAL_MS + 500);
  if (granted.ok) await waiter.release(granted.lease);
}

describe('a flood of forged wake-ups costs at most one claim per key per interval', () => {
  it('PostgreSQL (pg listener): 2,000 pg_notify from another connection', async () => {
    const url = await sharedPostgresUrl();
    const table = freshTable('flood');
    const pool = new pg.Pool({ connectionString: url, max: 3 });
    const notifier = new pg.Client({ connectionString: url });
    await notifier.connect();
    cleanups.push(
      () => pool.end(),
      () => notifier.end(),
    );
    const listener = async (): Promise<pg.Client> => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return client;
    };
    const store = createPostgresStore({ client: pool, table, listener });
    await store.migrate();
    const channel = freedChannelOf(tableName(table));
    const flood: Flood = async (count) => {
      for (let index = 0; index < count; index += 1) await notifier.query('SELECT pg_catalog.pg_notify($1, $2)', [channel, 'job:flooded']);
    };
    await expectFloodBounded(store, flood, 'PostgreSQL (pg)');
  });

  it('PostgreSQL (postgres.js listener): 2,000 pg_notify from another connection', async () => {
    const url = await sharedPostgresUrl();
    const table = freshTable('flood');
    const pool = new pg.Pool({ connectionString: url, max: 3 });
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    const notifier = new pg.Client({ connectionString: url });
    await notifier.connect();
    cleanups.push(
      () => pool.end(),
      () => sql.end({ timeout: 1 }),
      () => notifier.end(),
    );
    const store = createPostgresStore({ client: pool, table, listener: sql });
    await store.migrate();
    const channel = freedChannelOf(tableName(table));
    const flood: Flood = async (count) => {
      for (let index = 0; index < count; index += 1) await notifier.query('SELECT pg_catalog.pg_notify($1, $2)', [channel, 'job:flooded']);
    };
    await expectFloodBounded(store, flood, 'PostgreSQL (postgres.js)');
  });

  it('PGlite: 2,000 pg_notify on its one connection', async () => {
    const db = await PGlite.create();
    cleanups.push(() => db.close());
    const table = freshTable('flood');
    const store = createPostgresStore({ client: db, table, listener: db });
    await store.migrate();
    const channel = freedChannelOf(tableName(table));
    const flood: Flood = async (count) => {
      for (let index = 0; index < count; index += 1) await db.query('SELECT pg_catalog.pg_notify($1, $2)', [channel, 'job:flooded']);
    };
    await expectFloodBounded(store, flood, 'PGlite');
  });

  it('Redis (node-redis subscriber): 2,000 SPUBLISH from another connection', async () => {
    const url = await sharedRedisUrl();
    const prefix = freshPrefix('flood');
    const { client, close } = await openClient('node-redis', url);
    const subscriber = createClient({ url });
    subscriber.on('error', () => undefined);
    await subscriber.connect();
    const notifier = new Redis(url);
    cleanups.push(
      close,
      async () => subscriber.close(),
      async () => notifier.disconnect(),
    );
    const store = createRedisStore({ client, subscriber, prefix });
    const channel = `${keyNames(prefix).record('job:flooded', 'lease')}:freed`;
    const flood: Flood = async (count) => {
      for (let index = 0; index < count; index += 1) await notifier.call('SPUBLISH', channel, 'x');
    };
    await expectFloodBounded(store, flood, 'Redis (node-redis)');
  });

  it('Redis (ioredis subscriber): 2,000 SPUBLISH from another connection', async () => {
    const url = await sharedRedisUrl();
    const prefix = freshPrefix('flood');
    const client = new Redis(url);
    const subscriber = client.duplicate({ lazyConnect: true });
    await subscriber.connect();
    const notifier = new Redis(url);
    cleanups.push(
      async () => client.disconnect(),
      async () => subscriber.disconnect(),
      async () => notifier.disconnect(),
    );
    const store = createRedisStore({ client, subscriber, prefix });
    const channel = `${keyNames(prefix).record('job:flooded', 'lease')}:freed`;
    const flood: Flood = async (count) => {
      for (let index = 0; index < count; index += 1) await notifier.call('SPUBLISH', channel, 'x');
    };
    await expectFloodBounded(store, flood, 'Redis (ioredis)');
  });
});
