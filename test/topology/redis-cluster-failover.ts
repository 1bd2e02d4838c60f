/**
 * Cluster failover: the master of a key's slot is killed (SIGKILL) after its replica missed grants (the
 * replica frozen with SIGSTOP and its replication link cut with `CLIENT KILL TYPE replica`, so nothing
 * buffered reaches it); the other masters fail it over to that replica. Runs last in its file: the
 * killed master stays down.
 */
import { describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { freshPrefix } from '../adapters/redis-harness.js';
import type { RedisCluster } from '../support/redis-cluster.js';
import { openClusterClient } from './redis-cluster-harness.js';
import { failOver, heldBackReplicaRig } from './redis-failover-scenario.js';

export function describeClusterFailover(cluster: () => Promise<RedisCluster>): void {
  describe('redis cluster failover (ioredis Cluster)', () => {
    it('a master killed after its replica missed grants: the promoted replica grants a token above every token issued before (clock floor), and the stale holder is refused', async () => {
      const topology = await cluster();
      const prefix = freshPrefix('lf-cluster-failover');
      const key = 'failover:job';
      const master = await topology.masterOf(clusterSlot(keyNames(prefix).record(key, 'lease')));
      const [replica] = await topology.replicasOf(master.id);
      if (replica === undefined) throw new Error('the master has no replica');
      const { client, close } = await openClusterClient('ioredis', topology.seeds);
      const rig = heldBackReplicaRig(
        { client, store: createRedisStore({ client, prefix }), prefix },
        { admin: topology.admin(master.port), server: topology.server(master.port) },
        topology.server(replica.port),
      );
      try {
        const figures = await failOver(rig, key);
        console.info(`[topology] redis cluster failover: ${JSON.stringify(figures)}`);
        // NOTE: every running node must agree on the promotion before one of them is asked who serves the slot.
        await topology.waitUntilHealthy();
        expect((await topology.masterOf(clusterSlot(keyNames(prefix).record(key, 'lease')))).port).toBe(replica.port);
      } finally {
        rig.thaw();
        await close();
      }
    });
  });
}
