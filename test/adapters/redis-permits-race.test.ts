/**
 * Semaphores on real redis-server under concurrency (issue 25's race test): 8 clients (two of each client family,
 * each its own connection and store) make ~300 grants of one semaphore of limit 3 at once, writing (fenced) and
 * releasing or abandoning short-TTL grants (`redis-permits-racer.ts`). Never more than 3 live, tokens rising across
 * the semaphore, each permit's fenced writes in token order; the adapter's own check (the script did what the core
 * decides, same permit and token) ran on every acquire.
 */
import { describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { toConnection } from '../../src/adapters/redis/connection.js';
import { freshPrefix, openClient, sharedRedisUrl, type RedisClientKind } from './redis-harness.js';
import { racePermits, type PermitStore } from './redis-permits-racer.js';

const KINDS: readonly RedisClientKind[] = ['ioredis', 'node-redis', 'ioredis6', 'node-redis6'];

describe('semaphores on redis: 8 concurrent clients, limit 3', () => {
  it('never more than 3 live grants, tokens rising across the permits, fenced writes in token order', async () => {
    const url = await sharedRedisUrl();
    const prefix = freshPrefix('lf-permit-race');
    const clients = await Promise.all(
      Array.from({ length: 8 }, (_, index) => openClient(KINDS[index % KINDS.length] as RedisClientKind, url)),
    );
    try {
      const stores = clients.map(({ client }) => createRedisStore({ client, prefix }) as PermitStore);
      const raw = toConnection((clients[0] as (typeof clients)[number]).client);
      const run = await racePermits(stores, raw, { prefix, semaphore: 'race', limit: 3, total: 300 });
      expect(run.grants.length).toBeGreaterThanOrEqual(300);
      expect(run.abandoned).toBeGreaterThan(20);
      expect(run.writes).toBeGreaterThan(50);
      // NOTE: 8 acquirers over 3 permits: most attempts meet a full semaphore, which is the contention under test.
      expect(run.fulls).toBeGreaterThan(0);
    } finally {
      await Promise.all(clients.map(({ close }) => close()));
    }
  }, 120_000);
});
