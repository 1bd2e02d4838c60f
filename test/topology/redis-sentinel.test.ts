/**
 * leasefence behind Redis Sentinel (1 master, 1 replica, 3 Sentinels, started once for this file) with the
 * ioredis Sentinel client (`new Redis({ sentinels, name })`): the master is killed (SIGKILL) after its
 * replica missed grants, the Sentinels promote the replica, and the clock floor keeps tokens increasing.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeases } from '../../src/leases.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { freshPrefix } from '../adapters/redis-harness.js';
import { startRedisSentinel, type RedisSentinelSetup } from '../support/redis-sentinel.js';
import { failOver, heldBackReplicaRig } from './redis-failover-scenario.js';

describe('redis sentinel (ioredis)', () => {
  let setup: RedisSentinelSetup;
  let client: Redis;
  const prefix = freshPrefix('lf-sentinel');
  beforeAll(async () => {
    setup = await startRedisSentinel();
    client = new Redis({ sentinels: [...setup.sentinels], name: setup.name, lazyConnect: true });
    client.on('error', () => undefined);
    await client.connect();
  });
  afterAll(async () => {
    client?.disconnect();
    await setup?.stop();
  });

  it('leases work through the Sentinel client: claims, fenced writes, release', async () => {
    const leases = createLeases(createRedisStore({ client, prefix }), { holder: 'a', ttlMs: 60_000 });
    const lease = await leases.claimOrThrow('job:1');
    expect(await leases.fencedWrite(lease, (tx) => tx.call('INCR', `${prefix}{job:1}:n`))).toMatchObject({ ok: true, value: 1 });
    expect(await leases.release(lease)).toMatchObject({ ok: true });
  });

  it('the master killed after its replica missed grants: the promoted replica grants a token above every token issued before (clock floor), and the stale holder is refused', async () => {
    const masterPort = await setup.masterPort();
    const replica = setup.servers.find((server) => server.port !== masterPort);
    if (replica === undefined) throw new Error('no replica');
    const rig = heldBackReplicaRig(
      { client, store: createRedisStore({ client, prefix }), prefix },
      { admin: setup.admin(masterPort), server: setup.server(masterPort) },
      replica,
    );
    try {
      const figures = await failOver(rig, 'failover:job');
      console.info(`[topology] redis sentinel failover: ${JSON.stringify(figures)}`);
      // NOTE: the client was already granted by the promoted replica; a Sentinel that did not vote may
      // answer with the old master for a moment after the failover, so wait for the Sentinels to agree.
      const agreedAt = performance.now();
      while ((await setup.masterPort()) !== replica.port && performance.now() - agreedAt < 30_000)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await setup.masterPort()).toBe(replica.port);
    } finally {
      rig.thaw();
    }
  });
});
